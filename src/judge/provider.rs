//! Each provider's wire format: how a prompt becomes an HTTP request and how
//! a response body becomes reply text, usage and abstentions.
//!
//! Ground truth is the current official SDKs (openai, anthropic,
//! google-genai on PyPI): OpenAI `POST {base}/chat/completions` with
//! `Authorization: Bearer`, `max_completion_tokens` and a strict
//! `json_schema` response format; Anthropic `POST {host}/v1/messages` with
//! `x-api-key` + `anthropic-version` and forced tool use; Gemini
//! `POST {host}/v1beta/models/{model}:generateContent` with `x-goog-api-key`,
//! `responseMimeType` and an OpenAPI-style `responseSchema`.
//!
//! Owns: request bodies, response parsing, usage normalisation. Must never
//! put the API key anywhere but the request header it belongs in.

use serde_json::{Value, json};

use super::config::{JudgeConfig, Provider};
use crate::prompt::Prompt;

pub use crate::cache::Usage;

/// What a successful (2xx) response said.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Text to parse for verdicts (a JSON object, possibly wrapped).
    Text { text: String, usage: Usage },
    /// The provider answered but declined: a refusal or a safety block.
    /// The judge abstains on every rubric with this reason.
    Declined { reason: String, usage: Usage },
}

/// An HTTP request, ready to send.
pub struct Request {
    pub url: String,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
}

const TOOL_NAME: &str = "record_verdicts";

fn verdict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "rubric_id": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["PASS", "FAIL"]},
                        "justification": {"type": "string"}
                    },
                    "required": ["rubric_id", "verdict", "justification"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["verdicts"],
        "additionalProperties": false
    })
}

/// Gemini's `responseSchema` is an OpenAPI subset: upper-case types, no
/// `additionalProperties`, and `propertyOrdering` to fix the field order
/// (taken from `required`, which lists them in the order we want).
fn gemini_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("additionalProperties", _) => {}
                    ("type", Value::String(t)) => {
                        out.insert(k.clone(), Value::String(t.to_uppercase()));
                    }
                    ("properties", Value::Object(props)) => {
                        out.insert(k.clone(), Value::Object(props.iter().map(|(p, s)| (p.clone(), gemini_schema(s))).collect()));
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
        other => other.clone(),
    }
}

pub fn build(judge: &JudgeConfig, key: &str, prompt: &Prompt) -> Request {
    match judge.provider {
        Provider::Openai => {
            let mut body = json!({
                "model": judge.model,
                "messages": [
                    {"role": "system", "content": prompt.system},
                    {"role": "user", "content": prompt.user()}
                ],
                "max_completion_tokens": judge.max_output_tokens,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "verdicts", "strict": true, "schema": verdict_schema()}
                }
            });
            if let Some(t) = judge.temperature {
                body["temperature"] = json!(t);
            }
            Request {
                url: format!("{}/chat/completions", judge.base_url),
                headers: vec![("authorization", format!("Bearer {key}")), ("content-type", "application/json".into())],
                body,
            }
        }
        Provider::Anthropic => {
            // The shared prefix (task context and document) is its own block
            // with a cache breakpoint; the rubric list follows it.
            let mut body = json!({
                "model": judge.model,
                "max_tokens": judge.max_output_tokens,
                "system": [{"type": "text", "text": prompt.system}],
                "messages": [{
                    "role": "user",
                    "content": [
                        {"type": "text", "text": prompt.user_prefix, "cache_control": {"type": "ephemeral"}},
                        {"type": "text", "text": prompt.user_rubrics}
                    ]
                }],
                "tools": [{
                    "name": TOOL_NAME,
                    "description": "Record one PASS/FAIL verdict with a one-sentence justification for every rubric.",
                    "input_schema": verdict_schema()
                }],
                "tool_choice": {"type": "tool", "name": TOOL_NAME}
            });
            if let Some(t) = judge.temperature {
                body["temperature"] = json!(t);
            }
            Request {
                url: format!("{}/v1/messages", judge.base_url),
                headers: vec![
                    ("x-api-key", key.to_string()),
                    ("anthropic-version", judge.anthropic_version.clone()),
                    ("content-type", "application/json".into()),
                ],
                body,
            }
        }
        Provider::Gemini => {
            let mut generation = json!({
                "maxOutputTokens": judge.max_output_tokens,
                "responseMimeType": "application/json",
                "responseSchema": gemini_schema(&verdict_schema())
            });
            if let Some(t) = judge.temperature {
                generation["temperature"] = json!(t);
            }
            Request {
                url: format!("{}/v1beta/models/{}:generateContent", judge.base_url, judge.model),
                headers: vec![("x-goog-api-key", key.to_string()), ("content-type", "application/json".into())],
                body: json!({
                    "systemInstruction": {"parts": [{"text": prompt.system}]},
                    "contents": [{"role": "user", "parts": [{"text": prompt.user_prefix}, {"text": prompt.user_rubrics}]}],
                    "generationConfig": generation
                }),
            }
        }
    }
}

fn u(v: &Value, path: &str) -> u64 {
    v.pointer(path).and_then(Value::as_u64).unwrap_or(0)
}

/// Parses a 2xx body. `Err` when the body is not the provider's format (a
/// failed attempt, retried).
pub fn parse(provider: Provider, body: &str) -> Result<Reply, String> {
    let v: Value = serde_json::from_str(body).map_err(|e| format!("response body is not JSON ({e})"))?;
    match provider {
        Provider::Openai => {
            let usage = Usage {
                input: u(&v, "/usage/prompt_tokens"),
                output: u(&v, "/usage/completion_tokens"),
                cached: u(&v, "/usage/prompt_tokens_details/cached_tokens"),
            };
            let choice = v.pointer("/choices/0").ok_or("response has no choices")?;
            if let Some(refusal) = choice.pointer("/message/refusal").and_then(Value::as_str) {
                return Ok(Reply::Declined { reason: format!("refused: {refusal}"), usage });
            }
            let finish = choice.get("finish_reason").and_then(Value::as_str).unwrap_or("");
            if finish == "content_filter" {
                return Ok(Reply::Declined { reason: "blocked by the provider's content filter".into(), usage });
            }
            match choice.pointer("/message/content").and_then(Value::as_str) {
                Some(text) if !text.trim().is_empty() => Ok(Reply::Text { text: text.to_string(), usage }),
                _ if finish == "length" => Err("reply cut off at max_output_tokens before any content".into()),
                _ => Err("response has no message content".into()),
            }
        }
        Provider::Anthropic => {
            let usage = Usage {
                input: u(&v, "/usage/input_tokens") + u(&v, "/usage/cache_creation_input_tokens") + u(&v, "/usage/cache_read_input_tokens"),
                output: u(&v, "/usage/output_tokens"),
                cached: u(&v, "/usage/cache_read_input_tokens"),
            };
            if v.get("stop_reason").and_then(Value::as_str) == Some("refusal") {
                let why = v.pointer("/stop_details/explanation").and_then(Value::as_str).unwrap_or("no explanation given");
                return Ok(Reply::Declined { reason: format!("refused: {why}"), usage });
            }
            let blocks = v.get("content").and_then(Value::as_array).ok_or("response has no content blocks")?;
            if let Some(input) =
                blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use")).and_then(|b| b.get("input"))
            {
                return Ok(Reply::Text { text: input.to_string(), usage });
            }
            let text: String = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            if text.trim().is_empty() {
                return Err("response has neither a tool_use nor a text block".into());
            }
            Ok(Reply::Text { text, usage })
        }
        Provider::Gemini => {
            let usage = Usage {
                input: u(&v, "/usageMetadata/promptTokenCount"),
                output: u(&v, "/usageMetadata/candidatesTokenCount") + u(&v, "/usageMetadata/thoughtsTokenCount"),
                cached: u(&v, "/usageMetadata/cachedContentTokenCount"),
            };
            if let Some(reason) = v.pointer("/promptFeedback/blockReason").and_then(Value::as_str) {
                return Ok(Reply::Declined { reason: format!("prompt blocked ({reason})"), usage });
            }
            let Some(candidate) = v.pointer("/candidates/0") else {
                // Transient on Gemini's side: a failed attempt, retried (and
                // an abstention with this reason if it persists), never cached.
                return Err("no candidates returned".into());
            };
            let finish = candidate.get("finishReason").and_then(Value::as_str).unwrap_or("");
            let text: String = candidate
                .pointer("/content/parts")
                .and_then(Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
                        .filter_map(|p| p.get("text").and_then(Value::as_str))
                        .collect()
                })
                .unwrap_or_default();
            if !text.trim().is_empty() {
                return Ok(Reply::Text { text, usage });
            }
            match finish {
                "SAFETY" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "RECITATION" | "MODEL_ARMOR" => {
                    Ok(Reply::Declined { reason: format!("candidate blocked ({finish})"), usage })
                }
                "MAX_TOKENS" => Err("reply cut off at max_output_tokens before any text".into()),
                _ => Err(format!("empty candidate (finishReason {finish:?})")),
            }
        }
    }
}

/// The human-readable message inside an error body, whatever the provider.
pub fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let msg = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.pointer("/0/error/message"))
            .or_else(|| v.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let msg = msg.unwrap_or_else(|| body.chars().take(200).collect());
    msg.trim().to_string()
}

/// `Retry-After` as an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT"): the
/// time from now until then (zero if it has passed).
pub fn http_date_delay(value: &str) -> Option<std::time::Duration> {
    let at = parse_http_date(value)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs() as i64;
    Some(std::time::Duration::from_secs(at.saturating_sub(now).max(0) as u64))
}

/// Seconds since the Unix epoch of an IMF-fixdate (RFC 9110 §5.6.7).
fn parse_http_date(value: &str) -> Option<i64> {
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    let rest = value.trim().split_once(", ")?.1;
    let parts: Vec<&str> = rest.split_whitespace().collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else { return None };
    let day: i64 = day.parse().ok()?;
    let month =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].iter().position(|m| m == month)? as i64 + 1;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<i64> = time.split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else { return None };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}

/// Gemini's 429 bodies carry `RetryInfo.retryDelay` ("38s").
pub fn retry_delay_in_body(body: &str) -> Option<std::time::Duration> {
    let v: Value = serde_json::from_str(body).ok()?;
    let details = v.pointer("/error/details")?.as_array()?;
    details.iter().find_map(|d| {
        let delay = d.get("retryDelay")?.as_str()?;
        let secs: f64 = delay.trim_end_matches('s').parse().ok()?;
        (secs.is_finite() && secs >= 0.0).then(|| std::time::Duration::from_secs_f64(secs))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_normalised() {
        let openai = r#"{"choices":[{"message":{"content":"{}","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":2048,"completion_tokens":64,"prompt_tokens_details":{"cached_tokens":1920}}}"#;
        assert_eq!(
            parse(Provider::Openai, openai),
            Ok(Reply::Text { text: "{}".into(), usage: Usage { input: 2048, output: 64, cached: 1920 } })
        );
        let anthropic = r#"{"content":[{"type":"tool_use","id":"t","name":"record_verdicts","input":{"verdicts":[]}}],"stop_reason":"tool_use","usage":{"input_tokens":21,"output_tokens":48,"cache_creation_input_tokens":5,"cache_read_input_tokens":2011}}"#;
        assert_eq!(
            parse(Provider::Anthropic, anthropic),
            Ok(Reply::Text { text: r#"{"verdicts":[]}"#.into(), usage: Usage { input: 2037, output: 48, cached: 2011 } })
        );
        let gemini = r#"{"candidates":[{"content":{"parts":[{"text":"thinking","thought":true},{"text":"{\"verdicts\":[]}"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4200,"candidatesTokenCount":20,"cachedContentTokenCount":4096,"thoughtsTokenCount":50}}"#;
        assert_eq!(
            parse(Provider::Gemini, gemini),
            Ok(Reply::Text { text: r#"{"verdicts":[]}"#.into(), usage: Usage { input: 4200, output: 70, cached: 4096 } })
        );
    }

    #[test]
    fn refusals_and_blocks_are_declines() {
        let refusal = r#"{"choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}"#;
        assert!(
            matches!(parse(Provider::Openai, refusal), Ok(Reply::Declined { reason, .. }) if reason == "refused: I can't help with that.")
        );
        let blocked = r#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":12}}"#;
        assert!(matches!(parse(Provider::Gemini, blocked), Ok(Reply::Declined { reason, .. }) if reason == "prompt blocked (SAFETY)"));
        let candidate = r#"{"candidates":[{"content":{"role":"model"},"finishReason":"SAFETY"}]}"#;
        assert!(matches!(parse(Provider::Gemini, candidate), Ok(Reply::Declined { reason, .. }) if reason == "candidate blocked (SAFETY)"));
        let claude = r#"{"content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":null,"explanation":null},"usage":{"input_tokens":21,"output_tokens":0}}"#;
        assert!(matches!(parse(Provider::Anthropic, claude), Ok(Reply::Declined { .. })));
        assert!(parse(Provider::Openai, "<html>502</html>").is_err());
    }

    #[test]
    fn the_gemini_schema_is_the_verdict_schema_in_openapi_form() {
        let g = gemini_schema(&verdict_schema());
        assert_eq!(g["type"], "OBJECT");
        assert_eq!(g["propertyOrdering"], json!(["verdicts"]));
        let item = &g["properties"]["verdicts"]["items"];
        assert_eq!(item["type"], "OBJECT");
        assert_eq!(item["properties"]["verdict"], json!({"type": "STRING", "enum": ["PASS", "FAIL"]}));
        assert_eq!(item["propertyOrdering"], json!(["rubric_id", "verdict", "justification"]));
        assert!(!g.to_string().contains("additionalProperties"));
    }

    #[test]
    fn http_dates() {
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777));
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse_http_date("Mon, 30 Nov 2026 09:00:00 GMT"), Some(1_796_029_200));
        assert_eq!(parse_http_date("tomorrow"), None);
        assert_eq!(http_date_delay("Thu, 01 Jan 1970 00:00:00 GMT"), Some(std::time::Duration::ZERO));
    }

    #[test]
    fn error_messages_and_retry_info() {
        assert_eq!(
            error_message(r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#),
            "Incorrect API key provided"
        );
        assert_eq!(error_message(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#), "Overloaded");
        let gemini = r#"{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"38s"}]}}"#;
        assert_eq!(retry_delay_in_body(gemini), Some(std::time::Duration::from_secs(38)));
    }
}
