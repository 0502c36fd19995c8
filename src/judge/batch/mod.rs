//! Provider batch APIs: calls not in the cache go to each judge's
//! provider as batches, at the batch price, and come back through the
//! same parsing, validation, abstention rules and cache as live answers.
//!
//! Owns: splitting calls into batches under each provider's limits,
//! recording every batch in the cache before anything waits on it,
//! polling, collecting results, and resuming the batches an interrupted
//! run left behind. Must never submit a call that an earlier run's batch
//! still carries (a rerun polls that batch instead), never send the key
//! anywhere but the judge's own endpoint, and never count a batch failure
//! as a verdict: an item that did not come back is reported with the
//! reason, for the caller's fallback.

mod anthropic;
mod gemini;
mod openai;
pub mod wire;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde_json::Value;

use super::config::Provider;
use super::{Auth, Channel, Judge, provider};
use crate::cache::{BatchRecord, BatchState, Cache, CallKey};
use crate::prompt::Prompt;
use wire::{Api, Filling, Payload, Transient, WireError};

/// Where a batch is, by the provider's word.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Queued or running.
    Running,
    /// Done (completed, expired or cancelled): results can be read.
    Ended,
    /// Ended without results (the input failed validation).
    Failed(String),
}

/// One poll's answer.
#[derive(Debug, Clone)]
pub struct Status {
    /// Where the batch is.
    pub phase: Phase,
    /// The provider's own counts, in words.
    pub counts: String,
    /// The provider's reply (results are found from it).
    pub detail: Value,
}

/// What came back for one item.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemResult {
    /// A reply body, as a live call would have received it.
    Reply(String),
    /// The provider could not answer it.
    Errored(String),
    /// The batch window closed before it ran.
    Expired,
    /// The batch was cancelled before it ran.
    Canceled,
}

/// How one judge's batches stand.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchReport {
    /// Batches submitted or resumed.
    pub batches: usize,
    /// Of which ended and collected.
    pub ended: usize,
    /// Calls sent by batch (this run's, resumed ones included).
    pub calls: usize,
    /// Calls answered so far.
    pub answered: usize,
    /// Calls that will not be answered by batch.
    pub failed: usize,
    /// The provider's counts for the batch polled last.
    pub provider: String,
}

/// Something to tell as batches move.
pub trait BatchProgress: Send + Sync {
    /// `judge`'s batches stand as `report` says.
    fn batch(&self, judge: &str, report: &BatchReport);
}

/// Calls a batch did not answer: digest → why.
pub type Unanswered = HashMap<String, String>;

/// A poll that fails this many times in a row gives the batch up for this
/// run (it stays recorded: the next run polls it again).
const POLL_FAILURES: u32 = 10;

/// One judge's calls on their way through batches.
pub struct Plan<'j> {
    judge: &'j Judge,
    api: Api<'j>,
    /// This run's calls not in the cache: digest → (rubric ids, key). Only
    /// the ids are kept (to validate answers): prompts are large, and a
    /// run's batches may carry tens of thousands.
    calls: HashMap<String, (Arc<[String]>, CallKey)>,
    /// Batches not yet collected.
    open: Vec<String>,
    failed: Unanswered,
    poll_failures: HashMap<String, u32>,
    report: BatchReport,
}

impl Judge {
    /// The batch item for one call (custom id = the call's digest).
    fn batch_item(&self, custom_id: &str, prompt: &Prompt) -> Value {
        let body = provider::body(&self.config, prompt);
        match self.config.provider {
            Provider::Openai => openai::item(custom_id, body),
            Provider::Anthropic => anthropic::item(custom_id, body),
            Provider::Gemini => gemini::item(custom_id, body),
        }
    }

    fn batch_api(&self) -> Api<'_> {
        let key = match &self.auth {
            Auth::Key(k) => Some(k.as_str()),
            _ => None,
        };
        Api {
            http: &self.http,
            headers: provider::auth_headers(&self.config, key),
            max_bytes: 1 << 31,
            sent: AtomicU64::new(0),
        }
    }

    /// Submits the calls not in the cache and not carried by an earlier
    /// run's batch; resumes those that are.
    pub async fn submit_batches(&self, calls: Vec<(Prompt, u32)>, cache: &Arc<Cache>) -> Plan<'_> {
        let mut plan = Plan {
            judge: self,
            api: self.batch_api(),
            calls: HashMap::new(),
            open: Vec::new(),
            failed: HashMap::new(),
            poll_failures: HashMap::new(),
            report: BatchReport::default(),
        };
        let mut prompts: HashMap<String, &Prompt> = HashMap::new();
        for (prompt, repeat) in &calls {
            let key = self.call_key(prompt, *repeat);
            let digest = key.digest();
            let k = key.clone();
            if matches!(cache.blocking(move |c| c.get_response(&k)).await, Ok(Some(_))) {
                continue;
            }
            let ids: Arc<[String]> = prompt.rubric_ids.clone().into();
            prompts.insert(digest.clone(), prompt);
            plan.calls.insert(digest, (ids, key));
        }
        plan.report.calls = plan.calls.len();
        if plan.calls.is_empty() {
            return plan;
        }
        if let Some(reason) = self.unavailable() {
            plan.fail_all(&reason);
            return plan;
        }
        let fresh = plan.resume(cache).await;
        plan.submit(fresh, &prompts, cache).await;
        plan
    }

    /// Why no batch can be sent for this judge, if none can.
    fn unavailable(&self) -> Option<String> {
        if let Auth::Missing { env } = &self.auth {
            return Some(format!("no API key: set {env}"));
        }
        self.stopped().map(|s| format!("judge stopped: {s}"))
    }

    /// Cancels one of this judge's batches at the provider.
    pub async fn cancel_batch(&self, id: &str) -> Result<(), WireError> {
        let api = self.batch_api();
        match self.config.provider {
            Provider::Openai => openai::cancel(&api, &self.config, id).await,
            Provider::Anthropic => anthropic::cancel(&api, &self.config, id).await,
            Provider::Gemini => gemini::cancel(&api, &self.config, id).await,
        }
    }
}

impl Plan<'_> {
    fn fail_all(&mut self, reason: &str) {
        for digest in self.calls.keys() {
            self.failed.insert(digest.clone(), reason.to_string());
        }
        self.report.failed = self.failed.len();
    }

    /// Finds the calls an earlier run's batch still carries; returns the
    /// others, to submit.
    async fn resume(&mut self, cache: &Arc<Cache>) -> Vec<String> {
        let base = self.judge.config.base_url.clone();
        let mut fresh = Vec::new();
        for digest in self.calls.keys() {
            let (d, b) = (digest.clone(), base.clone());
            match cache.blocking(move |c| c.open_batch_of(&d, &b)).await {
                Ok(Some(id)) => {
                    if !self.open.contains(&id) {
                        tracing::info!(judge = %self.judge.config.name, "resuming batch {id}");
                        self.open.push(id);
                    }
                }
                _ => fresh.push(digest.clone()),
            }
        }
        fresh.sort();
        self.report.batches = self.open.len();
        fresh
    }

    /// Submits `digests` in batches no larger than the judge's limits,
    /// each body written once, item by item.
    async fn submit(
        &mut self,
        digests: Vec<String>,
        prompts: &HashMap<String, &Prompt>,
        cache: &Arc<Cache>,
    ) {
        let envelope = match self.judge.config.provider {
            Provider::Openai => openai::envelope(),
            Provider::Anthropic => anthropic::envelope(),
            Provider::Gemini => gemini::envelope(),
        };
        let max_n = self.judge.config.batch_max_requests as usize;
        let max_bytes = self.judge.config.batch_max_bytes as usize;
        let mut body = Filling::start(&envelope);
        let mut carried: Vec<String> = Vec::new();
        for digest in digests {
            let Some(prompt) = prompts.get(&digest) else { continue };
            let item =
                serde_json::to_vec(&self.judge.batch_item(&digest, prompt)).unwrap_or_default();
            if envelope.overhead(1) + item.len() > max_bytes {
                let reason = format!(
                    "the request ({} bytes) is larger than a batch may be (batch_max_bytes)",
                    item.len()
                );
                self.failed.insert(digest, reason);
                continue;
            }
            let after = body.len() + envelope.separator.len() + item.len() + envelope.suffix.len();
            let full = body.items() >= max_n || after > max_bytes;
            if !body.is_empty() && full {
                let done = std::mem::replace(&mut body, Filling::start(&envelope));
                self.send(done.finish(&envelope), std::mem::take(&mut carried), cache).await;
            }
            body.push(&item);
            carried.push(digest);
        }
        if !body.is_empty() {
            self.send(body.finish(&envelope), carried, cache).await;
        }
        self.report.batches = self.open.len();
        self.report.failed = self.failed.len();
    }

    /// Submits one batch and records it before anything waits on it.
    async fn send(&mut self, body: Payload, carried: Vec<String>, cache: &Arc<Cache>) {
        let judge = self.judge;
        let submitted = match judge.config.provider {
            Provider::Openai => openai::submit(&self.api, &judge.config, body).await,
            Provider::Anthropic => anthropic::submit(&self.api, &judge.config, body).await,
            Provider::Gemini => gemini::submit(&self.api, &judge.config, body).await,
        };
        let (id, input_file) = match submitted {
            Ok(s) => s,
            Err(e) => {
                let maybe = if e.transient == Transient::Yes {
                    " (the provider may have created it all the same: `redjury batches` cannot see it, the provider's console can)"
                } else {
                    ""
                };
                tracing::error!(judge = %judge.config.name, "batch submission failed: {e}{maybe}");
                for digest in carried {
                    self.failed.insert(digest, format!("batch submission failed: {e}"));
                }
                return;
            }
        };
        let record = BatchRecord {
            id: id.clone(),
            judge: judge.config.name.clone(),
            provider: judge.config.provider.as_str().into(),
            base_url: judge.config.base_url.clone(),
            model: judge.config.model.clone(),
            state: BatchState::Submitted,
            items: carried.len() as u64,
            input_file,
            note: None,
            created_at: crate::cache::unix_now(),
        };
        let keyed: Vec<(String, CallKey)> = carried
            .iter()
            .filter_map(|d| self.calls.get(d).map(|(_, k)| (d.clone(), k.clone())))
            .collect();
        let recorded = cache.blocking(move |c| c.record_batch(&record, &keyed)).await;
        if let Err(e) = recorded {
            tracing::error!(judge = %judge.config.name, "batch {id} could not be recorded ({e}); it is polled in this run only");
        }
        tracing::info!(judge = %judge.config.name, "submitted batch {id} with {} calls", carried.len());
        self.open.push(id);
    }

    /// Polls every open batch once and collects those that ended. True
    /// when none is left open.
    pub async fn poll_once(&mut self, cache: &Arc<Cache>) -> bool {
        for id in self.open.clone() {
            let judge = self.judge;
            let polled = match judge.config.provider {
                Provider::Openai => openai::poll(&self.api, &judge.config, &id).await,
                Provider::Anthropic => anthropic::poll(&self.api, &judge.config, &id).await,
                Provider::Gemini => gemini::poll(&self.api, &judge.config, &id).await,
            };
            match polled {
                Ok(status) => {
                    self.poll_failures.remove(&id);
                    self.report.provider = format!("{id}: {}", status.counts);
                    match &status.phase {
                        Phase::Running => {}
                        Phase::Ended => self.collect(&id, &status, cache).await,
                        Phase::Failed(why) => {
                            self.fail_items(&id, why, cache).await;
                            self.close(&id, Some(why.clone()), cache).await;
                        }
                    }
                }
                Err(e) => self.poll_failed(&id, e, cache).await,
            }
        }
        self.report.failed = self.failed.len();
        self.open.is_empty()
    }

    async fn poll_failed(&mut self, id: &str, e: WireError, cache: &Arc<Cache>) {
        let n = self.poll_failures.entry(id.to_string()).or_insert(0);
        *n += 1;
        tracing::warn!(judge = %self.judge.config.name, "polling batch {id}: {e}");
        if e.transient == Transient::No || *n >= POLL_FAILURES {
            // Left recorded as submitted: the next run polls it again.
            let why = format!("batch {id} could not be polled: {e}");
            self.fail_items(id, &why, cache).await;
            self.open.retain(|o| o != id);
        }
    }

    async fn items_of(&self, id: &str, cache: &Arc<Cache>) -> Vec<(String, CallKey)> {
        let owned = id.to_string();
        cache.blocking(move |c| c.batch_items(&owned)).await.unwrap_or_default()
    }

    /// Reads an ended batch's results into the cache.
    async fn collect(&mut self, id: &str, status: &Status, cache: &Arc<Cache>) {
        let judge = self.judge;
        let results = match judge.config.provider {
            Provider::Openai => openai::results(&self.api, &judge.config, status).await,
            Provider::Anthropic => anthropic::results(&self.api, &judge.config, id, status).await,
            Provider::Gemini => gemini::results(&self.api, &judge.config, status).await,
        };
        let results = match results {
            Ok(r) => r,
            Err(e) => return self.poll_failed(id, e, cache).await,
        };
        let items = self.items_of(id, cache).await;
        let mut by_id: BTreeMap<String, ItemResult> = results.into_iter().collect();
        for (custom_id, key) in items {
            let digest = key.digest();
            let outcome = by_id.remove(&custom_id);
            let reason = match outcome {
                Some(ItemResult::Reply(body)) => self.store(&key, &body, cache).await,
                Some(ItemResult::Errored(m)) => Some(format!("the batch item errored: {m}")),
                Some(ItemResult::Expired) => Some("the batch expired before this call ran".into()),
                Some(ItemResult::Canceled) => {
                    Some("the batch was cancelled before this call ran".into())
                }
                None => Some(format!("batch {id} ended without a result for this call")),
            };
            match reason {
                Some(r) if self.calls.contains_key(&digest) => {
                    self.failed.insert(digest, r);
                }
                Some(_) => {}
                None => self.report.answered += 1,
            }
        }
        self.close(id, Some(status.counts.clone()), cache).await;
    }

    /// Parses and stores one reply; `Some(reason)` when it is unusable.
    async fn store(&self, key: &CallKey, body: &str, cache: &Arc<Cache>) -> Option<String> {
        let ids: Option<Arc<[String]>> = match self.calls.get(&key.digest()) {
            Some((ids, _)) => Some(ids.clone()),
            None => {
                let hash = key.prompt_hash.clone();
                let prompt = cache.blocking(move |c| c.get_prompt(&hash)).await.ok().flatten();
                prompt.map(|p| p.rubric_ids.into())
            }
        };
        let Some(ids) = ids else { return Some("its prompt is not in the cache".into()) };
        match self.judge.answer(&ids, body, Channel::Batch) {
            Ok(stored) => {
                self.judge.counters.batch_calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (k, s) = (key.clone(), stored);
                if let Err(e) = cache.blocking(move |c| c.keep_response(&k, &s)).await {
                    tracing::error!("a batch answer could not be stored or journalled: {e}");
                }
                None
            }
            Err(e) => Some(e.message().to_string()),
        }
    }

    /// Every call of batch `id` that this run asked for fails with `why`.
    async fn fail_items(&mut self, id: &str, why: &str, cache: &Arc<Cache>) {
        for (digest, _) in self.items_of(id, cache).await {
            if self.calls.contains_key(&digest) {
                self.failed.insert(digest, why.to_string());
            }
        }
    }

    /// Marks a batch collected (nothing more will come of it).
    async fn close(&mut self, id: &str, note: Option<String>, cache: &Arc<Cache>) {
        let owned = id.to_string();
        let _ = cache
            .blocking(move |c| c.set_batch_state(&owned, BatchState::Collected, note.as_deref()))
            .await;
        self.open.retain(|o| o != id);
        self.report.ended += 1;
    }

    /// How the batches stand.
    pub fn report(&self) -> &BatchReport {
        &self.report
    }

    /// The judge's name.
    pub fn judge_name(&self) -> &str {
        &self.judge.config.name
    }

    /// How often to poll.
    pub fn poll_every(&self) -> Duration {
        Duration::from_millis(self.judge.config.batch_poll_ms)
    }

    /// Bytes uploaded so far.
    pub fn bytes_sent(&self) -> u64 {
        self.api.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// This run's calls that no batch answered, with why.
    pub fn unanswered(self) -> Unanswered {
        self.failed
    }
}

/// Why a recorded batch could not be cancelled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CancelError {
    /// The cache has no such batch.
    #[error("no batch {0} in this cache (`redjury batches` lists them)")]
    Unknown(String),
    /// Its results are already collected.
    #[error("batch {0} has ended and its results are collected: nothing to cancel")]
    Collected(String),
    /// No judge of the panel sends to the batch's endpoint.
    #[error(
        "batch {id} belongs to judge '{judge}' at {base_url}; no judge of this panel has that name and endpoint (pass the panel the run used)"
    )]
    #[allow(missing_docs)]
    NoJudge { id: String, judge: String, base_url: String },
    /// The provider refused or could not be reached.
    #[error("cancelling batch {id}: {message}")]
    #[allow(missing_docs)]
    Provider { id: String, message: String },
    /// The cache could not be read or written.
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
}

/// Asks the provider to cancel a recorded batch. It stays recorded: the
/// next run collects what it answered before the cancel (paid for) and
/// treats the rest as unanswered.
pub async fn cancel(cache: &Cache, judges: &[Arc<Judge>], id: &str) -> Result<(), CancelError> {
    let record = cache.batch(id)?.ok_or_else(|| CancelError::Unknown(id.to_string()))?;
    if record.state == BatchState::Collected {
        return Err(CancelError::Collected(id.to_string()));
    }
    let judge = judges
        .iter()
        .find(|j| j.config.name == record.judge && j.config.base_url == record.base_url)
        .ok_or_else(|| CancelError::NoJudge {
            id: id.to_string(),
            judge: record.judge.clone(),
            base_url: record.base_url.clone(),
        })?;
    judge
        .cancel_batch(id)
        .await
        .map_err(|e| CancelError::Provider { id: id.to_string(), message: e.message })?;
    cache.set_batch_state(id, BatchState::Submitted, Some("cancel requested"))?;
    Ok(())
}

/// Polls every plan until all their batches are collected.
pub async fn wait(plans: &mut [Plan<'_>], cache: &Arc<Cache>, progress: &dyn BatchProgress) {
    loop {
        let mut done = true;
        for plan in plans.iter_mut() {
            if !plan.open.is_empty() {
                done &= plan.poll_once(cache).await;
            }
            progress.batch(plan.judge_name(), plan.report());
        }
        if done {
            return;
        }
        let every = plans.iter().filter(|p| !p.open.is_empty()).map(Plan::poll_every).min();
        tokio::time::sleep(every.unwrap_or(Duration::from_secs(1))).await;
    }
}
