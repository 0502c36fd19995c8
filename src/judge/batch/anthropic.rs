//! Anthropic's Message Batches: `POST /v1/messages/batches` with
//! `{requests: [{custom_id, params}]}`, polled until `processing_status`
//! is `ended`, results as JSONL (`succeeded` / `errored` / `canceled` /
//! `expired`).

use serde_json::{Value, json};

use super::wire::{Api, Envelope, Payload, WireError};
use super::{ItemResult, Phase, Status};
use crate::judge::config::JudgeConfig;

pub(super) fn item(custom_id: &str, body: Value) -> Value {
    json!({"custom_id": custom_id, "params": body})
}

/// The create request: `{"requests": [items]}`.
pub(super) fn envelope() -> Envelope {
    Envelope::json("{\"requests\":[", "]}")
}

pub(super) async fn submit(
    api: &Api<'_>,
    judge: &JudgeConfig,
    body: Payload,
) -> Result<(String, Option<String>), WireError> {
    let url = format!("{}/v1/messages/batches", judge.base_url);
    let reply = api.post(&url, body).await?;
    let v: Value = serde_json::from_str(&reply)
        .map_err(|e| WireError::format(format!("batch creation reply is not JSON ({e})")))?;
    let id = v
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| WireError::format("the batch creation reply has no id"))?;
    Ok((id.to_string(), None))
}

pub(super) async fn poll(
    api: &Api<'_>,
    judge: &JudgeConfig,
    id: &str,
) -> Result<Status, WireError> {
    let v = api.get_json(&format!("{}/v1/messages/batches/{id}", judge.base_url)).await?;
    let state = v.get("processing_status").and_then(Value::as_str).unwrap_or("").to_string();
    let phase = if state == "ended" { Phase::Ended } else { Phase::Running };
    let c =
        |k: &str| v.pointer(&format!("/request_counts/{k}")).and_then(Value::as_u64).unwrap_or(0);
    let counts = format!(
        "{state}: {} processing, {} succeeded, {} errored, {} canceled, {} expired",
        c("processing"),
        c("succeeded"),
        c("errored"),
        c("canceled"),
        c("expired")
    );
    Ok(Status { phase, counts, detail: v })
}

pub(super) async fn results(
    api: &Api<'_>,
    judge: &JudgeConfig,
    id: &str,
    status: &Status,
) -> Result<Vec<(String, ItemResult)>, WireError> {
    // The key goes only to the judge's own endpoint: a results_url that
    // points elsewhere is not followed.
    let own = format!("{}/v1/messages/batches/{id}/results", judge.base_url);
    let url = status
        .detail
        .get("results_url")
        .and_then(Value::as_str)
        .filter(|u| u.starts_with(&format!("{}/", judge.base_url)))
        .map(str::to_string)
        .unwrap_or(own);
    let text = api.get(&url).await?;
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else { continue };
        let Some(custom_id) = v.get("custom_id").and_then(Value::as_str) else { continue };
        let result = match v.pointer("/result/type").and_then(Value::as_str) {
            Some("succeeded") => ItemResult::Reply(
                v.pointer("/result/message").cloned().unwrap_or(Value::Null).to_string(),
            ),
            Some("expired") => ItemResult::Expired,
            Some("canceled") => ItemResult::Canceled,
            _ => ItemResult::Errored(
                v.pointer("/result/error/error/message")
                    .or_else(|| v.pointer("/result/error/message"))
                    .and_then(Value::as_str)
                    .unwrap_or("errored")
                    .to_string(),
            ),
        };
        out.push((custom_id.to_string(), result));
    }
    Ok(out)
}

pub(super) async fn cancel(api: &Api<'_>, judge: &JudgeConfig, id: &str) -> Result<(), WireError> {
    let url = format!("{}/v1/messages/batches/{id}/cancel", judge.base_url);
    api.post(&url, Payload::json(&json!({}))).await.map(|_| ())
}
