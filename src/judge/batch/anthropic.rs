//! Anthropic's Message Batches: `POST /v1/messages/batches` with
//! `{requests: [{custom_id, params}]}`, polled until `processing_status`
//! is `ended`, results as JSONL (`succeeded` / `errored` / `canceled` /
//! `expired`). A batch takes no metadata (anthropic 2.15.0,
//! `resources/messages/batches.py`), so an interrupted submission is
//! found by its creation time and request count (`GET
//! /v1/messages/batches`, newest first), then by the custom ids its
//! results carry.

use std::collections::HashSet;

use serde_json::{Value, json};

use super::wire::{Api, Envelope, Payload, Transient, WireError};
use super::{ItemResult, Lookup, Phase, Results, Status};
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
) -> Result<Results, WireError> {
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
    let mut out = Results::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let parsed = serde_json::from_str::<Value>(line).ok();
        let Some((v, custom_id)) =
            parsed.as_ref().and_then(|v| Some((v, v.get("custom_id")?.as_str()?)))
        else {
            out.unreadable += 1;
            continue;
        };
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
        out.items.push((Some(custom_id.to_string()), result));
    }
    Ok(out)
}

/// The batch an interrupted submission made: among the recent batches not
/// recorded yet, those created near the intent with as many requests;
/// when several remain, the one whose results carry the intent's custom
/// ids. Undecidable while such candidates are still running (a transient
/// error: the next run looks again).
pub(super) async fn find(
    api: &Api<'_>,
    judge: &JudgeConfig,
    lookup: &Lookup<'_>,
) -> Result<Option<String>, WireError> {
    let mut candidates: Vec<Value> = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..super::LIST_PAGES {
        let query = after.as_ref().map(|a| format!("&after_id={a}")).unwrap_or_default();
        let url = format!("{}/v1/messages/batches?limit=100{query}", judge.base_url);
        let page = api.get_json(&url).await?;
        let data = page.get("data").and_then(Value::as_array).cloned().unwrap_or_default();
        let mut oldest = i64::MAX;
        for b in data {
            let created = created_at(&b).unwrap_or(i64::MIN);
            oldest = oldest.min(created);
            let id = b.get("id").and_then(Value::as_str).unwrap_or("");
            let near = (created - lookup.created_at).abs() <= super::LOOKBACK_SECS;
            if near && requests(&b) == lookup.items as u64 && !lookup.known.contains(id) {
                candidates.push(b);
            }
        }
        let more = page.get("has_more").and_then(Value::as_bool).unwrap_or(false);
        if !more || oldest < lookup.created_at - super::LOOKBACK_SECS {
            break;
        }
        after = page.get("last_id").and_then(Value::as_str).map(str::to_string);
    }
    let id = |b: &Value| b.get("id").and_then(Value::as_str).map(str::to_string);
    if candidates.len() <= 1 {
        return Ok(candidates.first().and_then(id));
    }
    let mut running = 0;
    for b in &candidates {
        if b.get("processing_status").and_then(Value::as_str) != Some("ended") {
            running += 1;
            continue;
        }
        let Some(bid) = id(b) else { continue };
        let status = Status { phase: Phase::Ended, counts: String::new(), detail: b.clone() };
        let carried: HashSet<String> = results(api, judge, &bid, &status)
            .await?
            .items
            .into_iter()
            .filter_map(|(k, _)| k)
            .collect();
        if &carried == lookup.custom_ids {
            return Ok(Some(bid));
        }
    }
    if running > 0 {
        return Err(WireError {
            message: format!(
                "{} batches created then with {} requests match; {running} are still running, and their results will tell which is this run's",
                candidates.len(),
                lookup.items
            ),
            transient: Transient::Yes,
            status: None,
        });
    }
    Ok(None)
}

fn created_at(b: &Value) -> Option<i64> {
    let text = b.get("created_at").and_then(Value::as_str)?;
    crate::judge::headers::rfc3339_seconds(text).map(|s| s as i64)
}

/// Requests in a batch: the sum of its counts by state.
fn requests(b: &Value) -> u64 {
    ["processing", "succeeded", "errored", "canceled", "expired"]
        .iter()
        .filter_map(|k| b.pointer(&format!("/request_counts/{k}")).and_then(Value::as_u64))
        .sum()
}

pub(super) async fn cancel(api: &Api<'_>, judge: &JudgeConfig, id: &str) -> Result<(), WireError> {
    let url = format!("{}/v1/messages/batches/{id}/cancel", judge.base_url);
    api.post(&url, Payload::json(&json!({}))).await.map(|_| ())
}
