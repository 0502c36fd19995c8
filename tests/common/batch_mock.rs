//! Each provider's batch endpoints beside its live one, in the wire
//! formats of the official SDKs (openai 3.57.0, anthropic 2.15.0,
//! google-genai 3.6.1): OpenAI (file upload, `/v1/batches` with metadata,
//! the batch list, output and error files), Anthropic
//! (`/v1/messages/batches`, the batch list newest first with RFC 3339
//! creation times, JSONL results) and Gemini (`:batchGenerateContent` with
//! a display name, the `batches` list of operations, a long-running
//! operation with inline responses). Items are answered by the live
//! handler, so a batch run and a live run on the same mock give the same
//! answers.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{Value, json};

use super::mock::*;

/// What the mock does with batches.
pub struct Faults {
    /// Every n-th item of a batch (1-based) expires; 0 = none.
    pub expire_every: usize,
    /// Every n-th item errors; 0 = none.
    pub error_every: usize,
    /// Whole batches expire: no item runs.
    pub expire_batches: bool,
    /// Polls before a batch ends.
    pub polls_to_end: usize,
    /// Creates the batch, then never answers the create request (the
    /// client is killed, or times out, not knowing it was accepted).
    pub stall_create: bool,
    /// OpenAI: never answers the file upload (nothing is created).
    pub stall_upload: bool,
    /// This many result downloads cut their last line in half (Gemini:
    /// this many ended polls leave every inline response's key out and
    /// drop the last one).
    pub garble_downloads: usize,
    /// After each answer, an error line for the same custom id.
    pub duplicate_errors: bool,
    /// Gemini: inline responses carry no `metadata.key`.
    pub omit_keys: bool,
    /// More items than this in one batch are refused for their size:
    /// 413 on create (Anthropic, Gemini); for OpenAI the batch fails with
    /// `token_limit_exceeded`, as the enqueued-token limit does. 0 = none.
    pub max_items: usize,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            expire_every: 0,
            error_every: 0,
            expire_batches: false,
            polls_to_end: 2,
            stall_create: false,
            stall_upload: false,
            garble_downloads: 0,
            duplicate_errors: false,
            omit_keys: false,
            max_items: 0,
        }
    }
}

struct Batch {
    items: Vec<(String, Value)>,
    polls: usize,
    cancelled: bool,
    /// OpenAI metadata's tag, or Gemini's display name.
    tag: Option<String>,
    created_at: u64,
    over_limit: bool,
}

/// A provider's batch mock and what it saw.
pub struct BatchMock {
    pub provider: &'static str,
    /// While set, batches stay in progress however often they are polled.
    pub hold: AtomicBool,
    pub faults: Mutex<Faults>,
    live: Handler,
    batches: Mutex<BTreeMap<String, Batch>>,
    files: Mutex<BTreeMap<String, String>>,
    next: AtomicUsize,
    /// Items per created batch, in order of creation.
    pub created: Mutex<Vec<usize>>,
    /// Bytes of every create or upload body.
    pub uploaded: AtomicUsize,
    /// Bytes of each batch's body (OpenAI: the uploaded file's form).
    pub bodies: Mutex<Vec<usize>>,
    pub cancels: Mutex<Vec<String>>,
    /// Live calls answered.
    pub live_calls: AtomicUsize,
    /// The custom ids of every batch created, in order of creation.
    pub created_ids: Mutex<Vec<Vec<String>>>,
    /// Create (or upload) requests received while stalling.
    pub stalled: AtomicUsize,
    /// Result downloads (Gemini: ended polls) so far.
    downloads: AtomicUsize,
}

impl BatchMock {
    pub fn new(provider: &'static str, live: Handler) -> Arc<BatchMock> {
        Arc::new(BatchMock {
            provider,
            hold: AtomicBool::new(false),
            faults: Mutex::new(Faults::default()),
            live,
            batches: Mutex::default(),
            files: Mutex::default(),
            next: AtomicUsize::new(1),
            created: Mutex::default(),
            uploaded: AtomicUsize::new(0),
            bodies: Mutex::default(),
            cancels: Mutex::default(),
            live_calls: AtomicUsize::new(0),
            created_ids: Mutex::default(),
            stalled: AtomicUsize::new(0),
            downloads: AtomicUsize::new(0),
        })
    }

    /// Custom ids that more than one batch carried: calls paid for twice.
    pub fn paid_twice(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut twice = Vec::new();
        for id in self.created_ids.lock().unwrap().iter().flatten() {
            if !seen.insert(id.clone()) {
                twice.push(id.clone());
            }
        }
        twice
    }

    /// Whether a download (or ended Gemini poll) should come out garbled.
    fn garbled(&self) -> bool {
        let n = self.downloads.fetch_add(1, Ordering::Relaxed);
        n < self.faults.lock().unwrap().garble_downloads
    }

    /// The handler to start a MockServer with; `base` is filled in later
    /// by the caller through `url`.
    pub fn handler(self: &Arc<Self>) -> Handler {
        let me = self.clone();
        Arc::new(move |req: &Recorded, i| me.route(req, i))
    }

    fn id(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// The live handler's success body for one request body.
    fn answer(&self, live_path: &str, body: &str) -> Value {
        let req = Recorded {
            method: "POST".into(),
            path: live_path.into(),
            headers: vec![],
            body: body.to_string(),
            at: Instant::now(),
        };
        match (self.live)(&req, 0) {
            Action::Respond { body, .. } | Action::Later(_, body) => {
                serde_json::from_str(&body).unwrap_or(Value::Null)
            }
            _ => Value::Null,
        }
    }

    fn route(&self, req: &Recorded, i: usize) -> Action {
        let p = req.path.as_str();
        let is_live = p.ends_with("/chat/completions") && !p.contains("batch")
            || p == "/v1/messages"
            || p.ends_with(":generateContent");
        if is_live {
            self.live_calls.fetch_add(1, Ordering::Relaxed);
            return (self.live)(req, i);
        }
        if req.method == "POST" {
            self.uploaded.fetch_add(req.body.len(), Ordering::Relaxed);
            let carries_items = p == "/v1/files"
                || p == "/v1/messages/batches"
                || p.ends_with(":batchGenerateContent");
            if carries_items {
                self.bodies.lock().unwrap().push(req.body.len());
            }
        }
        match self.provider {
            "openai" => self.openai(req),
            "anthropic" => self.anthropic(req),
            _ => self.gemini(req),
        }
    }

    /// Creates a batch; `Err` (the reply) when it is refused for its
    /// size at creation.
    fn create(
        &self,
        id: &str,
        items: Vec<(String, Value)>,
        tag: Option<String>,
    ) -> Result<(), Action> {
        let max = self.faults.lock().unwrap().max_items;
        let over_limit = max > 0 && items.len() > max;
        if over_limit && self.provider != "openai" {
            let body = if self.provider == "anthropic" {
                r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#
            } else {
                r#"{"error":{"code":413,"message":"Request payload size exceeds the limit.","status":"INVALID_ARGUMENT"}}"#
            };
            return Err(status(413, &[], body));
        }
        self.created.lock().unwrap().push(items.len());
        // A batch that fails for the provider's limit is not billed.
        if !over_limit {
            self.created_ids.lock().unwrap().push(items.iter().map(|(c, _)| c.clone()).collect());
        }
        let created_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.batches.lock().unwrap().insert(
            id.to_string(),
            Batch { items, polls: 0, cancelled: false, tag, created_at, over_limit },
        );
        Ok(())
    }

    /// The reply to a create request: stalled when the fault says so.
    fn created_reply(&self, reply: Value) -> Action {
        if self.faults.lock().unwrap().stall_create {
            self.stalled.fetch_add(1, Ordering::Relaxed);
            return Action::Stall(std::time::Duration::from_secs(600));
        }
        ok(reply.to_string())
    }

    /// Polls a batch once: whether it has ended.
    fn advance(&self, id: &str) -> Option<bool> {
        let mut batches = self.batches.lock().unwrap();
        let b = batches.get_mut(id)?;
        b.polls += 1;
        let hold = self.hold.load(Ordering::Relaxed);
        Some(b.cancelled || (!hold && b.polls >= self.faults.lock().unwrap().polls_to_end))
    }

    /// Each item's fate: Ok(success body) or Err("expired" | "errored" | "canceled").
    fn outcomes(&self, id: &str, live_path: &str) -> Vec<(String, Result<Value, &'static str>)> {
        let batches = self.batches.lock().unwrap();
        let Some(b) = batches.get(id) else { return vec![] };
        let f = self.faults.lock().unwrap();
        b.items
            .iter()
            .enumerate()
            .map(|(i, (custom_id, body))| {
                let n = i + 1;
                let fate = if b.cancelled {
                    Err("canceled")
                } else if f.expire_batches || (f.expire_every > 0 && n % f.expire_every == 0) {
                    Err("expired")
                } else if f.error_every > 0 && n % f.error_every == 0 {
                    Err("errored")
                } else {
                    Ok(self.answer(live_path, &body.to_string()))
                };
                (custom_id.clone(), fate)
            })
            .collect()
    }

    fn cancel(&self, id: &str) -> Action {
        self.cancels.lock().unwrap().push(id.to_string());
        if let Some(b) = self.batches.lock().unwrap().get_mut(id) {
            b.cancelled = true;
        }
        ok(json!({"id": id}).to_string())
    }

    fn openai(&self, req: &Recorded) -> Action {
        let p = req.path.as_str();
        if req.method == "POST" && p == "/v1/files" {
            if self.faults.lock().unwrap().stall_upload {
                self.stalled.fetch_add(1, Ordering::Relaxed);
                return Action::Stall(std::time::Duration::from_secs(600));
            }
            let id = self.id("file-");
            self.files.lock().unwrap().insert(id.clone(), multipart_file(&req.body));
            return ok(
                json!({"id": id, "object": "file", "purpose": "batch", "status": "processed"})
                    .to_string(),
            );
        }
        if req.method == "POST" && p == "/v1/batches" {
            let v = req.json();
            let file = v["input_file_id"].as_str().unwrap_or("");
            let content = self.files.lock().unwrap().get(file).cloned().unwrap_or_default();
            let items = content
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .map(|l| (l["custom_id"].as_str().unwrap_or("").to_string(), l["body"].clone()))
                .collect();
            let id = self.id("batch_");
            let tag = v["metadata"]["redjury_tag"].as_str().map(str::to_string);
            if let Err(refused) = self.create(&id, items, tag) {
                return refused;
            }
            return self.created_reply(
                json!({"id": id, "object": "batch", "status": "validating", "input_file_id": file, "metadata": v["metadata"]}),
            );
        }
        if req.method == "GET" && (p == "/v1/batches" || p.starts_with("/v1/batches?")) {
            let data: Vec<Value> = self
                .listed()
                .into_iter()
                .map(|(id, tag, created_at, _, _)| {
                    json!({"id": id, "object": "batch", "status": "in_progress", "created_at": created_at,
                           "metadata": {"client": "redjury", "redjury_tag": tag}})
                })
                .collect();
            return ok(json!({"object": "list", "data": data, "has_more": false}).to_string());
        }
        if let Some(rest) = p.strip_prefix("/v1/batches/") {
            if let Some(id) = rest.strip_suffix("/cancel") {
                return self.cancel(id);
            }
            return self.openai_status(rest);
        }
        if let Some(file) = p.strip_prefix("/v1/files/").and_then(|r| r.strip_suffix("/content")) {
            let content = self.files.lock().unwrap().get(file).cloned();
            let content = match content {
                Some(c) if file.ends_with("-out") && self.garbled() => Some(garble(&c)),
                other => other,
            };
            return match content {
                Some(c) => Action::Respond { status: 200, headers: vec![], body: c },
                None => status(
                    404,
                    &[],
                    r#"{"error":{"message":"No such file","type":"invalid_request_error"}}"#,
                ),
            };
        }
        status(404, &[], r#"{"error":{"message":"unknown route","type":"invalid_request_error"}}"#)
    }

    fn openai_status(&self, id: &str) -> Action {
        let Some(ended) = self.advance(id) else {
            return status(
                404,
                &[],
                r#"{"error":{"message":"No such batch","type":"invalid_request_error"}}"#,
            );
        };
        if !ended {
            return ok(json!({"id": id, "status": "in_progress", "request_counts": {"total": 0, "completed": 0, "failed": 0}}).to_string());
        }
        let over_limit = self.batches.lock().unwrap().get(id).is_some_and(|b| b.over_limit);
        if over_limit {
            return ok(json!({"id": id, "status": "failed", "errors": {"object": "list", "data": [
                {"code": "token_limit_exceeded", "message": "Enqueued token limit reached for gpt-test in organization org-test. Limit: 2,000,000 enqueued tokens. Please try again once some in_progress batches have been completed.", "param": null, "line": null}]},
                "request_counts": {"total": 0, "completed": 0, "failed": 0}}).to_string());
        }
        let (mut out, mut err) = (String::new(), String::new());
        let duplicate = self.faults.lock().unwrap().duplicate_errors;
        let outcomes = self.outcomes(id, "/v1/chat/completions");
        let (mut done, mut failed) = (0, 0);
        for (custom_id, fate) in &outcomes {
            match fate {
                Ok(body) => {
                    done += 1;
                    out.push_str(&json!({"id": "r", "custom_id": custom_id, "response": {"status_code": 200, "request_id": "q", "body": body}, "error": null}).to_string());
                    out.push('\n');
                    if duplicate {
                        err.push_str(&json!({"id": "r", "custom_id": custom_id, "response": null, "error": {"code": "server_error", "message": "duplicate"}}).to_string());
                        err.push('\n');
                    }
                }
                Err(kind) => {
                    failed += 1;
                    let line = match *kind {
                        "errored" => {
                            json!({"id": "r", "custom_id": custom_id, "response": {"status_code": 400, "request_id": "q", "body": {"error": {"message": "Invalid request", "type": "invalid_request_error"}}}, "error": null})
                        }
                        "expired" => {
                            json!({"id": "r", "custom_id": custom_id, "response": null, "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}})
                        }
                        _ => {
                            json!({"id": "r", "custom_id": custom_id, "response": null, "error": {"code": "batch_cancelled", "message": "cancelled"}})
                        }
                    };
                    err.push_str(&line.to_string());
                    err.push('\n');
                }
            }
        }
        let (out_id, err_id) = (format!("{id}-out"), format!("{id}-err"));
        self.files.lock().unwrap().insert(out_id.clone(), out);
        self.files.lock().unwrap().insert(err_id.clone(), err);
        let f = self.faults.lock().unwrap();
        let state = if f.expire_batches { "expired" } else { "completed" };
        ok(json!({"id": id, "status": state, "output_file_id": out_id, "error_file_id": err_id,
                  "request_counts": {"total": outcomes.len(), "completed": done, "failed": failed}})
        .to_string())
    }

    fn anthropic(&self, req: &Recorded) -> Action {
        let p = req.path.as_str();
        if req.method == "POST" && p == "/v1/messages/batches" {
            let v = req.json();
            let items = v["requests"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .map(|i| {
                            (i["custom_id"].as_str().unwrap_or("").to_string(), i["params"].clone())
                        })
                        .collect()
                })
                .unwrap_or_default();
            let id = self.id("msgbatch_");
            if let Err(refused) = self.create(&id, items, None) {
                return refused;
            }
            return self.created_reply(
                json!({"id": id, "type": "message_batch", "processing_status": "in_progress"}),
            );
        }
        if req.method == "GET"
            && (p == "/v1/messages/batches" || p.starts_with("/v1/messages/batches?"))
        {
            let data: Vec<Value> = self
                .listed()
                .into_iter()
                .map(|(id, _, created_at, n, ended)| {
                    let counts = if ended {
                        json!({"processing": 0, "succeeded": n, "errored": 0, "canceled": 0, "expired": 0})
                    } else {
                        json!({"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0})
                    };
                    json!({"id": id, "type": "message_batch", "created_at": rfc3339(created_at),
                           "processing_status": if ended { "ended" } else { "in_progress" },
                           "request_counts": counts})
                })
                .collect();
            let (first, last) =
                (data.first().map(|b| b["id"].clone()), data.last().map(|b| b["id"].clone()));
            return ok(
                json!({"data": data, "has_more": false, "first_id": first, "last_id": last})
                    .to_string(),
            );
        }
        let Some(rest) = p.strip_prefix("/v1/messages/batches/") else {
            return status(
                404,
                &[],
                r#"{"type":"error","error":{"type":"not_found_error","message":"unknown route"}}"#,
            );
        };
        if let Some(id) = rest.strip_suffix("/cancel") {
            return self.cancel(id);
        }
        if let Some(id) = rest.strip_suffix("/results") {
            let mut text = String::new();
            let duplicate = self.faults.lock().unwrap().duplicate_errors;
            for (custom_id, fate) in self.outcomes(id, "/v1/messages") {
                let answered = fate.is_ok();
                let result = match fate {
                    Ok(message) => json!({"type": "succeeded", "message": message}),
                    Err("errored") => {
                        json!({"type": "errored", "error": {"type": "error", "error": {"type": "invalid_request_error", "message": "Invalid request"}}})
                    }
                    Err("expired") => json!({"type": "expired"}),
                    Err(_) => json!({"type": "canceled"}),
                };
                text.push_str(&json!({"custom_id": custom_id, "result": result}).to_string());
                text.push('\n');
                if duplicate && answered {
                    let error = json!({"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": "duplicate"}}});
                    text.push_str(&json!({"custom_id": custom_id, "result": error}).to_string());
                    text.push('\n');
                }
            }
            if self.garbled() {
                text = garble(&text);
            }
            return Action::Respond { status: 200, headers: vec![], body: text };
        }
        let id = rest;
        let Some(ended) = self.advance(id) else {
            return status(
                404,
                &[],
                r#"{"type":"error","error":{"type":"not_found_error","message":"no batch"}}"#,
            );
        };
        let n = self.batches.lock().unwrap().get(id).map(|b| b.items.len()).unwrap_or(0);
        if !ended {
            return ok(json!({"id": id, "processing_status": "in_progress", "request_counts": {"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}, "results_url": null}).to_string());
        }
        let base = req.header("host").map(|h| format!("http://{h}")).unwrap_or_default();
        ok(json!({"id": id, "processing_status": "ended", "request_counts": {"processing": 0, "succeeded": n, "errored": 0, "canceled": 0, "expired": 0},
                  "results_url": format!("{base}/v1/messages/batches/{id}/results")}).to_string())
    }

    fn gemini(&self, req: &Recorded) -> Action {
        let p = req.path.as_str();
        if req.method == "POST" && p.ends_with(":batchGenerateContent") {
            let v = req.json();
            let items = v
                .pointer("/batch/inputConfig/requests/requests")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .map(|i| {
                            (
                                i["metadata"]["key"].as_str().unwrap_or("").to_string(),
                                i["request"].clone(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let id = self.id("batches/");
            let tag = v.pointer("/batch/displayName").and_then(Value::as_str).map(str::to_string);
            if let Err(refused) = self.create(&id, items, tag.clone()) {
                return refused;
            }
            return self.created_reply(
                json!({"name": id, "metadata": {"state": "BATCH_STATE_PENDING", "displayName": tag}}),
            );
        }
        if req.method == "GET" && (p == "/v1/batches" || p.starts_with("/v1/batches?")) {
            let operations: Vec<Value> = self
                .listed()
                .into_iter()
                .map(|(name, tag, _, _, _)| {
                    json!({"name": name, "metadata": {"displayName": tag, "state": "BATCH_STATE_RUNNING"}})
                })
                .collect();
            return ok(json!({"operations": operations}).to_string());
        }
        let Some(name) = p.strip_prefix("/v1/") else {
            return status(
                404,
                &[],
                r#"{"error":{"code":404,"message":"unknown route","status":"NOT_FOUND"}}"#,
            );
        };
        if let Some(id) = name.strip_suffix(":cancel") {
            return self.cancel(id);
        }
        let Some(ended) = self.advance(name) else {
            return status(
                404,
                &[],
                r#"{"error":{"code":404,"message":"no batch","status":"NOT_FOUND"}}"#,
            );
        };
        if !ended {
            return ok(
                json!({"name": name, "metadata": {"state": "BATCH_STATE_RUNNING"}, "done": false})
                    .to_string(),
            );
        }
        let garbled = self.garbled();
        let omit = self.faults.lock().unwrap().omit_keys || garbled;
        let mut responses: Vec<Value> = self
            .outcomes(name, "/v1/models/m:generateContent")
            .into_iter()
            .map(|(key, fate)| {
                let mut r = match fate {
                    Ok(r) => json!({"response": r, "metadata": {"key": key}}),
                    Err(kind) => json!({"error": {"code": 4, "message": format!("item {kind}")}, "metadata": {"key": key}}),
                };
                if omit {
                    r.as_object_mut().map(|o| o.remove("metadata"));
                }
                r
            })
            .collect();
        if garbled {
            responses.pop();
        }
        let f = self.faults.lock().unwrap();
        let state = if f.expire_batches { "BATCH_STATE_EXPIRED" } else { "BATCH_STATE_SUCCEEDED" };
        ok(json!({"name": name, "done": true, "metadata": {"state": state,
            "batchStats": {"requestCount": responses.len().to_string()},
            "output": {"inlinedResponses": {"inlinedResponses": responses}}}})
        .to_string())
    }
}

impl BatchMock {
    /// (id, tag, created_at, items, ended) of every batch, newest first.
    fn listed(&self) -> Vec<(String, Option<String>, u64, usize, bool)> {
        let batches = self.batches.lock().unwrap();
        let polls = self.faults.lock().unwrap().polls_to_end;
        let mut out: Vec<_> = batches
            .iter()
            .map(|(id, b)| {
                let ended = b.cancelled || b.polls >= polls;
                (id.clone(), b.tag.clone(), b.created_at, b.items.len(), ended)
            })
            .collect();
        out.sort_by(|a, b| b.2.cmp(&a.2).then(b.0.cmp(&a.0)));
        out
    }
}

/// A results file whose last line is cut in half, as a dropped download
/// would leave it.
fn garble(text: &str) -> String {
    let trimmed = text.trim_end_matches('\n');
    let last = trimmed.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let cut = last + (trimmed.len() - last) / 2;
    let cut = (cut..=trimmed.len()).find(|&i| trimmed.is_char_boundary(i)).unwrap_or(trimmed.len());
    format!("{}\n", &trimmed[..cut])
}

/// Unix seconds as Anthropic writes times: RFC 3339, UTC.
fn rfc3339(secs: u64) -> String {
    format!("{}Z", utc_seconds(secs as i64))
}

/// The file part of a multipart/form-data body.
fn multipart_file(body: &str) -> String {
    let Some(start) = body.find("filename=") else { return String::new() };
    let rest = &body[start..];
    let Some(head_end) = rest.find("\r\n\r\n") else { return String::new() };
    let content = &rest[head_end + 4..];
    let end = content.rfind("\r\n--").unwrap_or(content.len());
    content[..end].to_string()
}
