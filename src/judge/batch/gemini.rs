//! Gemini's batch mode: `POST /v1/models/{model}:batchGenerateContent`
//! with inline requests (`batch.inputConfig.requests.requests[]`, each
//! `{request, metadata: {key}}`) and the batch's tag as its display name,
//! polled as a long-running operation (`metadata.state`), responses inline
//! in `metadata.output` (or `response`), or in a file for large batches;
//! `GET /v1/batches` (`operations`, `nextPageToken`) to find a batch by its
//! display name (google-genai 3.6.1, `batches.py`).

use serde_json::{Value, json};

use super::wire::{Api, Envelope, Payload, WireError};
use super::{ItemResult, Lookup, Phase, Results, Status};
use crate::judge::config::JudgeConfig;

pub(super) fn item(custom_id: &str, body: Value) -> Value {
    json!({"request": body, "metadata": {"key": custom_id}})
}

/// The create request: inline requests under `batch.inputConfig`, the tag
/// as the display name.
pub(super) fn envelope(tag: &str) -> Envelope {
    let name = serde_json::to_string(tag).unwrap_or_else(|_| "\"redjury\"".into());
    Envelope::json(
        &format!(
            "{{\"batch\":{{\"displayName\":{name},\"inputConfig\":{{\"requests\":{{\"requests\":["
        ),
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

/// Every response, in request order, with its key when it carries one
/// (the service is reported to leave `metadata` out at times).
pub(super) async fn results(
    api: &Api<'_>,
    judge: &JudgeConfig,
    status: &Status,
) -> Result<Results, WireError> {
    let v = &status.detail;
    let inline = v
        .pointer("/metadata/output/inlinedResponses/inlinedResponses")
        .or_else(|| v.pointer("/response/inlinedResponses/inlinedResponses"))
        .and_then(Value::as_array);
    let mut out = Results::default();
    if let Some(items) = inline {
        for item in items {
            out.items.push(item_result(item, item.pointer("/metadata/key")));
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
            match serde_json::from_str::<Value>(line) {
                Ok(item) => out.items.push(item_result(&item, item.get("key"))),
                Err(_) => out.unreadable += 1,
            }
        }
    }
    Ok(out)
}

fn item_result(item: &Value, key: Option<&Value>) -> (Option<String>, ItemResult) {
    let key = key.and_then(Value::as_str).map(str::to_string);
    let result = match (item.get("response"), item.get("error")) {
        (Some(r), _) if !r.is_null() => ItemResult::Reply(r.to_string()),
        (_, Some(e)) => ItemResult::Errored(
            e.get("message").and_then(Value::as_str).unwrap_or("errored").to_string(),
        ),
        _ => ItemResult::Errored("no response".into()),
    };
    (key, result)
}

/// The batch whose display name is the lookup's tag, among the recent
/// ones (`GET /v1/batches`, paged by `nextPageToken`).
pub(super) async fn find(
    api: &Api<'_>,
    judge: &JudgeConfig,
    lookup: &Lookup<'_>,
) -> Result<Option<String>, WireError> {
    let mut token: Option<String> = None;
    for _ in 0..super::LIST_PAGES {
        let query = token.as_ref().map(|t| format!("&pageToken={t}")).unwrap_or_default();
        let page =
            api.get_json(&format!("{}/v1/batches?pageSize=100{query}", judge.base_url)).await?;
        let operations = page.get("operations").and_then(Value::as_array);
        for op in operations.into_iter().flatten() {
            if op.pointer("/metadata/displayName").and_then(Value::as_str) == Some(lookup.tag) {
                return Ok(op.get("name").and_then(Value::as_str).map(str::to_string));
            }
        }
        token = page.get("nextPageToken").and_then(Value::as_str).map(str::to_string);
        if token.as_deref().is_none_or(str::is_empty) {
            return Ok(None);
        }
    }
    Ok(None)
}

pub(super) async fn cancel(api: &Api<'_>, judge: &JudgeConfig, id: &str) -> Result<(), WireError> {
    api.post(&format!("{}:cancel", path(judge, id)), Payload::json(&json!({}))).await.map(|_| ())
}
