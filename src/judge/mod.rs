//! Judges: one LLM behind one provider, called under its limits, with
//! retries, structured verdicts and a cache.
//!
//! Owns: the life of one call — cache lookup, de-duplication (identical
//! calls in this process share one request; across processes a lease in
//! the cache lets one of them send it), pacing, the HTTP exchange, retry
//! policy (backon: exponential backoff with jitter, honouring the server's
//! delay), turning the reply into votes, and storing it. Must never lose an
//! answer it paid for (each is stored, or journalled, before the call
//! returns), never turn a failure into a FAIL (failures are abstentions
//! with their reason), never cache a truncated or unusable reply, and never
//! let an API key reach a log, an error, the cache or the results.

pub(crate) mod batch;
pub(crate) mod config;
mod failures;
pub(crate) mod headers;
mod http;
pub(crate) mod limiter;
pub(crate) mod provider;
pub(crate) mod verdicts;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use serde::Serialize;
use tokio::sync::OnceCell;

use crate::cache::{Cache, CallKey, Lease, Outcome, StoredResponse};
use crate::prompt::Prompt;
use config::JudgeConfig;
use limiter::Limiter;
use provider::{ErrorClass, Reply, Usage};
use verdicts::JudgeVote;

/// Declares a judge's counters from one list of fields: `Counters`
/// (atomics, added to as calls go), `CounterSnapshot` (plain numbers, in
/// summary.json; a field missing from an older one reads 0) and the copy
/// from one to the other.
macro_rules! counters {
    ($($doc:literal $field:ident,)*) => {
        /// Running totals for one judge, handed to the results.
        #[derive(Default)]
        pub struct Counters {
            $(#[doc = $doc] pub $field: AtomicU64,)*
        }

        /// A copy of [`Counters`] at one moment.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
        #[serde(default)]
        pub struct CounterSnapshot {
            $(#[doc = $doc] pub $field: u64,)*
        }

        impl Counters {
            /// The totals now.
            pub fn snapshot(&self) -> CounterSnapshot {
                CounterSnapshot { $($field: self.$field.load(Ordering::Relaxed),)* }
            }
        }

        /// Two processes' totals together (the parts of a sharded run).
        impl std::ops::AddAssign for CounterSnapshot {
            fn add_assign(&mut self, other: CounterSnapshot) {
                $(self.$field += other.$field;)*
            }
        }
    };
}

counters! {
    "HTTP requests sent (retries included)." requests,
    "Calls answered from the cache." cache_hits,
    "Requests that were retries." retries,
    "Calls that ended without an answer." failures,
    "Billed prompt tokens, of every 2xx reply (unusable ones too)." input_tokens,
    "Billed output tokens." output_tokens,
    "Prompt tokens read from the provider's prompt cache." cached_tokens,
    "Prompt tokens written to the provider's prompt cache." cache_write_tokens,
    "Replies with status 429." rate_limited,
    "Calls answered through the provider's batch API." batch_calls,
    "Prompt tokens billed at the batch rate." batch_input_tokens,
    "Output tokens billed at the batch rate." batch_output_tokens,
    "Of the batch prompt tokens, those read from the prompt cache." batch_cached_tokens,
    "Calls answered at once as failed: the same call failed moments before and waits out its backoff." failures_remembered,
    "Calls not made: vote mode \"decided\" (or \"escalate\") had settled every rubric they would have asked about." decided_skips,
    "Estimated prompt tokens not sent in \"decided\" (or \"escalate\") mode: the calls not made, and the rubrics left out of narrowed prompts." decided_skipped_tokens,
    "Rubrics not asked about in \"decided\" (or \"escalate\") mode: those of the calls not made and those left out of narrowed prompts." decided_skipped_rubrics,
    "Rubrics asked about in live calls answered 2xx (what their output tokens paid for)." billed_rubrics,
    "Estimated prompt tokens of the live calls answered 2xx (set against their billed prompt tokens)." billed_estimate,
    "Rubrics asked about in live calls answered 2xx that asked about every rubric of their task." whole_rubrics,
    "Output tokens billed for those calls." whole_output_tokens,
}

impl Counters {
    fn add_usage(&self, u: &Usage, channel: Channel) {
        match channel {
            Channel::Live => {
                self.input_tokens.fetch_add(u.input, Ordering::Relaxed);
                self.output_tokens.fetch_add(u.output, Ordering::Relaxed);
                self.cached_tokens.fetch_add(u.cached, Ordering::Relaxed);
                self.cache_write_tokens.fetch_add(u.cache_write, Ordering::Relaxed);
            }
            Channel::Batch => {
                self.batch_input_tokens.fetch_add(u.input, Ordering::Relaxed);
                self.batch_output_tokens.fetch_add(u.output, Ordering::Relaxed);
                self.batch_cached_tokens.fetch_add(u.cached, Ordering::Relaxed);
            }
        }
    }
}

/// How a reply came: billed at the live or the batch rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Channel {
    /// One request at a time.
    Live,
    /// Through the provider's batch API.
    Batch,
}

/// The result of one (prompt, judge, repeat) call.
#[derive(Debug, Clone)]
pub struct CallResult {
    /// A vote or an abstention for every rubric of the prompt.
    pub votes: BTreeMap<String, JudgeVote>,
    /// The tokens this call was billed (0 from the cache).
    pub usage: Usage,
    /// Whether the answer came from the cache.
    pub from_cache: bool,
    /// How many attempts it took.
    pub attempts: u32,
    /// Set when the call itself failed (every vote is then an abstention).
    pub failure: Option<String>,
}

/// How a judge authenticates.
#[derive(Clone)]
pub enum Auth {
    /// The server needs no key (`api_key_env = ""`).
    None,
    /// A key (never printed: `Auth` has no Debug impl on purpose).
    Key(String),
    /// The key's environment variable is unset or empty.
    /// The key's environment variable is unset or empty.
    Missing {
        /// The variable.
        env: String,
    },
}

/// The longest wait between attempts to an endpoint that refuses to
/// connect and has not answered in this run.
const UNREACHABLE_RETRY: Duration = Duration::from_millis(250);

enum AttemptError {
    Retryable {
        message: String,
        retry_after: Option<Duration>,
    },
    /// No connection could be made to the judge's endpoint: retried, and
    /// when a judge that never answered fails a whole call this way, it
    /// stops (its endpoint is down or wrong, like a bad key).
    Unreachable {
        message: String,
    },
    /// This call cannot succeed (e.g. 400 for this prompt, 413).
    Fatal {
        message: String,
    },
    /// No call to this judge can succeed: traffic to it stops for the run.
    JudgeDown {
        message: String,
    },
    /// The judge was stopped by another call while this one waited.
    Stopped {
        reason: String,
    },
}

impl AttemptError {
    fn message(&self) -> &str {
        match self {
            AttemptError::Retryable { message, .. }
            | AttemptError::Unreachable { message }
            | AttemptError::Fatal { message }
            | AttemptError::JudgeDown { message } => message,
            AttemptError::Stopped { reason } => reason,
        }
    }
}

/// How long a lease on an in-flight call lasts without renewal; the owner
/// renews it every third of that while the call is in flight. (A killed
/// owner on the same machine is noticed at once; on another, at expiry.)
const LEASE: Duration = Duration::from_secs(30);

/// How long a lease on a call lasts unless renewed: `REDJURY_LEASE_SECS`
/// (1 to 3600), else 30 s. A process killed mid-call holds its calls this
/// long before another process takes them over (docs/deployment.md).
fn lease() -> Duration {
    static LEASE_TTL: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *LEASE_TTL.get_or_init(|| {
        std::env::var("REDJURY_LEASE_SECS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|s| (1..=3600).contains(s))
            .map_or(LEASE, Duration::from_secs)
    })
}

/// How often a process that cannot reach a shared store tries it again.
const STORE_RETRY: Duration = Duration::from_secs(1);

/// How many times (one a second) a call tries a shared store that cannot be
/// reached before it gives up: the call then ends as an abstention with
/// that reason (the row incomplete, never a 0), not a hang.
fn store_patience() -> u32 {
    u32::try_from(crate::cache::shared_store_wait().as_secs()).unwrap_or(u32::MAX)
}

/// Ends this process's lease on a call, trying a store that does not
/// answer again for a few seconds: a lease left behind holds the call's
/// other askers until it expires.
async fn release(cache: &Arc<crate::cache::Cache>, key: &CallKey, owner: &str) {
    for _ in 0..5 {
        let (k, o) = (key.clone(), owner.to_string());
        if cache.blocking(move |c| c.release(&k, &o)).await.is_ok() {
            return;
        }
        tokio::time::sleep(STORE_RETRY).await;
    }
}

/// The reason a call gives when the shared store stayed unreachable.
fn store_gone(e: &crate::cache::CacheError) -> String {
    format!(
        "the shared store could not be reached for {} s ({e}); the call was not sent",
        store_patience()
    )
}

/// Says that a shared store cannot be reached, at the first failure and
/// every 30 tries after (a store down for long, or refusing a statement,
/// stays visible); returns the tries so far.
fn store_down(tries: u32, e: &crate::cache::CacheError) -> u32 {
    if tries.is_multiple_of(30) {
        tracing::warn!(
            "{e}; nothing is sent to the judges until the store answers (tried {} times)",
            tries + 1
        );
    }
    tries + 1
}

/// Why a judge could not be built.
#[derive(Debug, thiserror::Error)]
#[error("judge '{judge}': cannot build an HTTP client: {message}")]
pub struct JudgeError {
    /// The judge's name.
    pub judge: String,
    /// What went wrong.
    pub message: String,
}

/// One configured judge, ready to call.
pub struct Judge {
    /// Its settings.
    pub config: JudgeConfig,
    auth: Auth,
    http: reqwest::Client,
    limiter: Limiter,
    /// Its running totals.
    pub counters: Counters,
    /// Set after a reply that means no call can succeed; calls waiting for
    /// the limiter watch it and end at once.
    stopped: tokio::sync::watch::Sender<Option<String>>,
    /// Whether any HTTP reply ever came from the judge's endpoint.
    answered: std::sync::atomic::AtomicBool,
    /// Whether an unreachable endpoint was said (once per judge).
    said_unreachable: std::sync::atomic::AtomicBool,
    /// Calls in flight in this process, by call digest.
    in_flight: Mutex<HashMap<String, Arc<OnceCell<CallResult>>>>,
    /// Calls that failed moments ago, answered at once until their backoff ends.
    failures: Mutex<failures::FailureMemory>,
    /// This process's name on leases.
    owner: String,
}

impl Judge {
    /// Builds a judge; the key is read from the environment variable the
    /// config names (absent or empty = missing).
    pub fn from_env(config: JudgeConfig) -> Result<Judge, JudgeError> {
        let auth = match &config.api_key_env {
            None => Auth::None,
            Some(env) => match std::env::var(env).ok().filter(|k| !k.trim().is_empty()) {
                Some(key) => Auth::Key(key),
                None => Auth::Missing { env: env.clone() },
            },
        };
        Judge::new(config, auth)
    }

    /// Builds a judge with the given authentication.
    pub fn new(config: JudgeConfig, auth: Auth) -> Result<Judge, JudgeError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(config.timeout_secs.min(10)))
            .build()
            .map_err(|e| JudgeError { judge: config.name.clone(), message: e.to_string() })?;
        let limiter = Limiter::new(config.rpm, config.tpm, config.max_concurrency)
            .with_output_reserve(u64::from(config.max_output_tokens));
        let owner = crate::cache::lease_owner(&format!("{}-{:x}", config.name, rand_u64()));
        Ok(Judge {
            config,
            auth,
            http,
            limiter,
            counters: Counters::default(),
            stopped: tokio::sync::watch::Sender::new(None),
            answered: std::sync::atomic::AtomicBool::new(false),
            said_unreachable: std::sync::atomic::AtomicBool::new(false),
            in_flight: Mutex::new(HashMap::new()),
            failures: Mutex::new(failures::FailureMemory::default()),
            owner,
        })
    }

    /// Whether this judge can be called: it has a key or needs none.
    pub fn can_call(&self) -> bool {
        !matches!(self.auth, Auth::Missing { .. })
    }

    /// The environment variable a missing key should be set in.
    pub fn missing_key(&self) -> Option<&str> {
        match &self.auth {
            Auth::Missing { env } => Some(env),
            _ => None,
        }
    }

    /// The rate limits the provider reported and the pace now.
    pub fn observed_limits(&self) -> limiter::ObservedLimits {
        self.limiter.observed()
    }

    /// Why traffic to this judge stopped, if it did.
    pub fn stopped(&self) -> Option<String> {
        self.stopped.borrow().clone()
    }

    /// Resolves when the judge is stopped, with why.
    async fn until_stopped(&self) -> String {
        let mut rx = self.stopped.subscribe();
        let why = rx.wait_for(Option::is_some).await.ok().and_then(|why| why.clone());
        match why {
            Some(why) => why,
            // The judge owns the sender: it cannot close while we wait.
            None => std::future::pending().await,
        }
    }

    /// Stops traffic to the judge for the run; says so once.
    fn stop(&self, message: &str) {
        self.stopped.send_if_modified(|stopped| {
            if stopped.is_some() {
                return false;
            }
            tracing::error!(
                "{message}; no more calls go to judge '{}' in this run",
                self.config.name
            );
            *stopped = Some(message.to_string());
            true
        });
    }

    /// Stops traffic to the judge because the process is ending, not
    /// because the judge failed: a call waiting for its turn or its next
    /// retry ends at once, and no request starts after this.
    pub fn halt(&self, reason: &str) {
        self.stopped.send_if_modified(|stopped| {
            if stopped.is_some() {
                return false;
            }
            tracing::info!("judge '{}': {reason}; no more calls go to it", self.config.name);
            *stopped = Some(reason.to_string());
            true
        });
    }

    /// Answers already stored for these calls, looked up in one trip off
    /// the async workers (a warm rerun of 10,000 outputs would otherwise
    /// wake a blocking thread once per call); `None` where the cache has no
    /// answer or cannot be read, for [`Judge::call`] to handle.
    pub async fn cached_many(
        &self,
        calls: &[(Arc<Prompt>, u32)],
        cache: &Arc<Cache>,
    ) -> Vec<Option<CallResult>> {
        let keys: Vec<CallKey> = calls.iter().map(|(p, r)| self.call_key(p, *r)).collect();
        let stored: Vec<Option<StoredResponse>> = cache
            .blocking(move |c| keys.iter().map(|k| c.get_response(k).ok().flatten()).collect())
            .await;
        stored
            .into_iter()
            .zip(calls)
            .map(|(s, (prompt, _))| {
                let s = s?;
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                Some(from_cache(&s, prompt))
            })
            .collect()
    }

    /// A call that was not answered (its batch item expired, say): every
    /// rubric abstains with `reason`.
    pub fn unanswered(&self, prompt: &Prompt, reason: String) -> CallResult {
        self.counters.failures.fetch_add(1, Ordering::Relaxed);
        abstain_all(prompt, reason, 0)
    }

    /// The cache key of one call.
    pub fn call_key(&self, prompt: &Prompt, repeat: u32) -> CallKey {
        CallKey {
            provider: self.config.provider.as_str().to_string(),
            model: self.config.model.clone(),
            params: self.config.call_params(),
            template_version: prompt.template_version.clone(),
            prompt_hash: prompt.hash.clone(),
            repeat,
        }
    }

    /// Whether this call is already answered in the cache.
    pub fn is_cached(&self, prompt: &Prompt, repeat: u32, cache: &Cache) -> bool {
        matches!(cache.get_response(&self.call_key(prompt, repeat)), Ok(Some(_)))
    }

    /// Asks this judge about every rubric of `prompt`. Identical calls in
    /// flight at once (from any task of this process) share one request.
    /// A call that failed moments before is answered at once as failed
    /// until its backoff ends (see `failures.rs`).
    pub async fn call(&self, prompt: &Prompt, repeat: u32, cache: &Arc<Cache>) -> CallResult {
        let key = self.call_key(prompt, repeat);
        if let Some(hit) = self.cached(&key, prompt, cache).await {
            return hit;
        }
        let digest = key.digest();
        let remembered = self.memory().waiting(&digest, Instant::now());
        if let Some(f) = remembered {
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
            self.counters.failures_remembered.fetch_add(1, Ordering::Relaxed);
            let reason = format!(
                "{} (failed {} time{} in a row; tried again in {} s)",
                f.reason,
                f.strikes,
                if f.strikes == 1 { "" } else { "s" },
                f.retry_in.as_secs().max(1)
            );
            return abstain_all(prompt, reason, 0);
        }
        let result = self.shared(prompt, &key, &digest, cache).await;
        match &result.failure {
            // A stopped judge stops every call on its own.
            Some(reason) if self.stopped().is_none() && self.can_call() => {
                self.memory().failed(&digest, reason, Instant::now())
            }
            Some(_) => {}
            None => self.memory().answered(&digest),
        }
        result
    }

    /// Calls remembered as failed now.
    pub fn remembered_failures(&self) -> usize {
        self.memory().len()
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, failures::FailureMemory> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The call, shared with identical calls in flight in this process.
    async fn shared(
        &self,
        prompt: &Prompt,
        key: &CallKey,
        digest: &str,
        cache: &Arc<Cache>,
    ) -> CallResult {
        let digest = digest.to_string();
        let cell = {
            let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(digest.clone()).or_default().clone()
        };
        let result = cell.get_or_init(|| self.leased(prompt, key, cache)).await.clone();
        let mut map = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if map.get(&digest).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
            map.remove(&digest);
        }
        result
    }

    async fn cached(
        &self,
        key: &CallKey,
        prompt: &Prompt,
        cache: &Arc<Cache>,
    ) -> Option<CallResult> {
        let mut said = 0u32;
        loop {
            let owned = key.clone();
            match cache.blocking(move |c| c.get_response(&owned)).await {
                Ok(Some(stored)) => {
                    self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Some(from_cache(&stored, prompt));
                }
                Ok(None) => return None,
                // A shared store may hold the answer another machine paid
                // for: wait for it rather than pay again.
                Err(e) if cache.shared() => {
                    said = store_down(said, &e);
                    if said > store_patience() {
                        self.counters.failures.fetch_add(1, Ordering::Relaxed);
                        return Some(abstain_all(prompt, store_gone(&e), 0));
                    }
                    tokio::time::sleep(STORE_RETRY).await;
                }
                Err(e) => {
                    tracing::warn!("{e}; calling the judge instead");
                    return None;
                }
            }
        }
    }

    /// Sends the call once no other process has it in flight; waits for
    /// that process's answer otherwise.
    async fn leased(&self, prompt: &Prompt, key: &CallKey, cache: &Arc<Cache>) -> CallResult {
        if !self.can_call() || self.stopped().is_some() {
            return self.fresh(prompt, key, cache).await;
        }
        let (mut waited, mut down) = (false, 0u32);
        loop {
            let (k, owner) = (key.clone(), self.owner.clone());
            match cache.blocking(move |c| c.claim(&k, &owner, lease())).await {
                Ok(Lease::Granted) => break,
                Ok(Lease::HeldElsewhere) => {
                    if !waited {
                        tracing::debug!(judge = %self.config.name, "another process has this call in flight; waiting for its answer");
                        waited = true;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    if let Some(hit) = self.cached(key, prompt, cache).await {
                        return hit;
                    }
                }
                // On a shared store another machine may be sending the same
                // call: wait for the lease. A local store that cannot lease
                // still lets the call go out.
                Err(e) if cache.shared() => {
                    down = store_down(down, &e);
                    if down > store_patience() {
                        self.counters.failures.fetch_add(1, Ordering::Relaxed);
                        return abstain_all(prompt, store_gone(&e), 0);
                    }
                    tokio::time::sleep(STORE_RETRY).await;
                }
                Err(e) => {
                    tracing::warn!("{e}; sending without a lease");
                    break;
                }
            }
        }
        // Looked up again under the lease: an identical call that finished
        // between this call's first lookup and its lease stored its answer
        // before releasing the lease, so it is found here, not paid twice.
        if let Some(hit) = self.cached(key, prompt, cache).await {
            // An answer this process only journaled keeps the lease its
            // first caller holds until it is stored: releasing it here
            // would let another process pay for the call again.
            if !cache.is_journaled(key) {
                release(cache, key, &self.owner).await;
            }
            return hit;
        }
        let renew = {
            let (k, owner, cache) = (key.clone(), self.owner.clone(), cache.clone());
            tokio::spawn(async move {
                let mut wait = lease() / 3;
                loop {
                    tokio::time::sleep(wait).await;
                    let (k, owner) = (k.clone(), owner.clone());
                    // A store that did not answer is tried again soon: a
                    // lease left to expire while the store restarts would
                    // let another process pay for this call again.
                    wait = match cache.blocking(move |c| c.claim(&k, &owner, lease())).await {
                        Ok(_) => lease() / 3,
                        Err(_) => STORE_RETRY.min(lease() / 3),
                    };
                }
            })
        };
        let result = self.fresh(prompt, key, cache).await;
        if cache.is_journaled(key) {
            // The answer is only in this process's journal: the others
            // cannot see it, so the lease is kept (and renewed) until the
            // answer is stored, then released. Nothing waits here: the
            // end of the run waits for it ([`Cache::settling`]).
            let (k, owner, cache) = (key.clone(), self.owner.clone(), cache.clone());
            let settling = cache.settling_guard();
            tokio::spawn(async move {
                let _settling = settling;
                // Bounded: an answer the store keeps refusing stays in the
                // journal (the end of the run names it) and its lease ends.
                for _ in 0..=store_patience() {
                    let k2 = k.clone();
                    if cache.blocking(move |c| c.store_journaled(&k2)).await {
                        break;
                    }
                    tokio::time::sleep(STORE_RETRY).await;
                }
                renew.abort();
                release(&cache, &k, &owner).await;
            });
            return result;
        }
        renew.abort();
        release(cache, key, &self.owner).await;
        result
    }

    /// A call not in the cache: paced, retried, stored.
    async fn fresh(&self, prompt: &Prompt, key: &CallKey, cache: &Arc<Cache>) -> CallResult {
        if let Some(reason) = self.stopped() {
            return abstain_all(prompt, format!("judge stopped: {reason}"), 0);
        }
        let api_key = match &self.auth {
            Auth::Missing { env } => {
                return abstain_all(prompt, format!("no API key: set {env}"), 0);
            }
            Auth::None => None,
            Auth::Key(k) => Some(k.as_str()),
        };
        let attempts = AtomicU32::new(0);
        let refused = AtomicBool::new(false);
        let started = Instant::now();
        let estimate = prompt.estimated_tokens() + u64::from(self.config.max_output_tokens);
        let attempt = || async {
            if attempts.fetch_add(1, Ordering::Relaxed) > 0 {
                self.counters.retries.fetch_add(1, Ordering::Relaxed);
            }
            // A retry to an endpoint that has refused every connection in
            // this run spent none of the provider's limits: it waits for no
            // budget (behind tpm and the slots of the calls queued on it,
            // the default panel's judges at closed ports took minutes).
            let unspent = refused.load(Ordering::Relaxed) && !self.answered.load(Ordering::Relaxed);
            // A call waiting for its turn ends at once when the judge stops
            // (a bad key found by another call): it never waits out the pace.
            let pass = if unspent {
                self.limiter.unbudgeted()
            } else {
                tokio::select! {
                    biased;
                    reason = self.until_stopped() => {
                        return Err(AttemptError::Stopped { reason: format!("judge stopped: {reason}") });
                    }
                    pass = self.limiter.acquire(estimate) => pass,
                }
            };
            // Checked again after the wait: a judge stopped meanwhile gets
            // no more requests.
            if let Some(reason) = self.stopped() {
                return Err(AttemptError::Stopped { reason: format!("judge stopped: {reason}") });
            }
            if !unspent {
                self.shared_turn(cache, estimate)
                    .await
                    .map_err(|reason| AttemptError::Stopped { reason })?;
            }
            if let Some(reason) = self.stopped() {
                return Err(AttemptError::Stopped { reason: format!("judge stopped: {reason}") });
            }
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let result = self.attempt(api_key, prompt, &pass, cache).await;
            refused
                .store(matches!(result, Err(AttemptError::Unreachable { .. })), Ordering::Relaxed);
            result
        };
        let cap = Duration::from_secs(self.config.retry_max_secs);
        let policy = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.config.retry_base_ms))
            .with_max_delay(cap)
            .with_max_times(self.config.max_attempts.saturating_sub(1) as usize)
            .with_jitter();
        let result = attempt
            .retry(policy)
            .when(|e| matches!(e, AttemptError::Retryable { .. } | AttemptError::Unreachable { .. }))
            .adjust(|e, backoff| {
                // Stop when the policy says stop; otherwise the server's
                // own delay, when it gave one, wins (capped).
                backoff.map(|d| match e {
                    AttemptError::Retryable { retry_after: Some(server), .. } => (*server).min(cap),
                    // An endpoint that never answered and refuses to connect
                    // is down or wrong, like a bad key: its attempts follow
                    // each other quickly so the judge stops in about a
                    // second, not after the minute the backoff would take.
                    AttemptError::Unreachable { .. } if !self.answered.load(Ordering::Relaxed) => {
                        d.min(UNREACHABLE_RETRY)
                    }
                    _ => d,
                })
            })
            .notify(|e, delay| tracing::debug!(judge = %self.config.name, "retrying in {delay:?}: {}", e.message()))
            .await;
        let attempts = attempts.load(Ordering::Relaxed);
        match result {
            Ok(mut stored) => {
                stored.latency_ms = started.elapsed().as_millis() as u64;
                stored.attempts = attempts;
                let (k, s) = (key.clone(), stored.clone());
                if let Err(e) = cache.blocking(move |c| c.keep_response(&k, &s)).await {
                    tracing::error!(
                        "judge '{}': its answer could not be stored or journalled: {e}",
                        self.config.name
                    );
                }
                answered(&stored, prompt, attempts)
            }
            Err(e) => self.failed(prompt, e, attempts),
        }
    }

    /// The name of this judge's rate budget in a shared store: every
    /// process of the panel with the same judge, endpoint and model spends
    /// the same one.
    fn budget(&self) -> String {
        format!("{}|{}|{}", self.config.name, self.config.base_url, self.config.model)
    }

    /// Waits this request's turn in the rate budgets (requests, and tokens
    /// when `tpm` is set) a shared store keeps for every process of the
    /// panel. While the store cannot be reached nothing is sent: a private
    /// budget would overspend the provider's limit with the others.
    async fn shared_turn(&self, cache: &Arc<Cache>, tokens: u64) -> Result<(), String> {
        let interval = self.limiter.interval_now();
        let per_token = self
            .config
            .tpm
            .per_minute()
            .map(|tpm| Duration::from_secs_f64(tokens as f64 * 60.0 / f64::from(tpm.max(1))));
        let budget = self.budget();
        let mut said = 0u32;
        loop {
            let b = budget.clone();
            let turn = cache
                .blocking(move |c| -> Result<Option<Duration>, crate::cache::CacheError> {
                    let Some(wait) = c.pace(&b, interval)? else { return Ok(None) };
                    let tokens = match per_token {
                        Some(t) => c.pace(&format!("{b}#tokens"), t)?.unwrap_or_default(),
                        None => Duration::ZERO,
                    };
                    Ok(Some(wait.max(tokens)))
                })
                .await;
            match turn {
                Ok(None) => return Ok(()),
                Ok(Some(wait)) => {
                    tokio::time::sleep(wait).await;
                    return Ok(());
                }
                Err(e) => {
                    said = store_down(said, &e);
                    if said > store_patience() {
                        return Err(store_gone(&e));
                    }
                    tokio::time::sleep(STORE_RETRY).await;
                }
            }
        }
    }

    /// One request and what its reply means.
    async fn attempt(
        &self,
        api_key: Option<&str>,
        prompt: &Prompt,
        pass: &limiter::Pass,
        cache: &Arc<Cache>,
    ) -> Result<StoredResponse, AttemptError> {
        let name = &self.config.name;
        let req = provider::build(&self.config, api_key, prompt);
        let exchanged = http::exchange(&self.http, &req, self.config.max_reply_bytes).await;
        if exchanged.is_err() {
            self.limiter.unanswered(pass);
        }
        let url = req.url.split('?').next().unwrap_or_default();
        let received = exchanged.map_err(|e| {
            let message = match e {
                http::TransportError::Timeout => {
                    format!("judge '{name}': no answer within {} s", self.config.timeout_secs)
                }
                http::TransportError::Unreachable(why) => {
                    let message = format!("judge '{name}': cannot connect to {url}: {why}");
                    if !self.said_unreachable.swap(true, Ordering::Relaxed) {
                        tracing::warn!("{message}; retrying");
                    }
                    return AttemptError::Unreachable { message };
                }
                http::TransportError::Connection(why) => {
                    format!("judge '{name}': the connection to {url} broke: {why}")
                }
                http::TransportError::TooLarge { limit } => {
                    format!(
                        "judge '{name}': the reply is larger than {limit} bytes (max_reply_bytes)"
                    )
                }
            };
            AttemptError::Retryable { message, retry_after: None }
        })?;
        self.answered.store(true, Ordering::Relaxed);
        let budget =
            if cache.shared() { limiter::BudgetScope::Shared } else { limiter::BudgetScope::Own };
        if let Some(wait) =
            self.limiter.observe(pass, &received.limits, received.status == 429, budget)
            && budget == limiter::BudgetScope::Shared
        {
            let b = self.budget();
            if let Err(e) = cache.blocking(move |c| c.hold(&b, wait)).await {
                tracing::warn!("{e}: the spent budget is held in this process only");
            }
        }
        if (200..300).contains(&received.status) {
            return self.answer(&prompt.rubric_ids, &received.body, Channel::Live, Some(prompt));
        }
        if received.status == 429 {
            self.counters.rate_limited.fetch_add(1, Ordering::Relaxed);
        }
        let provider = self.config.provider;
        let mut message = format!(
            "judge '{name}' ({}): HTTP {}: {}",
            provider.as_str(),
            received.status,
            provider::error_message(&received.body)
        );
        if let (Some(env), true) =
            (&self.config.api_key_env, key_refused(received.status, &received.body))
        {
            message = format!("the key in {env} is refused: {message}");
        }
        let class = match (
            provider::classify(provider, received.status, &received.body),
            received.should_retry,
        ) {
            (ErrorClass::JudgeDown, _) => ErrorClass::JudgeDown,
            (_, Some(true)) => ErrorClass::Retryable,
            (_, Some(false)) => ErrorClass::Fatal,
            (class, None) => class,
        };
        Err(match class {
            ErrorClass::Retryable => {
                AttemptError::Retryable { message, retry_after: received.retry_after }
            }
            ErrorClass::JudgeDown => AttemptError::JudgeDown { message },
            ErrorClass::Fatal => AttemptError::Fatal { message },
        })
    }

    /// A 2xx body: an answer to store, or a failed attempt. Its usage is
    /// counted either way: the provider billed it.
    fn answer(
        &self,
        rubric_ids: &[String],
        body: &str,
        channel: Channel,
        live: Option<&Prompt>,
    ) -> Result<StoredResponse, AttemptError> {
        let bill = |usage: &Usage| self.bill(usage, channel, live);
        let name = &self.config.name;
        let stored = |outcome, text, usage| StoredResponse {
            outcome,
            text,
            usage,
            latency_ms: 0,
            attempts: 0,
        };
        match provider::parse(self.config.provider, body) {
            Ok(Reply::Text { text, usage }) => {
                bill(&usage);
                match verdicts::parse(&text, rubric_ids) {
                    Ok(_) => Ok(stored(Outcome::Text, text, usage)),
                    Err(message) => Err(AttemptError::Retryable {
                        message: format!("judge '{name}': {message}"),
                        retry_after: None,
                    }),
                }
            }
            Ok(Reply::Declined { reason, usage }) => {
                bill(&usage);
                Ok(stored(Outcome::Declined, reason, usage))
            }
            Err(unusable) => {
                bill(&unusable.usage);
                Err(AttemptError::Retryable {
                    message: format!("judge '{name}': {}", unusable.message),
                    retry_after: None,
                })
            }
        }
    }

    /// Counts a 2xx reply's usage, and for a live call what it asked for
    /// it: the yardstick that prices what "decided" mode does not send.
    fn bill(&self, usage: &Usage, channel: Channel, live: Option<&Prompt>) {
        self.counters.add_usage(usage, channel);
        let (Channel::Live, Some(prompt)) = (channel, live) else { return };
        let (c, asked) = (&self.counters, prompt.rubric_ids.len() as u64);
        c.billed_rubrics.fetch_add(asked, Ordering::Relaxed);
        c.billed_estimate.fetch_add(prompt.estimated_tokens(), Ordering::Relaxed);
        if prompt.asks == crate::prompt::Asks::Whole {
            c.whole_rubrics.fetch_add(asked, Ordering::Relaxed);
            c.whole_output_tokens.fetch_add(usage.output, Ordering::Relaxed);
        }
    }

    /// A call that ended without an answer: every rubric abstains.
    fn failed(&self, prompt: &Prompt, e: AttemptError, attempts: u32) -> CallResult {
        self.counters.failures.fetch_add(1, Ordering::Relaxed);
        let name = &self.config.name;
        match e {
            AttemptError::Fatal { message } => {
                tracing::warn!("{message}");
                abstain_all(prompt, message, attempts)
            }
            AttemptError::JudgeDown { message } => {
                self.stop(&message);
                abstain_all(prompt, format!("judge stopped: {message}"), attempts)
            }
            // Every attempt of a call failed to connect and the endpoint
            // never answered: it is down or wrong, like a bad key.
            AttemptError::Unreachable { message } if !self.answered.load(Ordering::Relaxed) => {
                let message = format!("{message} on all {attempts} attempts");
                self.stop(&message);
                abstain_all(prompt, format!("judge stopped: {message}"), attempts)
            }
            AttemptError::Unreachable { message } => abstain_all(
                prompt,
                format!("judge '{name}' failed after {attempts} attempt(s): {message}"),
                attempts,
            ),
            AttemptError::Stopped { reason } => abstain_all(prompt, reason, attempts),
            AttemptError::Retryable { message, .. } => abstain_all(
                prompt,
                format!("judge '{name}' failed after {attempts} attempt(s): {message}"),
                attempts,
            ),
        }
    }
}

/// Whether an error reply says the key itself is refused (not the model
/// or the access): a 401, or a provider's bad-key code on another status.
fn key_refused(status: u16, body: &str) -> bool {
    status == 401
        || ["API_KEY_INVALID", "invalid_api_key", "authentication_error"]
            .iter()
            .any(|code| body.contains(code))
}

/// A little randomness for lease owner names, without a crate.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    h.finish()
}

fn abstain_all(prompt: &Prompt, reason: String, attempts: u32) -> CallResult {
    let votes = prompt
        .rubric_ids
        .iter()
        .map(|id| (id.clone(), JudgeVote::Abstain { reason: reason.clone() }))
        .collect();
    CallResult {
        votes,
        usage: Usage::default(),
        from_cache: false,
        attempts,
        failure: Some(reason),
    }
}

/// An answer from the cache.
fn from_cache(stored: &StoredResponse, prompt: &Prompt) -> CallResult {
    CallResult {
        votes: stored_votes(stored, prompt),
        usage: stored.usage,
        from_cache: true,
        attempts: stored.attempts,
        failure: None,
    }
}

/// An answer just received, in `attempts` requests.
fn answered(stored: &StoredResponse, prompt: &Prompt, attempts: u32) -> CallResult {
    CallResult {
        votes: stored_votes(stored, prompt),
        usage: stored.usage,
        from_cache: false,
        attempts,
        failure: None,
    }
}

/// The votes of an answer as stored.
fn stored_votes(stored: &StoredResponse, prompt: &Prompt) -> BTreeMap<String, JudgeVote> {
    match stored.outcome {
        Outcome::Declined => prompt
            .rubric_ids
            .iter()
            .map(|id| (id.clone(), JudgeVote::Abstain { reason: stored.text.clone() }))
            .collect(),
        Outcome::Text => match verdicts::parse(&stored.text, &prompt.rubric_ids) {
            Ok(v) => v,
            // Only parseable replies are stored; a template change that
            // renamed rubrics would land here.
            Err(reason) => prompt
                .rubric_ids
                .iter()
                .map(|id| (id.clone(), JudgeVote::Abstain { reason: reason.clone() }))
                .collect(),
        },
    }
}
