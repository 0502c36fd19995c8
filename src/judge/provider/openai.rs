//! OpenAI Chat Completions (and OpenAI-compatible servers):
//! `POST {base_url}/chat/completions`, `Authorization: Bearer`.

use serde_json::{Value, json};

use super::{Reply, Unusable, Usage, u, verdict_schema};
use crate::judge::config::{JudgeConfig, OutputTokensField, StructuredOutput};
use crate::prompt::Prompt;

/// The request body (also a batch line's `body`).
pub(crate) fn body(judge: &JudgeConfig, prompt: &Prompt) -> Value {
    let mut body = json!({
        "model": judge.model,
        "messages": [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user()}
        ]
    });
    let budget = match judge.output_tokens_field {
        OutputTokensField::MaxCompletionTokens => "max_completion_tokens",
        OutputTokensField::MaxTokens => "max_tokens",
    };
    body[budget] = json!(judge.max_output_tokens);
    match judge.structured_output {
        StructuredOutput::JsonSchema => {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": "verdicts", "strict": true, "schema": verdict_schema()}
            });
        }
        StructuredOutput::JsonObject => body["response_format"] = json!({"type": "json_object"}),
        StructuredOutput::None => {}
    }
    if let Some(t) = judge.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// The headers every request to the API carries.
pub(super) fn headers(key: Option<&str>) -> Vec<(&'static str, String)> {
    key.map(|k| vec![("authorization", format!("Bearer {k}"))]).unwrap_or_default()
}

pub(super) fn request(
    judge: &JudgeConfig,
    key: Option<&str>,
    prompt: &Prompt,
) -> (String, Vec<(&'static str, String)>, Value) {
    (format!("{}/chat/completions", judge.base_url), headers(key), body(judge, prompt))
}

pub(super) fn parse(v: &Value) -> Result<Reply, Unusable> {
    let usage = Usage {
        input: u(v, "/usage/prompt_tokens"),
        output: u(v, "/usage/completion_tokens"),
        cached: u(v, "/usage/prompt_tokens_details/cached_tokens"),
        cache_write: 0,
    };
    let Some(choice) = v.pointer("/choices/0") else {
        return Err(Unusable::new("response has no choices", usage));
    };
    if let Some(refusal) = choice.pointer("/message/refusal").and_then(Value::as_str) {
        return Ok(Reply::Declined { reason: format!("refused: {refusal}"), usage });
    }
    match choice.get("finish_reason").and_then(Value::as_str).unwrap_or("") {
        "content_filter" => {
            return Ok(Reply::Declined {
                reason: "blocked by the provider's content filter".into(),
                usage,
            });
        }
        // Whatever text came with it is cut off: never an answer.
        "length" => {
            return Err(Unusable::new(
                "truncated: the reply reached max_output_tokens (finish_reason \"length\")",
                usage,
            ));
        }
        _ => {}
    }
    match choice.pointer("/message/content").and_then(Value::as_str) {
        Some(text) if !text.trim().is_empty() => Ok(Reply::Text { text: text.to_string(), usage }),
        _ => Err(Unusable::new("response has no message content", usage)),
    }
}

/// OpenAI's documented codes for a bad key, no access, no model or no
/// quota; OpenAI-compatible gateways reuse them with other statuses.
pub(super) fn judge_down(v: &Value) -> bool {
    let code = v.pointer("/error/code").and_then(Value::as_str).unwrap_or("");
    let kind = v.pointer("/error/type").and_then(Value::as_str).unwrap_or("");
    matches!(
        code,
        "invalid_api_key"
            | "model_not_found"
            | "insufficient_quota"
            | "invalid_organization"
            | "no_such_organization"
            | "unsupported_country_region_territory"
            | "account_deactivated"
    ) || matches!(kind, "insufficient_quota" | "authentication_error" | "permission_error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_truncation_and_refusal() {
        let ok: Value = serde_json::from_str(r#"{"choices":[{"message":{"content":"{}","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":2048,"completion_tokens":64,"prompt_tokens_details":{"cached_tokens":1920}}}"#).unwrap_or_default();
        assert_eq!(
            parse(&ok),
            Ok(Reply::Text {
                text: "{}".into(),
                usage: Usage { input: 2048, output: 64, cached: 1920, cache_write: 0 }
            })
        );
        let cut: Value = serde_json::from_str(r#"{"choices":[{"message":{"content":"{\"verdicts\":[{\"rubric_id\":\"r1\",\"verdict\":\"PASS\"}"},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":8192}}"#).unwrap_or_default();
        let e = parse(&cut).err().unwrap_or_else(|| Unusable::new("", Usage::default()));
        assert!(e.message.starts_with("truncated"), "{}", e.message);
        assert_eq!(e.usage.output, 8192, "the billed tokens of a truncated reply are kept");
        let refusal: Value = serde_json::from_str(
            r#"{"choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}"#,
        )
        .unwrap_or_default();
        assert!(
            matches!(parse(&refusal), Ok(Reply::Declined { reason, .. }) if reason == "refused: I can't help with that.")
        );
    }

    #[test]
    fn compatible_servers_get_their_fields() {
        let mut judge = JudgeConfig::new("j", crate::judge::config::Provider::Openai, "m");
        let prompt = Prompt::new("s".into(), "p".into(), "r".into(), vec![], "v".into());
        judge.output_tokens_field = OutputTokensField::MaxTokens;
        judge.structured_output = StructuredOutput::JsonObject;
        let (_, _, body) = request(&judge, None, &prompt);
        assert_eq!(body["max_tokens"], json!(4096));
        assert!(body.get("max_completion_tokens").is_none());
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        judge.structured_output = StructuredOutput::None;
        assert!(request(&judge, None, &prompt).2.get("response_format").is_none());
    }
}
