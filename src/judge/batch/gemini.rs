//! Gemini's batch mode: `POST /v1/models/{model}:batchGenerateContent`
//! with inline requests (`batch.inputConfig.requests.requests[]`, each
//! `{request, metadata: {key}}`), polled as a long-running operation
//! (`metadata.state`), responses inline in `metadata.output` (or
//! `response`), or in a file for large batches.

use serde_json::{Value, json};

use super::wire::{Api, Envelope, Payload, WireError};
use super::{ItemResult, Phase, Status};
use crate::judge::config::JudgeConfig;

pub(super) fn item(custom_id: &str, body: Value) -> Value {
    json!({"request": body, "metadata": {"key": custom_id}})
}

/// The create request: inline requests under `batch.inputConfig`.
pub(super) fn envelope() -> Envelope {
    Envelope::json(
        "{\"batch\":{\"displayName\":\"redjury\",\"inputConfig\":{\"requests\":{\"requests\":[",
        "]}}}}",
    )
}

pub(super) async fn submit(
    api: &Api<'_>,
    judge: &JudgeConfig,
    body: Payload,
) -> Result<(String, Option<String>), WireError> {
    let url = format!("{}/v1/models/{}:batchGenerateContent", judge.base_url, judge.model);
    let reply = api.post(&url, body).await?;
    let v: Value = serde_json::from_str(&reply)
        .map_err(|e| WireError::format(format!("batch creation reply is not JSON ({e})")))?;
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| WireError::format("the batch creation reply has no name"))?;
    Ok((name.to_string(), None))
}

/// The operation's path: ids are kept as the API names them ("batches/…").
fn path(judge: &JudgeConfig, id: &str) -> String {
    let name = if id.starts_with("batches/") { id.to_string() } else { format!("batches/{id}") };
    format!("{}/v1/{name}", judge.base_url)
}

pub(super) async fn poll(
    api: &Api<'_>,
    judge: &JudgeConfig,
    id: &str,
) -> Result<Status, WireError> {
    let v = api.get_json(&path(judge, id)).await?;
    let state = v.pointer("/metadata/state").and_then(Value::as_str).unwrap_or("").to_string();
    let bare = state.trim_start_matches("BATCH_STATE_").trim_start_matches("JOB_STATE_");
    let phase = match bare {
        "SUCCEEDED" | "CANCELLED" | "EXPIRED" | "PARTIALLY_SUCCEEDED" => Phase::Ended,
        "FAILED" => Phase::Failed(format!(
            "the batch failed: {}",
            v.pointer("/error/message").and_then(Value::as_str).unwrap_or("no reason given")
        )),
        _ if v.get("done") == Some(&Value::Bool(true)) => Phase::Ended,
        _ => Phase::Running,
    };
    // Counts are int64, sent as strings.
    let c = |k: &str| {
        let n = v.pointer(&format!("/metadata/batchStats/{k}"));
        n.and_then(|n| n.as_str().and_then(|s| s.parse().ok()).or_else(|| n.as_u64()))
            .unwrap_or(0u64)
    };
    let counts = format!(
        "{state}: {} of {} succeeded, {} failed, {} pending",
        c("successfulRequestCount"),
        c("requestCount"),
        c("failedRequestCount"),
        c("pendingRequestCount")
    );
    Ok(Status { phase, counts, detail: v })
}

pub(super) async fn results(
    api: &Api<'_>,
    judge: &JudgeConfig,
    status: &Status,
) -> Result<Vec<(String, ItemResult)>, WireError> {
    let v = &status.detail;
    let inline = v
        .pointer("/metadata/output/inlinedResponses/inlinedResponses")
        .or_else(|| v.pointer("/response/inlinedResponses/inlinedResponses"))
        .and_then(Value::as_array);
    let mut out = Vec::new();
    if let Some(items) = inline {
        for item in items {
            if let Some(r) = item_result(item, item.pointer("/metadata/key")) {
                out.push(r);
            }
        }
        return Ok(out);
    }
    let file = v
        .pointer("/metadata/output/responsesFile")
        .or_else(|| v.pointer("/response/responsesFile"))
        .and_then(Value::as_str);
    if let Some(file) = file {
        let text =
            api.get(&format!("{}/download/v1/{file}:download?alt=media", judge.base_url)).await?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Ok(item) = serde_json::from_str::<Value>(line) else { continue };
            if let Some(r) = item_result(&item, item.get("key")) {
                out.push(r);
            }
        }
    }
    Ok(out)
}

fn item_result(item: &Value, key: Option<&Value>) -> Option<(String, ItemResult)> {
    let key = key?.as_str()?.to_string();
    let result = match (item.get("response"), item.get("error")) {
        (Some(r), _) if !r.is_null() => ItemResult::Reply(r.to_string()),
        (_, Some(e)) => ItemResult::Errored(
            e.get("message").and_then(Value::as_str).unwrap_or("errored").to_string(),
        ),
        _ => ItemResult::Errored("no response".into()),
    };
    Some((key, result))
}

pub(super) async fn cancel(api: &Api<'_>, judge: &JudgeConfig, id: &str) -> Result<(), WireError> {
    api.post(&format!("{}:cancel", path(judge, id)), Payload::json(&json!({}))).await.map(|_| ())
}
