//! OpenAI's Batch API: the JSONL input uploaded to `/files` (purpose
//! `batch`), `POST /batches`, `GET /batches/{id}`, the output and error
//! files from `/files/{id}/content`.

use serde_json::{Value, json};

use super::wire::{Api, Envelope, Payload, WireError};
use super::{ItemResult, Phase, Status};
use crate::judge::config::JudgeConfig;

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
) -> Result<(String, Option<String>), WireError> {
    let file = api.post(&format!("{}/files", judge.base_url), upload).await?;
    let file: Value = serde_json::from_str(&file)
        .map_err(|e| WireError::format(format!("file upload reply is not JSON ({e})")))?;
    let file_id = str_field(&file, "/id", "file upload")?;
    let create = json!({
        "input_file_id": file_id,
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"client": "redjury"}
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
        "failed" => {
            let errors: Vec<&str> = v
                .pointer("/errors/data")
                .and_then(Value::as_array)
                .map(|d| {
                    d.iter().filter_map(|e| e.get("message").and_then(Value::as_str)).collect()
                })
                .unwrap_or_default();
            Phase::Failed(format!("the batch failed validation: {}", errors.join("; ")))
        }
        _ => Phase::Running,
    };
    let c =
        |k: &str| v.pointer(&format!("/request_counts/{k}")).and_then(Value::as_u64).unwrap_or(0);
    let counts =
        format!("{state}: {} of {} completed, {} failed", c("completed"), c("total"), c("failed"));
    Ok(Status { phase, counts, detail: v })
}

/// Every line of the output and error files.
pub(super) async fn results(
    api: &Api<'_>,
    judge: &JudgeConfig,
    status: &Status,
) -> Result<Vec<(String, ItemResult)>, WireError> {
    let mut out = Vec::new();
    for field in ["/output_file_id", "/error_file_id"] {
        let Some(file) = status.detail.pointer(field).and_then(Value::as_str) else { continue };
        let text = api.get(&format!("{}/files/{file}/content", judge.base_url)).await?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
            let Some(id) = v.get("custom_id").and_then(Value::as_str) else { continue };
            out.push((id.to_string(), line_result(&v)));
        }
    }
    Ok(out)
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
