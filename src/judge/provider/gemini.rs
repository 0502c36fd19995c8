//! Google Gemini: `POST {base_url}/v1/models/{model}:generateContent` (the
//! REST version the current SDK defaults to),
//! `x-goog-api-key`, `responseMimeType` and an OpenAPI-style
//! `responseSchema`.

use serde_json::{Value, json};

use super::{Reply, Unusable, Usage, u, verdict_schema};
use crate::judge::config::JudgeConfig;
use crate::prompt::Prompt;

/// Gemini's `responseSchema` is an OpenAPI subset: upper-case types, no
/// `additionalProperties`, and `propertyOrdering` to fix the field order
/// (taken from `required`, which lists them in the order we want).
fn gemini_schema(schema: &Value) -> Value {
    let Value::Object(map) = schema else { return schema.clone() };
    let mut out = serde_json::Map::new();
    for (k, v) in map {
        match (k.as_str(), v) {
            ("additionalProperties", _) => {}
            ("type", Value::String(t)) => {
                out.insert(k.clone(), Value::String(t.to_uppercase()));
            }
            ("properties", Value::Object(props)) => {
                out.insert(
                    k.clone(),
                    Value::Object(
                        props.iter().map(|(p, s)| (p.clone(), gemini_schema(s))).collect(),
                    ),
                );
            }
            _ => {
                out.insert(k.clone(), gemini_schema(v));
            }
        }
    }
    if let (Some(Value::Object(_)), Some(required)) = (map.get("properties"), map.get("required")) {
        out.insert("propertyOrdering".into(), required.clone());
    }
    Value::Object(out)
}

/// The `GenerateContentRequest` body (also a batch item's `request`).
pub(crate) fn body(judge: &JudgeConfig, prompt: &Prompt) -> Value {
    let mut generation = json!({
        "maxOutputTokens": judge.max_output_tokens,
        "responseMimeType": "application/json",
        "responseSchema": gemini_schema(&verdict_schema())
    });
    if let Some(t) = judge.temperature {
        generation["temperature"] = json!(t);
    }
    json!({
        "systemInstruction": {"parts": [{"text": prompt.system}]},
        "contents": [{"role": "user", "parts": [{"text": prompt.user_prefix}, {"text": prompt.user_rubrics}]}],
        "generationConfig": generation
    })
}

/// The headers every request to the API carries.
pub(super) fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
    key.map(|k| vec![("x-goog-api-key", k.to_string())]).unwrap_or_default()
}

pub(super) fn request(
    judge: &JudgeConfig,
    key: Option<&str>,
    prompt: &Prompt,
) -> (String, Vec<(&'static str, String)>, Value) {
    let headers = headers(key);
    (
        format!("{}/v1/models/{}:generateContent", judge.base_url, judge.model),
        headers,
        body(judge, prompt),
    )
}

pub(crate) fn parse(v: &Value) -> Result<Reply, Unusable> {
    let usage = Usage {
        input: u(v, "/usageMetadata/promptTokenCount"),
        output: u(v, "/usageMetadata/candidatesTokenCount")
            + u(v, "/usageMetadata/thoughtsTokenCount"),
        cached: u(v, "/usageMetadata/cachedContentTokenCount"),
        cache_write: 0,
    };
    if let Some(reason) = v.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
        return Ok(Reply::Declined { reason: format!("prompt blocked ({reason})"), usage });
    }
    let Some(candidate) = v.pointer("/candidates/0") else {
        // Transient on Gemini's side: a failed attempt, retried (and an
        // abstention with this reason if it persists), never cached.
        return Err(Unusable::new("no candidates returned", usage));
    };
    let finish = candidate.get("finishReason").and_then(Value::as_str).unwrap_or("");
    if finish == "MAX_TOKENS" {
        return Err(Unusable::new(
            "truncated: the reply reached max_output_tokens (finishReason MAX_TOKENS)",
            usage,
        ));
    }
    let text: String = candidate
        .pointer("/content/parts")
        .and_then(Value::as_array)
        .map(|parts| {
            let answer =
                parts.iter().filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true));
            answer.filter_map(|p| p.get("text").and_then(Value::as_str)).collect()
        })
        .unwrap_or_default();
    if !text.trim().is_empty() {
        return Ok(Reply::Text { text, usage });
    }
    match finish {
        "SAFETY" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "RECITATION" | "MODEL_ARMOR"
        | "IMAGE_SAFETY" => {
            Ok(Reply::Declined { reason: format!("candidate blocked ({finish})"), usage })
        }
        _ => Err(Unusable::new(format!("empty candidate (finishReason {finish:?})"), usage)),
    }
}

/// google.rpc reasons and statuses for a bad key, no access or no model:
/// Gemini answers a bad key with 400 `API_KEY_INVALID`.
pub(super) fn judge_down(v: &Value) -> bool {
    let status = v.pointer("/error/status").and_then(Value::as_str).unwrap_or("");
    let reasons = v
        .pointer("/error/details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| d.get("reason")?.as_str());
    let bad_reason = reasons.into_iter().any(|r| {
        r.starts_with("API_KEY_")
            || matches!(
                r,
                "SERVICE_DISABLED"
                    | "CONSUMER_SUSPENDED"
                    | "BILLING_DISABLED"
                    | "ACCESS_TOKEN_EXPIRED"
                    | "ACCESS_TOKEN_TYPE_UNSUPPORTED"
            )
    });
    let unsupported = v
        .pointer("/error/message")
        .and_then(Value::as_str)
        .is_some_and(|m| m.contains("location is not supported"));
    bad_reason
        || unsupported
        || matches!(status, "UNAUTHENTICATED" | "PERMISSION_DENIED" | "NOT_FOUND")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> Result<Reply, Unusable> {
        parse(&serde_json::from_str(s).unwrap_or_default())
    }

    #[test]
    fn thoughts_are_skipped_and_counted() {
        let r = parsed(
            r#"{"candidates":[{"content":{"parts":[{"text":"thinking","thought":true},{"text":"{\"verdicts\":[]}"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4200,"candidatesTokenCount":20,"cachedContentTokenCount":4096,"thoughtsTokenCount":50}}"#,
        );
        assert_eq!(
            r,
            Ok(Reply::Text {
                text: r#"{"verdicts":[]}"#.into(),
                usage: Usage { input: 4200, output: 70, cached: 4096, cache_write: 0 }
            })
        );
    }

    #[test]
    fn blocks_truncation_and_empty_candidates() {
        assert!(
            matches!(parsed(r#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":12}}"#), Ok(Reply::Declined { reason, .. }) if reason == "prompt blocked (SAFETY)")
        );
        assert!(
            matches!(parsed(r#"{"candidates":[{"content":{"role":"model"},"finishReason":"SAFETY"}]}"#), Ok(Reply::Declined { reason, .. }) if reason == "candidate blocked (SAFETY)")
        );
        let cut = parsed(
            r#"{"candidates":[{"content":{"parts":[{"text":"{\"verdicts\":["}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":8192}}"#,
        );
        let e = cut.err().map(|e| (e.message, e.usage.output)).unwrap_or_default();
        assert!(e.0.starts_with("truncated") && e.1 == 8192, "{e:?}");
        let empty = parsed(r#"{"usageMetadata":{"promptTokenCount":900}}"#);
        assert_eq!(
            empty.err().map(|e| e.usage.input),
            Some(900),
            "an empty reply's prompt tokens are billed"
        );
    }

    #[test]
    fn the_schema_is_the_verdict_schema_in_openapi_form() {
        let g = gemini_schema(&verdict_schema());
        assert_eq!(g["type"], "OBJECT");
        assert_eq!(g["propertyOrdering"], json!(["verdicts"]));
        let item = &g["properties"]["verdicts"]["items"];
        assert_eq!(
            item["properties"]["verdict"],
            json!({"type": "STRING", "enum": ["PASS", "FAIL"]})
        );
        assert!(!g.to_string().contains("additionalProperties"));
    }
}
