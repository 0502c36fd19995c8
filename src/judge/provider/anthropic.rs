//! Anthropic Messages: `POST {base_url}/v1/messages` with
//! `Authorization: Bearer` (as the current SDK sends the key) and
//! `anthropic-version`, forced tool use, a cache breakpoint after the
//! shared prefix.

use serde_json::{Value, json};

use super::{Reply, TOOL_NAME, Unusable, Usage, u, verdict_schema};
use crate::judge::config::JudgeConfig;
use crate::prompt::Prompt;

/// The request body (also a batch item's `params`).
pub(crate) fn body(judge: &JudgeConfig, prompt: &Prompt) -> Value {
    // The shared prefix (task context and document) is its own block with
    // a cache breakpoint; the rubric list follows it.
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
    body
}

/// The headers every request to the API carries.
pub(super) fn headers(judge: &JudgeConfig, key: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![("anthropic-version", judge.anthropic_version.clone())];
    if let Some(k) = key {
        headers.push(("authorization", format!("Bearer {k}")));
    }
    headers
}

pub(super) fn request(
    judge: &JudgeConfig,
    key: Option<&str>,
    prompt: &Prompt,
) -> (String, Vec<(&'static str, String)>, Value) {
    (format!("{}/v1/messages", judge.base_url), headers(judge, key), body(judge, prompt))
}

pub(super) fn parse(v: &Value) -> Result<Reply, Unusable> {
    let (read, write) =
        (u(v, "/usage/cache_read_input_tokens"), u(v, "/usage/cache_creation_input_tokens"));
    let usage = Usage {
        input: u(v, "/usage/input_tokens") + write + read,
        output: u(v, "/usage/output_tokens"),
        cached: read,
        cache_write: write,
    };
    match v.get("stop_reason").and_then(Value::as_str).unwrap_or("") {
        "refusal" => {
            let why = v
                .pointer("/stop_details/explanation")
                .and_then(Value::as_str)
                .unwrap_or("no explanation given");
            return Ok(Reply::Declined { reason: format!("refused: {why}"), usage });
        }
        // A partial tool input is not an answer, however plausible.
        reason @ ("max_tokens" | "model_context_window_exceeded") => {
            return Err(Unusable::new(
                format!("truncated: the reply stopped at {reason:?} before it was complete"),
                usage,
            ));
        }
        "pause_turn" => {
            return Err(Unusable::new("the model paused its turn before answering", usage));
        }
        _ => {}
    }
    let Some(blocks) = v.get("content").and_then(Value::as_array) else {
        return Err(Unusable::new("response has no content blocks", usage));
    };
    let tool = blocks.iter().find(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"));
    if let Some(input) = tool.and_then(|b| b.get("input")) {
        return Ok(Reply::Text { text: input.to_string(), usage });
    }
    let text: String = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    if text.trim().is_empty() {
        return Err(Unusable::new("response has neither a tool_use nor a text block", usage));
    }
    Ok(Reply::Text { text, usage })
}

/// Anthropic's error types for a bad key, no access, no model or no credit.
pub(super) fn judge_down(v: &Value) -> bool {
    let kind = v.pointer("/error/type").and_then(Value::as_str).unwrap_or("");
    matches!(
        kind,
        "authentication_error" | "permission_error" | "not_found_error" | "billing_error"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(s: &str) -> Result<Reply, Unusable> {
        parse(&serde_json::from_str(s).unwrap_or_default())
    }

    #[test]
    fn usage_counts_cache_reads_and_writes() {
        let r = parsed(
            r#"{"content":[{"type":"tool_use","id":"t","name":"record_verdicts","input":{"verdicts":[]}}],"stop_reason":"tool_use","usage":{"input_tokens":21,"output_tokens":48,"cache_creation_input_tokens":5,"cache_read_input_tokens":2011}}"#,
        );
        assert_eq!(
            r,
            Ok(Reply::Text {
                text: r#"{"verdicts":[]}"#.into(),
                usage: Usage { input: 2037, output: 48, cached: 2011, cache_write: 5 }
            })
        );
    }

    #[test]
    fn a_truncated_tool_input_is_not_an_answer() {
        for reason in ["max_tokens", "model_context_window_exceeded"] {
            let body = format!(
                r#"{{"content":[{{"type":"tool_use","id":"t","name":"record_verdicts","input":{{"verdicts":[{{"rubric_id":"r1","justification":"x","verdict":"PASS"}}]}}}}],"stop_reason":"{reason}","usage":{{"input_tokens":100,"output_tokens":4096}}}}"#
            );
            let e = parsed(&body).err().map(|e| (e.message, e.usage.output)).unwrap_or_default();
            assert!(e.0.starts_with("truncated"), "{}", e.0);
            assert_eq!(e.1, 4096);
        }
        let refusal = parsed(
            r#"{"content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":null,"explanation":null},"usage":{"input_tokens":21,"output_tokens":0}}"#,
        );
        assert!(matches!(refusal, Ok(Reply::Declined { .. })));
    }
}
