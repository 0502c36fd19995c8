//! Provider batch APIs: calls not in the cache go to each judge's
//! provider as batches, at the batch price, and come back through the
//! same parsing, validation, abstention rules and cache as live answers.
//!
//! Owns: splitting calls into batches under each provider's limits (and
//! again when the provider refuses one for its size), recording every
//! batch as an intent before it is sent and under the provider's id once
//! accepted, finding the batch of an intent an interrupted run left,
//! polling, collecting results, and resuming the batches an interrupted
//! run left behind. Must never submit a call that an earlier run's batch
//! (or intent) still carries, never mark a batch collected while one of
//! its items is unaccounted for, never send the key anywhere but the
//! judge's own endpoint, and never count a batch failure as a verdict: an
//! item that did not come back is reported with the reason, for the
//! caller's fallback — except when the provider may have answered it
//! ([`Leftover::Pending`]): that call is not paid for again in this run.

mod anthropic;
mod gemini;
mod openai;
pub(crate) mod wire;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::config::Provider;
use super::{Auth, Channel, Judge, provider};
use crate::cache::{BatchItem, BatchRecord, BatchState, Cache, CallKey};
use crate::prompt::Prompt;
use wire::{Api, Envelope, Filling, Payload, Transient, WireError};

/// Where a batch is, by the provider's word.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Phase {
    /// Queued or running.
    Running,
    /// Done (completed, expired or cancelled): results can be read.
    Ended,
    /// Ended without results (the input failed validation).
    Failed(String),
    /// Ended without results because it is over a limit smaller batches
    /// pass (OpenAI's enqueued-token limit): its calls are sent again in
    /// halves, one part after another.
    Refused(String),
}

/// One poll's answer.
#[derive(Debug, Clone)]
pub(crate) struct Status {
    /// Where the batch is.
    pub phase: Phase,
    /// The provider's own counts, in words.
    pub counts: String,
    /// The provider's reply (results are found from it).
    pub detail: Value,
}

/// What came back for one item.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ItemResult {
    /// A reply body, as a live call would have received it.
    Reply(String),
    /// The provider could not answer it.
    Errored(String),
    /// The batch window closed before it ran.
    Expired,
    /// The batch was cancelled before it ran.
    Canceled,
}

/// What a results download held.
#[derive(Debug, Default)]
pub(crate) struct Results {
    /// Each result with the custom id its line carries (`None` when it
    /// carries none), in the provider's order.
    pub items: Vec<(Option<String>, ItemResult)>,
    /// Lines that could not be read (cut short, not JSON, no custom id).
    pub unreadable: usize,
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

/// A call no batch answered in this run.
#[derive(Debug, Clone, PartialEq)]
pub enum Leftover {
    /// The provider will not answer it by batch (errored, expired, too
    /// large, never sent): the caller's fallback applies.
    Unanswered(String),
    /// The provider may have answered it or may still (a batch whose
    /// creation could not be confirmed, results that could not be read):
    /// it is not paid for again in this run; a later run collects it.
    Pending(String),
}

impl Leftover {
    /// Why.
    pub fn reason(&self) -> &str {
        match self {
            Leftover::Unanswered(r) | Leftover::Pending(r) => r,
        }
    }
}

/// Calls no batch answered: digest → why.
pub(crate) type Unanswered = HashMap<String, Leftover>;

/// A poll that fails this many times in a row gives the batch up for this
/// run (it stays recorded: the next run polls it again).
const POLL_FAILURES: u32 = 10;

/// A results download that leaves items unaccounted for (unreadable
/// lines) is tried this many times before the batch is left for the next
/// run.
const DOWNLOADS: u32 = 3;

/// Pages of a provider's batch list read when looking for an intent's
/// batch, and how far back (and forward, for clock skew) in time.
const LIST_PAGES: usize = 10;
const LOOKBACK_SECS: i64 = 15 * 60;

/// An intent another live process recorded this recently is its own
/// submission in flight, not an orphan.
const INTENT_IN_FLIGHT_SECS: i64 = 10 * 60;

/// What the lookup of an intent's batch goes by.
pub(crate) struct Lookup<'a> {
    tag: &'a str,
    created_at: i64,
    items: usize,
    custom_ids: &'a HashSet<String>,
    /// Batch ids the cache already records (another intent's, say).
    known: &'a HashSet<String>,
}

/// One of this run's calls.
struct Call {
    ids: Arc<[String]>,
    key: CallKey,
    /// Estimated prompt tokens, for the cost of a live fallback.
    tokens: u64,
}

/// One judge's calls on their way through batches.
pub struct Plan<'j> {
    judge: &'j Judge,
    api: Api<'j>,
    /// This run's calls not in the cache, by digest. Only the ids are kept
    /// (to validate answers): prompts are large, and a run's batches may
    /// carry tens of thousands; a call sent again is rebuilt from the
    /// prompt in the cache.
    calls: HashMap<String, Call>,
    /// Batches not yet collected.
    open: Vec<String>,
    /// Calls to send once an open batch ends (halves of a batch refused
    /// for the tokens in flight).
    deferred: VecDeque<Vec<String>>,
    failed: Unanswered,
    poll_failures: HashMap<String, u32>,
    report: BatchReport,
}

/// A batch item ready to send: its digest and its serialised request.
type Packed = (String, Vec<u8>);

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
    /// run's batch; resumes those that are, first finding the batches of
    /// the intents an interrupted run left.
    pub async fn submit_batches(&self, calls: Vec<(Prompt, u32)>, cache: &Arc<Cache>) -> Plan<'_> {
        let mut plan = Plan {
            judge: self,
            api: self.batch_api(),
            calls: HashMap::new(),
            open: Vec::new(),
            deferred: VecDeque::new(),
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
            plan.calls.insert(digest, Call { ids, key, tokens: prompt.estimated_tokens() });
        }
        plan.report.calls = plan.calls.len();
        if plan.calls.is_empty() {
            return plan;
        }
        if let Some(reason) = self.unavailable() {
            plan.fail_all(&reason);
            return plan;
        }
        plan.reconcile(cache).await;
        let fresh = plan.resume(cache).await;
        let packed = fresh
            .into_iter()
            .filter_map(|d| {
                let item = serde_json::to_vec(&self.batch_item(&d, prompts.get(&d)?)).ok()?;
                Some((d, item))
            })
            .collect();
        plan.submit(packed, cache).await;
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

    /// A tag no other batch has: this process's lease owner name, made
    /// safe for every provider's metadata, and a counter.
    fn batch_tag(&self) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let owner = crate::hash::sha256_hex(&self.owner);
        format!("redjury-{}-{n}", owner.get(..16).unwrap_or(&owner))
    }
}

impl Plan<'_> {
    fn fail_all(&mut self, reason: &str) {
        for digest in self.calls.keys() {
            self.failed.insert(digest.clone(), Leftover::Unanswered(reason.to_string()));
        }
        self.report.failed = self.failed.len();
    }

    fn fail(&mut self, digests: impl IntoIterator<Item = String>, why: &Leftover) {
        for d in digests.into_iter().filter(|d| self.calls.contains_key(d)) {
            self.failed.insert(d, why.clone());
        }
    }

    /// Finds, at the provider, the batch of every intent this judge's
    /// interrupted runs left: adopted when found, forgotten when the
    /// provider never created it. An intent another live process recorded
    /// moments ago is its submission in flight, and left alone.
    async fn reconcile(&mut self, cache: &Arc<Cache>) {
        let recorded = cache.blocking(|c| c.batches()).await.unwrap_or_default();
        let known: HashSet<String> = recorded.iter().map(|b| b.id.clone()).collect();
        let config = &self.judge.config;
        let intents = recorded.into_iter().filter(|b| {
            b.state == BatchState::Intent && b.judge == config.name && b.base_url == config.base_url
        });
        for intent in intents {
            let owner = intent.owner.as_deref().unwrap_or("");
            let recent = crate::cache::unix_now() - intent.created_at < INTENT_IN_FLIGHT_SECS;
            if owner != self.judge.owner && recent && !crate::cache::owner_is_gone(owner) {
                continue;
            }
            let (id, cache2) = (intent.id.clone(), cache.clone());
            let items = cache2.blocking(move |c| c.batch_items(&id)).await.unwrap_or_default();
            match self.find(&intent, &items, &known).await {
                Ok(Some(found)) => {
                    tracing::info!(judge = %config.name, "found batch {found}, which an interrupted run submitted");
                    self.adopt(&intent.id, &found, None, cache).await;
                }
                Ok(None) => self.forget(&intent.id, cache).await,
                Err(e) => tracing::warn!(judge = %config.name,
                    "could not tell whether the provider has the batch an interrupted run began to submit ({e}); its calls wait for the next run"),
            }
        }
    }

    /// Looks the intent's batch up at the provider.
    async fn find(
        &self,
        intent: &BatchRecord,
        items: &[BatchItem],
        known: &HashSet<String>,
    ) -> Result<Option<String>, WireError> {
        let custom_ids: HashSet<String> = items.iter().map(|i| i.custom_id.clone()).collect();
        let lookup = Lookup {
            tag: intent.tag.as_deref().unwrap_or(""),
            created_at: intent.created_at,
            items: items.len(),
            custom_ids: &custom_ids,
            known,
        };
        let config = &self.judge.config;
        match config.provider {
            Provider::Openai => openai::find(&self.api, config, &lookup).await,
            Provider::Anthropic => anthropic::find(&self.api, config, &lookup).await,
            Provider::Gemini => gemini::find(&self.api, config, &lookup).await,
        }
    }

    /// Records an intent's batch under the provider's id and polls it.
    async fn adopt(&mut self, intent: &str, id: &str, file: Option<String>, cache: &Arc<Cache>) {
        let (i, b) = (intent.to_string(), id.to_string());
        let adopted = cache.blocking(move |c| c.adopt_intent(&i, &b, file.as_deref())).await;
        if let Err(e) = adopted {
            // The intent stays: the next run finds the batch by its tag.
            tracing::error!(judge = %self.judge.config.name, "batch {id} could not be recorded ({e}); it is polled in this run, and the next run finds it by its tag");
        }
        if !self.open.iter().any(|o| o == id) {
            self.open.push(id.to_string());
        }
    }

    /// Finds the calls an earlier run's batch still carries; returns the
    /// others, to submit. A call an unresolved intent carries is pending.
    async fn resume(&mut self, cache: &Arc<Cache>) -> Vec<String> {
        let base = self.judge.config.base_url.clone();
        let mut fresh = Vec::new();
        let mut pending = Vec::new();
        for digest in self.calls.keys() {
            let (d, b) = (digest.clone(), base.clone());
            match cache.blocking(move |c| c.open_batch_of(&d, &b)).await {
                Ok(Some((id, BatchState::Submitted))) => {
                    if !self.open.contains(&id) {
                        tracing::info!(judge = %self.judge.config.name, "resuming batch {id}");
                        self.open.push(id);
                    }
                }
                Ok(Some(_)) => pending.push(digest.clone()),
                _ => fresh.push(digest.clone()),
            }
        }
        let why = Leftover::Pending(
            "a batch carrying this call is being submitted by another process, or could not be confirmed at the provider; it is not sent again (run again to collect it)".into(),
        );
        self.fail(pending, &why);
        fresh.sort();
        self.report.batches = self.open.len();
        fresh
    }

    fn envelope(&self, tag: &str) -> Envelope {
        match self.judge.config.provider {
            Provider::Openai => openai::envelope(),
            Provider::Anthropic => anthropic::envelope(),
            Provider::Gemini => gemini::envelope(tag),
        }
    }

    /// Submits `calls` in batches no larger than the judge's limits; a
    /// batch the provider refuses for its size is split in halves and sent
    /// again, down to single calls, which cannot be batched.
    async fn submit(&mut self, calls: Vec<Packed>, cache: &Arc<Cache>) {
        let mut work: Vec<Vec<Packed>> = self.pack(calls);
        work.reverse();
        while let Some(group) = work.pop() {
            if let Some(refused) = self.send(group, cache).await {
                let mut group = refused;
                let half = group.split_off(group.len() / 2);
                work.push(half);
                work.push(group);
            }
        }
        self.report.batches = self.open.len();
        self.report.failed = self.failed.len();
    }

    /// Groups calls into batches under the judge's request and byte limits.
    fn pack(&mut self, calls: Vec<Packed>) -> Vec<Vec<Packed>> {
        let envelope = self.envelope("redjury-0000000000000000-0000000000");
        let max_n = self.judge.config.batch_max_requests as usize;
        let max_bytes = self.judge.config.batch_max_bytes as usize;
        let mut groups: Vec<Vec<Packed>> = Vec::new();
        let (mut current, mut bytes): (Vec<Packed>, usize) = (Vec::new(), envelope.overhead(0));
        for (digest, item) in calls {
            if envelope.overhead(1) + item.len() > max_bytes {
                let reason = format!(
                    "the request ({} bytes) is larger than a batch may be (batch_max_bytes): it cannot be batched",
                    item.len()
                );
                self.failed.insert(digest, Leftover::Unanswered(reason));
                continue;
            }
            let after = bytes + envelope.separator.len() + item.len();
            if !current.is_empty() && (current.len() >= max_n || after > max_bytes) {
                groups.push(std::mem::take(&mut current));
                bytes = envelope.overhead(0);
            }
            bytes += item.len() + if current.is_empty() { 0 } else { envelope.separator.len() };
            current.push((digest, item));
        }
        if !current.is_empty() {
            groups.push(current);
        }
        groups
    }

    /// Records one batch as an intent, sends it, and records it under the
    /// provider's id. Returns the calls back when the provider refused the
    /// batch for its size and it can be split.
    async fn send(&mut self, group: Vec<Packed>, cache: &Arc<Cache>) -> Option<Vec<Packed>> {
        let judge = self.judge;
        let tag = judge.batch_tag();
        let intent = BatchRecord::intent_id(&tag);
        if let Err(e) = self.record_intent(&intent, &tag, &group, cache).await {
            let why = format!(
                "the batch could not be recorded before sending it, so it was not sent: {e}"
            );
            self.fail(group.into_iter().map(|(d, _)| d), &Leftover::Unanswered(why));
            return None;
        }
        let envelope = self.envelope(&tag);
        let mut body = Filling::start(&envelope);
        for (_, item) in &group {
            body.push(item);
        }
        let body = body.finish(&envelope);
        match self.create(body, &tag).await {
            Ok((id, input_file)) => {
                tracing::info!(judge = %judge.config.name, "submitted batch {id} with {} calls", group.len());
                self.adopt(&intent, &id, input_file, cache).await;
                None
            }
            Err(e) => self.not_created(e, group, &intent, &tag, cache).await,
        }
    }

    async fn create(
        &self,
        body: Payload,
        tag: &str,
    ) -> Result<(String, Option<String>), WireError> {
        let config = &self.judge.config;
        match config.provider {
            Provider::Openai => openai::submit(&self.api, config, body, tag).await,
            Provider::Anthropic => anthropic::submit(&self.api, config, body).await,
            Provider::Gemini => gemini::submit(&self.api, config, body).await,
        }
    }

    async fn record_intent(
        &self,
        intent: &str,
        tag: &str,
        group: &[Packed],
        cache: &Arc<Cache>,
    ) -> Result<(), crate::cache::CacheError> {
        let config = &self.judge.config;
        let record = BatchRecord {
            id: intent.to_string(),
            judge: config.name.clone(),
            provider: config.provider.as_str().into(),
            base_url: config.base_url.clone(),
            model: config.model.clone(),
            state: BatchState::Intent,
            items: group.len() as u64,
            input_file: None,
            note: None,
            created_at: crate::cache::unix_now(),
            tag: Some(tag.to_string()),
            owner: Some(self.judge.owner.clone()),
        };
        let items: Vec<BatchItem> = group
            .iter()
            .enumerate()
            .filter_map(|(n, (d, _))| {
                let call = self.calls.get(d)?;
                Some(BatchItem {
                    custom_id: d.clone(),
                    key: call.key.clone(),
                    rubric_ids: Some(call.ids.to_vec()),
                    position: n as u32,
                })
            })
            .collect();
        cache.blocking(move |c| c.record_batch(&record, &items)).await
    }

    /// A create request that failed: split when refused for its size; when
    /// the provider may have created the batch all the same (a timeout, a
    /// dropped connection), looked up by its tag at once.
    async fn not_created(
        &mut self,
        e: WireError,
        group: Vec<Packed>,
        intent: &str,
        tag: &str,
        cache: &Arc<Cache>,
    ) -> Option<Vec<Packed>> {
        let name = self.judge.config.name.clone();
        let digests = || group.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>();
        if e.transient == Transient::Yes {
            match self.look_up(intent, cache).await {
                Ok(Some(id)) => {
                    tracing::info!(judge = %name, "batch {id} was created although its submission failed ({e})");
                    self.adopt(intent, &id, None, cache).await;
                }
                Ok(None) => {
                    self.forget(intent, cache).await;
                    tracing::error!(judge = %name, "batch submission failed: {e}");
                    let why = Leftover::Unanswered(format!("batch submission failed: {e}"));
                    self.fail(digests(), &why);
                }
                Err(lookup) => {
                    tracing::error!(judge = %name, "batch submission failed ({e}), and whether the provider created it cannot be told ({lookup}): its calls wait for the next run");
                    let why = Leftover::Pending(format!(
                        "batch submission failed ({e}) and may have reached the provider (tag {tag}); run again to find out"
                    ));
                    self.fail(digests(), &why);
                }
            }
            return None;
        }
        self.forget(intent, cache).await;
        if e.too_large() && group.len() > 1 {
            tracing::warn!(judge = %name, "the provider refused a batch of {} calls for its size ({e}); sending it in halves", group.len());
            return Some(group);
        }
        let why = if e.too_large() {
            format!("the provider refuses this call in a batch ({e}): it cannot be batched")
        } else {
            format!("batch submission failed: {e}")
        };
        tracing::error!(judge = %name, "{why}");
        self.fail(digests(), &Leftover::Unanswered(why));
        None
    }

    /// Looks the batch of a recorded intent up at the provider.
    async fn look_up(&self, intent: &str, cache: &Arc<Cache>) -> Result<Option<String>, WireError> {
        let owned = intent.to_string();
        let (record, items) = cache
            .blocking(move |c| {
                Ok::<_, crate::cache::CacheError>((c.batch(&owned)?, c.batch_items(&owned)?))
            })
            .await
            .map_err(|e| WireError::format(e.to_string()))?;
        let Some(record) = record else { return Ok(None) };
        self.find(&record, &items, &HashSet::new()).await
    }

    /// Forgets an intent whose batch the provider did not create.
    async fn forget(&self, intent: &str, cache: &Arc<Cache>) {
        let owned = intent.to_string();
        let _ = cache.blocking(move |c| c.drop_intent(&owned)).await;
    }

    /// Polls every open batch once and collects those that ended; sends
    /// the next deferred part when one ended (or none is open). True when
    /// nothing is left open or deferred.
    pub async fn poll_once(&mut self, cache: &Arc<Cache>) -> bool {
        let before = self.open.len();
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
                            let why = Leftover::Unanswered(why.clone());
                            self.fail_items(&id, &why, cache).await;
                            self.close(&id, Some(why.reason().to_string()), cache).await;
                        }
                        Phase::Refused(why) => self.refused(&id, why, cache).await,
                    }
                }
                Err(e) => self.poll_failed(&id, e, cache).await,
            }
        }
        if !self.deferred.is_empty() && (self.open.is_empty() || self.open.len() < before) {
            self.send_deferred(cache).await;
        }
        self.report.failed = self.failed.len();
        self.open.is_empty() && self.deferred.is_empty()
    }

    /// A batch over a limit smaller batches pass: its calls of this run
    /// are sent again in halves, one part after another.
    async fn refused(&mut self, id: &str, why: &str, cache: &Arc<Cache>) {
        let mine: Vec<String> = self
            .items_of(id, cache)
            .await
            .into_iter()
            .map(|i| i.custom_id)
            .filter(|d| self.calls.contains_key(d))
            .collect();
        tracing::warn!(judge = %self.judge.config.name, "batch {id}: {why}; its {} calls go again in two parts, one after the other", mine.len());
        self.close(id, Some(why.to_string()), cache).await;
        if mine.len() <= 1 {
            let leftover = Leftover::Unanswered(format!("{why}: it cannot be batched"));
            self.fail(mine, &leftover);
            return;
        }
        let mut first = mine;
        let second = first.split_off(first.len() / 2);
        self.deferred.push_back(first);
        self.deferred.push_back(second);
    }

    /// Sends the next deferred part, rebuilt from the prompts in the cache.
    async fn send_deferred(&mut self, cache: &Arc<Cache>) {
        let Some(digests) = self.deferred.pop_front() else { return };
        let mut packed = Vec::new();
        for d in digests {
            let Some(call) = self.calls.get(&d) else { continue };
            let hash = call.key.prompt_hash.clone();
            let prompt = cache.blocking(move |c| c.get_prompt(&hash)).await.ok().flatten();
            match prompt {
                Some(p) => {
                    let item =
                        serde_json::to_vec(&self.judge.batch_item(&d, &p)).unwrap_or_default();
                    packed.push((d, item));
                }
                None => {
                    let why = Leftover::Unanswered(
                        "its prompt is not in the cache, so it cannot be sent again by batch"
                            .into(),
                    );
                    self.fail([d], &why);
                }
            }
        }
        self.submit(packed, cache).await;
    }

    async fn poll_failed(&mut self, id: &str, e: WireError, cache: &Arc<Cache>) {
        let n = self.poll_failures.entry(id.to_string()).or_insert(0);
        *n += 1;
        tracing::warn!(judge = %self.judge.config.name, "polling batch {id}: {e}");
        if e.transient == Transient::No || *n >= POLL_FAILURES {
            // Left recorded as submitted: the next run polls it again, and
            // its calls are not paid for again in this one.
            let why = Leftover::Pending(format!(
                "batch {id} could not be polled: {e}; run again to collect it"
            ));
            self.fail_items(id, &why, cache).await;
            self.open.retain(|o| o != id);
        }
    }

    async fn items_of(&self, id: &str, cache: &Arc<Cache>) -> Vec<BatchItem> {
        let owned = id.to_string();
        cache.blocking(move |c| c.batch_items(&owned)).await.unwrap_or_default()
    }

    async fn download(&self, id: &str, status: &Status) -> Result<Results, WireError> {
        let config = &self.judge.config;
        match config.provider {
            Provider::Openai => openai::results(&self.api, config, status).await,
            Provider::Anthropic => anthropic::results(&self.api, config, id, status).await,
            Provider::Gemini => gemini::results(&self.api, config, status).await,
        }
    }

    /// Reads an ended batch's results into the cache. Every item must be
    /// accounted for (answered, or said by the provider not to be); while
    /// unreadable lines leave some unaccounted for, the download is tried
    /// again, and then the batch is left open for the next run.
    async fn collect(&mut self, id: &str, status: &Status, cache: &Arc<Cache>) {
        let items = self.items_of(id, cache).await;
        let mut attempt = 0;
        let unaccounted = loop {
            attempt += 1;
            let results = match self.download(id, status).await {
                Ok(r) => r,
                Err(e) => return self.poll_failed(id, e, cache).await,
            };
            let unaccounted = self.settle_items(id, &items, results, cache).await;
            if unaccounted.is_empty() || attempt >= DOWNLOADS {
                break unaccounted;
            }
            tracing::warn!(judge = %self.judge.config.name, "batch {id}: {} results could not be read; downloading them again", unaccounted.len());
        };
        if unaccounted.is_empty() {
            return self.close(id, Some(status.counts.clone()), cache).await;
        }
        let shown: Vec<&str> =
            unaccounted.iter().take(5).map(|d| d.get(..12).unwrap_or(d)).collect();
        let note = format!(
            "{} of its results could not be read (calls {}{}): left open for the next run",
            unaccounted.len(),
            shown.join(", "),
            if unaccounted.len() > shown.len() { ", …" } else { "" }
        );
        tracing::error!(judge = %self.judge.config.name, "batch {id}: {note}");
        let (owned, n) = (id.to_string(), note.clone());
        let _ = cache
            .blocking(move |c| c.set_batch_state(&owned, BatchState::Submitted, Some(&n)))
            .await;
        let why = Leftover::Pending(format!(
            "batch {id}: its result for this call could not be read; the next run reads it again"
        ));
        self.fail(unaccounted, &why);
        self.open.retain(|o| o != id);
    }

    /// Stores what came back for a batch's items; returns the digests of
    /// the items left unaccounted for.
    async fn settle_items(
        &mut self,
        id: &str,
        items: &[BatchItem],
        results: Results,
        cache: &Arc<Cache>,
    ) -> Vec<String> {
        let keyless = results.items.iter().filter(|(k, _)| k.is_none()).count();
        let positional = results.items.len() == items.len();
        let unreadable = results.unreadable + if positional { 0 } else { keyless };
        let by_id = match_results(items, results);
        let mut unaccounted = Vec::new();
        for item in items {
            let digest = item.key.digest();
            let key = item.key.clone();
            if matches!(cache.blocking(move |c| c.get_response(&key)).await, Ok(Some(_))) {
                continue;
            }
            let leftover = match by_id.get(item.custom_id.as_str()) {
                Some(ItemResult::Reply(body)) => match self.store(item, body, cache).await {
                    Ok(()) => None,
                    Err(why) => Some(Leftover::Unanswered(why)),
                },
                Some(ItemResult::Errored(m)) => {
                    Some(Leftover::Unanswered(format!("the batch item errored: {m}")))
                }
                Some(ItemResult::Expired) => {
                    Some(Leftover::Unanswered("the batch expired before this call ran".into()))
                }
                Some(ItemResult::Canceled) => Some(Leftover::Unanswered(
                    "the batch was cancelled before this call ran".into(),
                )),
                None if unreadable > 0 => {
                    unaccounted.push(digest);
                    continue;
                }
                None => Some(Leftover::Unanswered(format!(
                    "batch {id} ended without a result for this call"
                ))),
            };
            match leftover {
                Some(l) => self.fail([digest], &l),
                None => {
                    self.failed.remove(&digest);
                    self.report.answered += 1;
                }
            }
        }
        unaccounted
    }

    /// Parses and stores one reply; `Err(reason)` when it is unusable. The
    /// rubric ids come from the batch's record, so an answer is kept
    /// whichever run asked for it.
    async fn store(&self, item: &BatchItem, body: &str, cache: &Arc<Cache>) -> Result<(), String> {
        let ids: Option<Arc<[String]>> =
            match (&item.rubric_ids, self.calls.get(&item.key.digest())) {
                (Some(ids), _) => Some(ids.clone().into()),
                (None, Some(call)) => Some(call.ids.clone()),
                (None, None) => {
                    let hash = item.key.prompt_hash.clone();
                    let prompt = cache.blocking(move |c| c.get_prompt(&hash)).await.ok().flatten();
                    prompt.map(|p| p.rubric_ids.into())
                }
            };
        let Some(ids) = ids else {
            return Err("the batch record does not say which rubrics it asked about, and its prompt is not in the cache".into());
        };
        let stored = self
            .judge
            .answer(&ids, body, Channel::Batch, None)
            .map_err(|e| e.message().to_string())?;
        self.judge.counters.batch_calls.fetch_add(1, Ordering::Relaxed);
        let (k, s) = (item.key.clone(), stored);
        if let Err(e) = cache.blocking(move |c| c.keep_response(&k, &s)).await {
            tracing::error!("a batch answer could not be stored or journalled: {e}");
        }
        Ok(())
    }

    /// Every call of batch `id` that this run asked for is left with `why`.
    async fn fail_items(&mut self, id: &str, why: &Leftover, cache: &Arc<Cache>) {
        let digests: Vec<String> =
            self.items_of(id, cache).await.into_iter().map(|i| i.key.digest()).collect();
        self.fail(digests, why);
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
        self.api.sent.load(Ordering::Relaxed)
    }

    /// Estimated prompt tokens of the calls that the caller's fallback may
    /// send live.
    pub fn unanswered_tokens(&self) -> u64 {
        self.failed
            .iter()
            .filter(|(_, l)| matches!(l, Leftover::Unanswered(_)))
            .filter_map(|(d, _)| self.calls.get(d))
            .map(|c| c.tokens)
            .sum()
    }

    /// This run's calls that no batch answered, with why.
    pub fn unanswered(self) -> Unanswered {
        self.failed
    }

    fn is_done(&self) -> bool {
        self.open.is_empty() && self.deferred.is_empty()
    }
}

/// Each item's result by custom id. A usable answer wins over an error
/// for the same id (a provider may report an item twice); results that
/// carry no id are matched by position (Gemini answers in request order)
/// when there is one per item, and count as unreadable otherwise.
fn match_results(items: &[BatchItem], results: Results) -> HashMap<&str, ItemResult> {
    let mut by_id: HashMap<&str, ItemResult> = HashMap::new();
    let positional = results.items.len() == items.len();
    for (n, (custom_id, result)) in results.items.into_iter().enumerate() {
        let id = match &custom_id {
            Some(c) => items.iter().find(|i| &i.custom_id == c).map(|i| i.custom_id.as_str()),
            None if positional => items.get(n).map(|i| i.custom_id.as_str()),
            None => None,
        };
        let Some(id) = id else { continue };
        match by_id.get(id) {
            Some(ItemResult::Reply(_)) => {}
            _ => {
                by_id.insert(id, result);
            }
        }
    }
    by_id
}

/// Why a recorded batch could not be cancelled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum CancelError {
    /// The cache has no such batch.
    #[error("no batch {0} in this cache (`redjury batches` lists them)")]
    Unknown(String),
    /// Its results are already collected.
    #[error("batch {0} has ended and its results are collected: nothing to cancel")]
    Collected(String),
    /// The batch is an intent: its provider id is not known yet.
    #[error(
        "batch {0} is being submitted (or was, by an interrupted run): run the scoring command again to find it first"
    )]
    Intent(String),
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
pub(crate) async fn cancel(
    cache: &Cache,
    judges: &[Arc<Judge>],
    id: &str,
) -> Result<(), CancelError> {
    let record = cache.batch(id)?.ok_or_else(|| CancelError::Unknown(id.to_string()))?;
    match record.state {
        BatchState::Collected => return Err(CancelError::Collected(id.to_string())),
        BatchState::Intent => return Err(CancelError::Intent(id.to_string())),
        BatchState::Submitted => {}
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
            if !plan.is_done() {
                done &= plan.poll_once(cache).await;
            }
            progress.batch(plan.judge_name(), plan.report());
        }
        if done {
            return;
        }
        let every = plans.iter().filter(|p| !p.is_done()).map(Plan::poll_every).min();
        tokio::time::sleep(every.unwrap_or(Duration::from_secs(1))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(n: u32) -> BatchItem {
        BatchItem {
            custom_id: format!("c{n}"),
            key: CallKey {
                provider: "gemini".into(),
                model: "m".into(),
                params: "p".into(),
                template_version: "v".into(),
                prompt_hash: format!("h{n}"),
                repeat: 0,
            },
            rubric_ids: None,
            position: n,
        }
    }

    /// A duplicate custom id whose error line comes after its answer: the
    /// answer wins (it was paid for; a `BTreeMap` insert once let the last
    /// line win).
    #[test]
    fn a_usable_answer_wins_over_an_error_for_the_same_id() {
        let items = [item(0)];
        let results = Results {
            items: vec![
                (Some("c0".into()), ItemResult::Reply("{}".into())),
                (Some("c0".into()), ItemResult::Errored("duplicate".into())),
            ],
            unreadable: 0,
        };
        assert_eq!(match_results(&items, results).get("c0"), Some(&ItemResult::Reply("{}".into())));
    }

    /// Gemini's inline responses without `metadata.key` are matched by
    /// request order when there is one per item; otherwise none is guessed.
    #[test]
    fn results_without_ids_are_matched_by_position_only_when_the_count_agrees() {
        let items = [item(0), item(1)];
        let answers = |n: usize| Results {
            items: (0..n).map(|i| (None, ItemResult::Reply(format!("r{i}")))).collect(),
            unreadable: 0,
        };
        let matched = match_results(&items, answers(2));
        assert_eq!(matched.get("c1"), Some(&ItemResult::Reply("r1".into())));
        assert!(match_results(&items, answers(1)).is_empty());
    }
}
