//! OpenAI's Batch API: the JSONL input uploaded to `/files` (purpose
//! `batch`), `POST /batches` (tagged in `metadata`), `GET /batches/{id}`,
//! `GET /batches` to find a batch by its tag, the output and error files
//! from `/files/{id}/content` (openai 3.57.0, `resources/batches.py`).

use serde_json::{Value, json};

use super::wire::{Api, Envelope, Payload, WireError};
use super::{ItemResult, Lookup, Phase, Results, Status};
use crate::judge::config::JudgeConfig;

/// The metadata key that carries a batch's tag.
const TAG_KEY: &str = "redjury_tag";

/// One input line: `{custom_id, method, url, body}`.
pub(super) fn item(custom_id: &str, body: Value) -> Value {
    json!({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body})
}

/// The upload: a multipart form whose file holds one line per item.
pub(super) fn envelope() -> Envelope {
    Envelope::multipart_jsonl(&[("purpose", "batch")], "file", "redjury-batch.jsonl")
}

/// Uploads the lines and creates the batch: (batch id, input file id).
pub(super) async fn submit(
    api: &Api<'_>,
    judge: &JudgeConfig,
    upload: Payload,
    tag: &str,
) -> Result<(String, Option<String>), WireError> {
    let file = api.post(&format!("{}/files", judge.base_url), upload).await?;
    let file: Value = serde_json::from_str(&file)
        .map_err(|e| WireError::format(format!("file upload reply is not JSON ({e})")))?;
    let file_id = str_field(&file, "/id", "file upload")?;
    let create = json!({
        "input_file_id": file_id,
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"client": "redjury", TAG_KEY: tag}
    });
    let batch = api.post_json(&format!("{}/batches", judge.base_url), &create).await?;
    Ok((str_field(&batch, "/id", "batch creation")?, Some(file_id)))
}

pub(super) async fn poll(
    api: &Api<'_>,
    judge: &JudgeConfig,
    id: &str,
) -> Result<Status, WireError> {
    let v = api.get_json(&format!("{}/batches/{id}", judge.base_url)).await?;
    let state = v.get("status").and_then(Value::as_str).unwrap_or("").to_string();
    let phase = match state.as_str() {
        "completed" | "expired" | "cancelled" => Phase::Ended,
        "failed" => failed(&v),
        _ => Phase::Running,
    };
    let c =
        |k: &str| v.pointer(&format!("/request_counts/{k}")).and_then(Value::as_u64).unwrap_or(0);
    let counts =
        format!("{state}: {} of {} completed, {} failed", c("completed"), c("total"), c("failed"));
    Ok(Status { phase, counts, detail: v })
}

/// A failed batch: refused for the tokens or requests it carries (the
/// organisation's enqueued-token limit, too many requests), which smaller
/// batches can pass, or failed for its content.
fn failed(v: &Value) -> Phase {
    let errors: Vec<&Value> = v
        .pointer("/errors/data")
        .and_then(Value::as_array)
        .map(|d| d.iter().collect())
        .unwrap_or_default();
    let text = |e: &&Value| e.get("message").and_then(Value::as_str).unwrap_or("").to_string();
    let messages: Vec<String> = errors.iter().map(text).collect();
    let over_a_limit = errors.iter().any(|e| {
        matches!(
            e.get("code").and_then(Value::as_str),
            Some("token_limit_exceeded" | "too_many_tasks")
        )
    });
    if over_a_limit {
        Phase::Refused(format!("the batch is over a limit: {}", messages.join("; ")))
    } else {
        Phase::Failed(format!("the batch failed validation: {}", messages.join("; ")))
    }
}

/// Every line of the output and error files.
pub(super) async fn results(
    api: &Api<'_>,
    judge: &JudgeConfig,
    status: &Status,
) -> Result<Results, WireError> {
    let mut out = Results::default();
    for field in ["/output_file_id", "/error_file_id"] {
        let Some(file) = status.detail.pointer(field).and_then(Value::as_str) else { continue };
        let text = api.get(&format!("{}/files/{file}/content", judge.base_url)).await?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let parsed = serde_json::from_str::<Value>(line).ok();
            match parsed.as_ref().and_then(|v| Some((v, v.get("custom_id")?.as_str()?))) {
                Some((v, id)) => out.items.push((Some(id.to_string()), line_result(v))),
                None => out.unreadable += 1,
            }
        }
    }
    Ok(out)
}

/// The batch carrying the lookup's tag, among the recent ones
/// (`GET /batches`, newest first, paged by the last id).
pub(super) async fn find(
    api: &Api<'_>,
    judge: &JudgeConfig,
    lookup: &Lookup<'_>,
) -> Result<Option<String>, WireError> {
    let mut after: Option<String> = None;
    for _ in 0..super::LIST_PAGES {
        let query = after.as_ref().map(|a| format!("&after={a}")).unwrap_or_default();
        let page = api.get_json(&format!("{}/batches?limit=100{query}", judge.base_url)).await?;
        let data = page.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
        for b in &data {
            if b.pointer(&format!("/metadata/{TAG_KEY}")).and_then(Value::as_str)
                == Some(lookup.tag)
            {
                return Ok(b.get("id").and_then(Value::as_str).map(str::to_string));
            }
        }
        let older = data.last().and_then(|b| b.get("created_at")).and_then(Value::as_i64);
        let more = page.get("has_more").and_then(Value::as_bool).unwrap_or(false);
        if !more || older.is_some_and(|t| t < lookup.created_at - super::LOOKBACK_SECS) {
            return Ok(None);
        }
        after = data.last().and_then(|b| b.get("id")).and_then(Value::as_str).map(str::to_string);
    }
    Ok(None)
}

fn line_result(v: &Value) -> ItemResult {
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        let code = err.get("code").and_then(Value::as_str).unwrap_or("");
        let message = err.get("message").and_then(Value::as_str).unwrap_or(code);
        return if code == "batch_expired" {
            ItemResult::Expired
        } else if code == "batch_cancelled" {
            ItemResult::Canceled
        } else {
            ItemResult::Errored(message.to_string())
        };
    }
    let status = v.pointer("/response/status_code").and_then(Value::as_u64).unwrap_or(0);
    let body = v.pointer("/response/body").cloned().unwrap_or(Value::Null);
    if status == 200 {
        ItemResult::Reply(body.to_string())
    } else {
        ItemResult::Errored(format!(
            "HTTP {status}: {}",
            crate::judge::provider::error_message(&body.to_string())
        ))
    }
}

pub(super) async fn cancel(api: &Api<'_>, judge: &JudgeConfig, id: &str) -> Result<(), WireError> {
    api.post(&format!("{}/batches/{id}/cancel", judge.base_url), Payload::json(&json!({})))
        .await
        .map(|_| ())
}

fn str_field(v: &Value, pointer: &str, what: &str) -> Result<String, WireError> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| WireError::format(format!("the {what} reply has no {pointer}")))
}
