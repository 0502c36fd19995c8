//! The store: prompts, judge responses, rendered views, check verdicts,
//! leases, provider batches and (on a shared store) the providers' rate
//! budget, shared by every run and process that names it — one SQLite file
//! (`sqlite.rs`, the default) or a PostgreSQL server (`postgres/`, for
//! replicas and shards on many machines), behind one interface
//! (`engine.rs`).
//!
//! Owns: content-addressed prompts; judge responses keyed by (provider,
//! model, call parameters, template version, prompt hash, repeat index),
//! each committed on its own so a killed process loses no answer already
//! received; leases that stop two processes paying for the same call at
//! once; the render and check caches the pipeline keys by an output's
//! bytes; the journal and the answers held in memory. Must never store an
//! API key or anything derived from one, and never drop a received answer:
//! one the store cannot take (locked for too long, a full disk, a file
//! that is gone) goes to a journal beside the file, synced, and when even
//! that fails it is held in memory, retried at every later write and at
//! the end of the run, and counted ([`Cache::unstored`]) so that no run
//! ends as a success while a paid answer is kept nowhere. Values read back
//! from the store, which never change once stored, are kept in process for
//! a while (`recent.rs`): a hot lookup makes no round trip.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::hash::sha256_hex;
use crate::prompt::Prompt;

mod batches;
mod copy;
mod engine;
mod journal;
mod postgres;
mod recent;
mod sqlite;

pub(crate) use batches::UnknownBatchState;
pub use batches::{BatchItem, BatchRecord, BatchState};
pub use copy::{CopyReport, copy_store};

/// A store's location as it may be shown: a file's path, or a PostgreSQL
/// URL with its password (userinfo and `password=`) replaced by `***`.
pub(crate) fn shown_location(location: &std::path::Path) -> String {
    match location.to_str() {
        Some(url) if postgres::is_url(url) => postgres::without_password(url),
        _ => location.display().to_string(),
    }
}
pub(crate) use engine::Access;
use engine::{Engine, Takeover};
pub use sqlite::SCHEMA_VERSION;

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
#[error("cache {path}: {message}")]
pub struct CacheError {
    /// The cache file.
    pub path: String,
    /// What went wrong.
    pub message: String,
}

impl CacheError {
    fn at(path: &Path, e: &dyn std::fmt::Display) -> CacheError {
        CacheError { path: path.display().to_string(), message: e.to_string() }
    }
}

/// Token usage as the provider billed it, normalised: `input` includes
/// cached and cache-written prompt tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// All prompt tokens.
    pub input: u64,
    /// Output tokens, thinking included.
    pub output: u64,
    /// Prompt tokens read from the provider's prompt cache.
    pub cached: u64,
    /// Prompt tokens written to the provider's prompt cache (Anthropic
    /// bills them at a premium).
    #[serde(default)]
    pub cache_write: u64,
}

/// What a stored response holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Reply text to parse for verdicts.
    Text,
    /// The provider declined (refusal, safety block); the text is the reason.
    Declined,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Text => "text",
            Outcome::Declined => "declined",
        }
    }
}

/// A stored judge response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    /// What the response holds.
    pub outcome: Outcome,
    /// The reply text (or the reason it was declined).
    pub text: String,
    /// The tokens it was billed.
    pub usage: Usage,
    /// How long the call took, retries included.
    pub latency_ms: u64,
    /// How many attempts it took.
    pub attempts: u32,
}

/// What identifies one judge call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallKey {
    /// The provider's name.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// The call parameters that change an answer (`JudgeConfig::call_params`).
    pub params: String,
    /// The prompt templates' version.
    pub template_version: String,
    /// The prompt's hash.
    pub prompt_hash: String,
    /// Which of a judge's repeats.
    pub repeat: u32,
}

impl CallKey {
    /// The key's digest: the responses table's primary key.
    pub fn digest(&self) -> String {
        sha256_hex(&format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.provider,
            self.model,
            self.params,
            self.template_version,
            self.prompt_hash,
            self.repeat
        ))
    }
}

/// How long a database locked by another process is waited for.
pub(crate) const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a process waits for a shared store that cannot be reached:
/// each call before it gives up (an abstention, the call not sent), and
/// the end of a run for the answers it could only journal.
/// `REDJURY_STORE_WAIT_SECS` sets it (1–86400; 300 by default).
pub(crate) fn shared_store_wait() -> Duration {
    static WAIT: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *WAIT.get_or_init(|| {
        std::env::var("REDJURY_STORE_WAIT_SECS")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|s| (1..=86_400).contains(s))
            .map_or(Duration::from_secs(300), Duration::from_secs)
    })
}

/// The result of asking to send a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// This owner may send the call; renew the lease while it is in flight.
    Granted,
    /// Another live process has the call in flight.
    HeldElsewhere,
}

/// The store, with its journal and the answers it holds in memory.
pub struct Cache {
    store: Box<dyn Engine>,
    /// The file, or the server's address without its password, for messages.
    location: PathBuf,
    /// Shared with every other process that opens this store.
    journal: journal::Journal,
    /// Answers this process journaled and has not stored since, by call
    /// digest: looked up like stored ones, so that this process never pays
    /// for them again, and stored by their callers while they hold the
    /// call's lease ([`Cache::store_journaled`]).
    unsettled: Mutex<HashMap<String, (CallKey, StoredResponse)>>,
    /// Callers storing a journaled answer while holding its lease: the end
    /// of a run waits for them ([`Cache::settling`]).
    settling: AtomicUsize,
    /// Answers neither the store nor the journal could take, with the last
    /// reason; retried at every later write and by [`Cache::settle`].
    held: Mutex<Held>,
    /// Values read back from the store lately, which never change once
    /// stored: a hot lookup makes no round trip (`serve` on PostgreSQL).
    recent: Recents,
}

/// The kinds kept in process, each in a budget of its own.
struct Recents {
    answers: recent::Recent<StoredResponse>,
    renders: recent::Recent<(String, Option<String>)>,
    checks: recent::Recent<String>,
    /// Hashes of prompts known to be in the store.
    prompts: recent::Recent<()>,
}

impl Recents {
    fn new() -> Recents {
        const MB: usize = 1 << 20;
        Recents {
            answers: recent::Recent::new(32 * MB),
            renders: recent::Recent::new(64 * MB),
            checks: recent::Recent::new(16 * MB),
            prompts: recent::Recent::new(4 * MB),
        }
    }
}

/// Where an answer received from a judge was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// In the store, committed.
    Stored,
    /// In the journal only (the store could not take it): other processes
    /// do not see it until it is stored.
    Journaled,
}

/// Counts a caller as settling a journaled answer for as long as it lives.
pub struct Settling(Arc<Cache>);

impl Drop for Settling {
    fn drop(&mut self) {
        self.0.settling.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Default)]
struct Held {
    answers: Vec<(CallKey, StoredResponse)>,
    reason: String,
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

fn now() -> i64 {
    now_secs() as i64
}

/// Seconds since the Unix epoch, as the store records times.
pub(crate) fn unix_now() -> i64 {
    now()
}

impl Cache {
    /// Opens (or creates) the store, waiting up to [`DEFAULT_BUSY_TIMEOUT`]
    /// whenever another process holds it locked. A store written by a newer
    /// redjury is refused; one that cannot be written is opened read-only
    /// (see [`Cache::notes`]).
    pub fn open(path: &Path) -> Result<Cache, CacheError> {
        Cache::open_with(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// Opens the store with another busy timeout.
    pub fn open_with(path: &Path, busy_timeout: Duration) -> Result<Cache, CacheError> {
        let (store, location, journal): (Box<dyn Engine>, PathBuf, PathBuf) =
            match path.to_str().filter(|p| postgres::is_url(p)) {
                Some(url) => {
                    let store = postgres::Postgres::open(url)?;
                    let shown = PathBuf::from(store.shown());
                    let journal = store.journal();
                    (Box::new(store), shown, journal)
                }
                None => {
                    let store = sqlite::Sqlite::open(path, busy_timeout)?;
                    let mut journal = path.as_os_str().to_owned();
                    journal.push(".pending.jsonl");
                    (Box::new(store), path.to_path_buf(), PathBuf::from(journal))
                }
            };
        let cache = Cache {
            store,
            location,
            journal: journal::Journal::new(journal),
            unsettled: Mutex::default(),
            settling: AtomicUsize::new(0),
            held: Mutex::default(),
            recent: Recents::new(),
        };
        if cache.store.access() == Access::ReadWrite
            && let Err(e) = cache.flush_journal()
        {
            tracing::warn!("{e}");
        }
        Ok(cache)
    }

    fn err(&self, e: impl std::fmt::Display) -> CacheError {
        CacheError::at(&self.location, &e)
    }

    /// Runs `f` on a blocking thread, so that SQLite's waits never stall
    /// the async workers.
    pub async fn blocking<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Cache) -> T + Send + 'static,
    ) -> T {
        let cache = self.clone();
        let run = move || f(&cache);
        match tokio::runtime::Handle::try_current() {
            Ok(_) => match tokio::task::spawn_blocking(run).await {
                Ok(v) => v,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            },
            Err(_) => run(),
        }
    }

    /// Whether the store can be written.
    pub fn access(&self) -> Access {
        self.store.access()
    }

    /// What happened to the store that a run should tell at its end: opened
    /// read-only, its file deleted or replaced while open.
    pub fn notes(&self) -> Vec<String> {
        self.store.notes()
    }

    /// Stores a prompt by its hash (once: a prompt this process stored or
    /// found stored is not sent again).
    pub fn put_prompt(&self, p: &Prompt) -> Result<(), CacheError> {
        if self.recent.prompts.get(&p.hash).is_some() {
            return Ok(());
        }
        self.store.put_prompt(p)?;
        // Content-addressed: whoever stored it first stored the same.
        self.recent.prompts.keep(&p.hash, (), 0);
        Ok(())
    }

    /// A stored prompt, by hash.
    pub fn get_prompt(&self, hash: &str) -> Result<Option<Prompt>, CacheError> {
        self.store.get_prompt(hash)
    }

    /// A stored response, or one this process journaled.
    pub fn get_response(&self, key: &CallKey) -> Result<Option<StoredResponse>, CacheError> {
        let journaled = self.unsettled.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, r)) = journaled.get(&key.digest()) {
            return Ok(Some(r.clone()));
        }
        drop(journaled);
        let digest = key.digest();
        if let Some(r) = self.recent.answers.get(&digest) {
            return Ok(Some(r));
        }
        let stored = self.store.get_response(key)?;
        if let Some(r) = &stored {
            self.recent.answers.keep(&digest, r.clone(), r.text.len() + 64);
        }
        Ok(stored)
    }

    /// Stores one response; committed before this returns.
    pub fn put_response(&self, key: &CallKey, r: &StoredResponse) -> Result<(), CacheError> {
        self.store.put_response(key, r)
    }

    /// Stores a response, or, when the store cannot take it (locked by
    /// another process beyond the busy timeout, a full disk, read-only),
    /// appends it to the journal beside the file, synced, to be stored on
    /// the next chance. When the journal cannot take it either, the answer
    /// is held in memory and retried at every later write: the error says
    /// so, and [`Cache::unstored`] counts it.
    pub fn keep_response(&self, key: &CallKey, r: &StoredResponse) -> Result<Kept, CacheError> {
        self.retry_held();
        let Err(e) = self.put_response(key, r) else { return Ok(Kept::Stored) };
        if self.store.newly_lost() {
            let n = self.journal_lost_answers();
            tracing::warn!(
                "{n} answers this process stored in the lost cache are kept in {}",
                self.journal.path().display()
            );
        }
        match self.journal_answer(key, r) {
            Ok(()) => {
                tracing::warn!(
                    "{e}; the answer is kept in {} and stored when the cache can take it",
                    self.journal.path().display()
                );
                Ok(Kept::Journaled)
            }
            Err(j) => {
                let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
                held.answers.push((key.clone(), r.clone()));
                held.reason = format!("{}; {}", e.message, j.message);
                Err(self.err(format!(
                    "{}; the journal {} cannot take it either ({}): it is held in memory ({} held) until one of them can",
                    e.message,
                    self.journal.path().display(),
                    j.message,
                    held.answers.len()
                )))
            }
        }
    }

    /// Appends one answer to the journal, synced, and remembers it as
    /// this process's until it is stored.
    fn journal_answer(&self, key: &CallKey, r: &StoredResponse) -> Result<(), CacheError> {
        let line = serde_json::to_string(&(key, r)).map_err(|e| self.err(e))?;
        self.journal.append(&line).map_err(|e| self.err(e))?;
        let mut unsettled = self.unsettled.lock().unwrap_or_else(|p| p.into_inner());
        unsettled.insert(key.digest(), (key.clone(), r.clone()));
        Ok(())
    }

    /// Tries to store (or journal) every answer held in memory.
    fn retry_held(&self) {
        let answers = {
            let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
            if held.answers.is_empty() {
                return;
            }
            std::mem::take(&mut held.answers)
        };
        let mut left = Vec::new();
        let mut reason = String::new();
        for (key, r) in answers {
            if let Err(e) = self.put_response(&key, &r)
                && let Err(j) = self.journal_answer(&key, &r)
            {
                reason = format!("{}; {}", e.message, j.message);
                left.push((key, r));
            }
        }
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if !left.is_empty() {
            held.reason = reason;
        }
        left.append(&mut held.answers);
        held.answers = left;
    }

    /// Tries the answers held in memory again; returns how many are still
    /// kept nowhere but in memory.
    pub fn retry_unstored(&self) -> usize {
        self.retry_held();
        self.unstored()
    }

    /// Stores every answer waiting in the journal or in memory; returns how
    /// many are still kept nowhere but in memory.
    pub fn settle(&self) -> usize {
        if self.access() == Access::ReadWrite
            && let Err(e) = self.flush_journal()
        {
            tracing::debug!("{e}");
        }
        self.retry_held();
        self.unstored()
    }

    /// Received answers that neither the store nor its journal could take:
    /// they are lost if the process ends now.
    pub fn unstored(&self) -> usize {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).answers.len()
    }

    /// Why answers are held in memory (the store's and the journal's
    /// errors), when some are.
    pub fn unstored_reason(&self) -> Option<String> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        (!held.answers.is_empty()).then(|| held.reason.clone())
    }

    /// The journal beside the store.
    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }

    /// Whether this call's answer is journaled and not stored yet.
    pub fn is_journaled(&self, key: &CallKey) -> bool {
        self.unsettled.lock().unwrap_or_else(|p| p.into_inner()).contains_key(&key.digest())
    }

    /// Answers waiting in the journal (this process's and any an earlier
    /// one left), by its readable lines.
    pub fn journal_lines(&self) -> usize {
        match self.journal.read() {
            Ok(Some(text)) => text
                .lines()
                .filter(|l| serde_json::from_str::<(CallKey, StoredResponse)>(l).is_ok())
                .count(),
            Ok(None) => 0,
            // A journal that cannot be read may still hold answers: never
            // counted as empty.
            Err(_) => 1,
        }
    }

    /// Stores one answer this process journaled; true once it is stored
    /// (or was already). When it was the last one, the journal is emptied
    /// too.
    pub fn store_journaled(&self, key: &CallKey) -> bool {
        let digest = key.digest();
        let answer = self.unsettled.lock().unwrap_or_else(|p| p.into_inner()).get(&digest).cloned();
        let Some((key, r)) = answer else { return true };
        if self.put_response(&key, &r).is_err() {
            return false;
        }
        let mut unsettled = self.unsettled.lock().unwrap_or_else(|p| p.into_inner());
        unsettled.remove(&digest);
        let last = unsettled.is_empty();
        drop(unsettled);
        if last && let Err(e) = self.flush_journal() {
            tracing::debug!("{e}");
        }
        true
    }

    /// Counts the caller as settling a journaled answer until the guard
    /// is dropped.
    pub fn settling_guard(self: &Arc<Self>) -> Settling {
        self.settling.fetch_add(1, Ordering::SeqCst);
        Settling(self.clone())
    }

    /// Callers still storing a journaled answer under its lease.
    pub fn settling(&self) -> usize {
        self.settling.load(Ordering::SeqCst)
    }

    /// Stores every answer waiting in the journal (this process's and any
    /// other's), then removes it; then stores from memory this process's
    /// journaled answers the file no longer held (another process emptied
    /// it first). Leaves the journal in place (and says so) while the store
    /// cannot take its answers.
    pub fn flush_journal(&self) -> Result<usize, CacheError> {
        let mut stored_digests = Vec::new();
        let stored = self.store_lines(&self.journal, |key| stored_digests.push(key.digest()))?;
        let mut unsettled = self.unsettled.lock().unwrap_or_else(|p| p.into_inner());
        for digest in stored_digests {
            unsettled.remove(&digest);
        }
        let rest: Vec<(String, CallKey, StoredResponse)> =
            unsettled.iter().map(|(d, (k, r))| (d.clone(), k.clone(), r.clone())).collect();
        drop(unsettled);
        for (digest, key, r) in rest {
            self.put_response(&key, &r)?;
            self.unsettled.lock().unwrap_or_else(|p| p.into_inner()).remove(&digest);
        }
        Ok(stored)
    }

    /// Stores every answer of a file in the journal's format (one
    /// `[call, response]` per line), then removes the file; leaves it in
    /// place when the store cannot take them all. Returns how many were
    /// stored.
    pub fn store_answers_from(&self, file: &Path) -> Result<usize, CacheError> {
        self.store_lines(&journal::Journal::new(file.to_path_buf()), |_| {})
    }

    fn store_lines(
        &self,
        file: &journal::Journal,
        mut stored: impl FnMut(&CallKey),
    ) -> Result<usize, CacheError> {
        let mut count = 0;
        let emptied = file.empty(|line| -> Result<(), CacheError> {
            // A line cut short by a crash while appending holds no answer.
            let Ok((key, r)) = serde_json::from_str::<(CallKey, StoredResponse)>(line) else {
                return Ok(());
            };
            self.put_response(&key, &r)?;
            stored(&key);
            count += 1;
            Ok(())
        });
        match emptied {
            Ok(_) => Ok(count),
            Err(journal::Stopped::File(e)) => {
                Err(self.err(format!("{}: {e}", file.path().display())))
            }
            Err(journal::Stopped::Store(e)) => Err(self.err(format!(
                "{}; {} keeps its answers for the next run",
                e.message,
                file.path().display()
            ))),
        }
    }

    /// The answers held in memory, as lines of the journal's format, for
    /// the caller to save elsewhere.
    pub fn held_lines(&self) -> Vec<String> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.answers.iter().filter_map(|a| serde_json::to_string(a).ok()).collect()
    }

    /// Writes this process's answers to the journal when the store behind
    /// them is lost (its file replaced by something that is not a store),
    /// so that a later run can still store them.
    fn journal_lost_answers(&self) -> usize {
        let mut n = 0;
        for (key, r) in self.store.responses_since_open() {
            if self.journal_answer(&key, &r).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Asks to send a call: granted when no other owner holds an unexpired
    /// lease on it, or when the owner is a process of this machine that is
    /// gone (killed: its lease would otherwise hold until it expires).
    /// `owner` should come from [`lease_owner`].
    pub fn claim(&self, key: &CallKey, owner: &str, ttl: Duration) -> Result<Lease, CacheError> {
        let digest = key.digest();
        if self.store.take_lease(&digest, owner, ttl, Takeover::WhenExpired)? {
            return Ok(Lease::Granted);
        }
        let holder = self.store.lease_holder(&digest)?;
        if let Some(gone) = holder.filter(|h| owner_is_gone(h))
            && self.store.take_lease(&digest, owner, ttl, Takeover::FromGone(gone))?
        {
            return Ok(Lease::Granted);
        }
        Ok(Lease::HeldElsewhere)
    }

    /// Ends this owner's lease on a call.
    pub fn release(&self, key: &CallKey, owner: &str) -> Result<(), CacheError> {
        self.store.release(&key.digest(), owner)
    }

    /// A stored gate result and annotated view (see `run::render_key`).
    pub fn get_render(&self, key: &str) -> Result<Option<(String, Option<String>)>, CacheError> {
        if let Some(r) = self.recent.renders.get(key) {
            return Ok(Some(r));
        }
        let stored = self.store.get_render(key)?;
        if let Some((gate, view)) = &stored {
            let size = gate.len() + view.as_ref().map_or(0, String::len);
            self.recent.renders.keep(key, (gate.clone(), view.clone()), size);
        }
        Ok(stored)
    }

    /// Stores a gate result and annotated view.
    pub fn put_render(&self, key: &str, gate: &str, view: Option<&str>) -> Result<(), CacheError> {
        self.store.put_render(key, gate, view)
    }

    /// Folds the write-ahead log into the database file, so that the next
    /// run reads from the file instead of replaying a long log.
    pub fn checkpoint(&self) -> Result<(), CacheError> {
        self.store.checkpoint()
    }

    /// Stored check results (JSON) for an output and a task's checks.
    pub fn get_checks(&self, key: &str) -> Result<Option<String>, CacheError> {
        if let Some(r) = self.recent.checks.get(key) {
            return Ok(Some(r));
        }
        let stored = self.store.get_checks(key)?;
        if let Some(c) = &stored {
            self.recent.checks.keep(key, c.clone(), c.len());
        }
        Ok(stored)
    }

    /// Stores a task's check verdicts on one output.
    pub fn put_checks(&self, key: &str, results: &str) -> Result<(), CacheError> {
        self.store.put_checks(key, results)
    }

    /// How many responses are stored.
    pub fn response_count(&self) -> Result<u64, CacheError> {
        self.store.response_count()
    }

    /// The file's path (or the server's address without its password),
    /// for messages.
    pub fn path(&self) -> &Path {
        &self.location
    }

    /// Waits its turn in a rate budget the store shares between processes
    /// (a PostgreSQL store; see `engine::Engine::pace`): how long to wait
    /// before sending; `None` when budgets are each process's own.
    pub fn pace(&self, budget: &str, interval: Duration) -> Result<Option<Duration>, CacheError> {
        self.store.pace(budget, interval)
    }

    /// Whether processes on other machines share this store (PostgreSQL):
    /// one that cannot reach it must wait rather than send calls alone
    /// (it could pay for an answer stored there, or spend a budget the
    /// others keep to).
    pub fn shared(&self) -> bool {
        self.store.shared()
    }

    /// Holds a shared rate budget for `wait` (the provider said it is
    /// spent); nothing on a store that shares none.
    pub fn hold(&self, budget: &str, wait: Duration) -> Result<(), CacheError> {
        self.store.hold(budget, wait)
    }

    /// Records a batch (or the intent to send one) and its calls in one
    /// transaction.
    pub fn record_batch(&self, b: &BatchRecord, items: &[BatchItem]) -> Result<(), CacheError> {
        self.store.record_batch(b, items)
    }

    /// An intent's batch is known to the provider as `id`.
    pub fn adopt_intent(
        &self,
        intent: &str,
        id: &str,
        input_file: Option<&str>,
    ) -> Result<(), CacheError> {
        self.store.adopt_intent(intent, id, input_file)
    }

    /// Forgets an intent whose batch the provider never created.
    pub fn drop_intent(&self, intent: &str) -> Result<(), CacheError> {
        self.store.drop_intent(intent)
    }

    /// The batch not yet collected (or intent) that carries a call with
    /// this digest, sent to `base_url`.
    pub fn open_batch_of(
        &self,
        digest: &str,
        base_url: &str,
    ) -> Result<Option<(String, BatchState)>, CacheError> {
        self.store.open_batch_of(digest, base_url)
    }

    /// One batch.
    pub fn batch(&self, id: &str) -> Result<Option<BatchRecord>, CacheError> {
        self.store.batch(id)
    }

    /// Every batch, newest first.
    pub fn batches(&self) -> Result<Vec<BatchRecord>, CacheError> {
        self.store.batches()
    }

    /// A batch's calls, in request order.
    pub fn batch_items(&self, id: &str) -> Result<Vec<BatchItem>, CacheError> {
        self.store.batch_items(id)
    }

    /// Moves a batch on, with a note on why.
    pub fn set_batch_state(
        &self,
        id: &str,
        state: BatchState,
        note: Option<&str>,
    ) -> Result<(), CacheError> {
        self.store.set_batch_state(id, state, note)
    }
}

/// A lease owner name for this process: "host/pid/nonce", so that another
/// process on the same machine can tell when the owner is gone.
pub(crate) fn lease_owner(nonce: &str) -> String {
    format!("{}/{}/{nonce}", host_name(), std::process::id())
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// Whether a lease owner is a process of this machine that no longer runs.
/// Only Linux can tell (through /proc); elsewhere leases wait for expiry.
pub(crate) fn owner_is_gone(owner: &str) -> bool {
    let mut parts = owner.splitn(3, '/');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else { return false };
    cfg!(target_os = "linux")
        && host == host_name()
        && pid.parse::<u32>().is_ok()
        && !Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u32) -> CallKey {
        CallKey {
            provider: "openai".into(),
            model: "m".into(),
            params: "p".into(),
            template_version: "v".into(),
            prompt_hash: "h".into(),
            repeat: n,
        }
    }

    fn response() -> StoredResponse {
        StoredResponse {
            outcome: Outcome::Text,
            text: "{}".into(),
            usage: Usage { input: 10, output: 2, cached: 0, cache_write: 3 },
            latency_ms: 5,
            attempts: 1,
        }
    }

    /// An answer read back from the store is kept in process (the reward
    /// service on PostgreSQL made a round trip per lookup: 808 cached
    /// rewards/s with 32 clients, 2,567 now, `cargo bench --bench serve`),
    /// and only one read back: what this process wrote may have lost to
    /// another writer's first answer.
    #[test]
    fn answers_read_back_are_kept_in_process_and_only_those() {
        let (_dir, path) = temp("recent");
        let cache = Cache::open(&path).expect("open");
        cache.put_response(&key(1), &response()).expect("put");
        cache.put_response(&key(2), &response()).expect("put");
        assert_eq!(cache.get_response(&key(1)).expect("get"), Some(response()));
        // Both rows gone behind its back: the one read back is still
        // answered, the one only written is not.
        let raw = rusqlite::Connection::open(&path).expect("raw");
        raw.execute("DELETE FROM responses", []).expect("delete");
        assert_eq!(cache.get_response(&key(1)).expect("get"), Some(response()), "kept");
        assert_eq!(cache.get_response(&key(2)).expect("get"), None, "written, never read back");
    }

    #[test]
    fn many_openers_of_a_new_store_all_succeed() {
        for round in 0..60 {
            let (_dir, path) = temp(&format!("openers-{round}"));
            let barrier = std::sync::Arc::new(std::sync::Barrier::new(6));
            let openers: Vec<_> = (0..6)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        Cache::open(&path).map(|_| ()).map_err(|e| e.to_string())
                    })
                })
                .collect();
            for opener in openers {
                assert_eq!(opener.join().unwrap(), Ok(()));
            }
        }
    }

    /// A scratch folder (removed when dropped) and a store path in it.
    fn temp(tag: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::Builder::new().prefix(&format!("redjury-cache-{tag}-")).tempdir();
        let dir = dir.expect("temp dir");
        let path = dir.path().join("cache.sqlite");
        (dir, path)
    }

    #[test]
    fn leases_exclude_other_owners_until_they_expire() {
        let (_dir, path) = temp("lease");
        let cache = Cache::open(&path).expect("opens");
        assert_eq!(cache.claim(&key(0), "a", Duration::from_secs(60)).ok(), Some(Lease::Granted));
        assert_eq!(
            cache.claim(&key(0), "b", Duration::from_secs(60)).ok(),
            Some(Lease::HeldElsewhere)
        );
        assert_eq!(
            cache.claim(&key(0), "a", Duration::from_secs(60)).ok(),
            Some(Lease::Granted),
            "renewal"
        );
        assert_eq!(cache.claim(&key(1), "b", Duration::from_secs(60)).ok(), Some(Lease::Granted));
        cache.release(&key(0), "a").expect("release");
        assert_eq!(cache.claim(&key(0), "b", Duration::ZERO).ok(), Some(Lease::Granted));
        // An expired lease (its process died) is taken over.
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(cache.claim(&key(0), "c", Duration::from_secs(60)).ok(), Some(Lease::Granted));
        // So is the lease of a process of this machine that is gone, at once.
        let dead = format!("{}/{}/x", host_name(), u32::MAX - 1);
        assert_eq!(cache.claim(&key(2), &dead, Duration::from_secs(60)).ok(), Some(Lease::Granted));
        let expected =
            if cfg!(target_os = "linux") { Lease::Granted } else { Lease::HeldElsewhere };
        assert_eq!(
            cache.claim(&key(2), &lease_owner("y"), Duration::from_secs(60)).ok(),
            Some(expected)
        );
        let alive = lease_owner("z");
        assert_eq!(
            cache.claim(&key(3), &alive, Duration::from_secs(60)).ok(),
            Some(Lease::Granted)
        );
        assert_eq!(
            cache.claim(&key(3), &lease_owner("w"), Duration::from_secs(60)).ok(),
            Some(Lease::HeldElsewhere)
        );
    }

    #[test]
    fn an_answer_the_locked_database_cannot_take_is_journalled_then_stored() {
        let (_dir, path) = temp("journal");
        let cache = Cache::open_with(&path, Duration::from_millis(100)).expect("opens");
        let other = rusqlite::Connection::open(&path).expect("second connection");
        other.execute_batch("BEGIN EXCLUSIVE").expect("lock");
        cache.keep_response(&key(7), &response()).expect("kept");
        assert!(cache.journal.path().exists(), "the answer waits in the journal");
        assert!(cache.flush_journal().is_err(), "still locked: nothing stored, nothing lost");
        other.execute_batch("COMMIT").expect("unlock");
        assert_eq!(cache.flush_journal().ok(), Some(1));
        assert!(!cache.journal.path().exists());
        assert_eq!(cache.get_response(&key(7)).ok().flatten(), Some(response()));
    }

    /// Regression: two processes opening one store share its journal; one
    /// emptying it (read, store, remove) while the other appended lost the
    /// appended line, and the appender's own emptying then forgot it too.
    #[test]
    fn two_processes_sharing_a_journal_lose_no_answer() {
        let (_dir, path) = temp("shared-journal");
        let appender = Arc::new(Cache::open(&path).expect("opens"));
        let emptier = Cache::open(&path).expect("opens");
        let n = 300;
        let writing = {
            let appender = appender.clone();
            std::thread::spawn(move || {
                for i in 0..n {
                    appender.journal_answer(&key(i), &response()).expect("journaled");
                }
            })
        };
        while !writing.is_finished() {
            let _ = emptier.flush_journal();
        }
        writing.join().expect("appender");
        appender.flush_journal().expect("stored");
        let fresh = Cache::open(&path).expect("opens");
        let missing: Vec<u32> =
            (0..n).filter(|&i| fresh.get_response(&key(i)).ok().flatten().is_none()).collect();
        assert_eq!(missing, Vec::<u32>::new(), "answers neither stored nor journaled");
    }

    /// A journaled answer is this process's to find at once (it is never
    /// paid for again here), and storing it alone — what its caller does
    /// while it still holds the call's lease — empties the journal once it
    /// was the last one. Another opener sees it only then.
    #[test]
    fn a_journaled_answer_is_found_here_and_stored_by_its_caller() {
        let (_dir, path) = temp("journaled");
        let cache = Cache::open_with(&path, Duration::from_millis(100)).expect("opens");
        let other = rusqlite::Connection::open(&path).expect("second connection");
        other.execute_batch("BEGIN EXCLUSIVE").expect("lock");
        assert_eq!(cache.keep_response(&key(3), &response()).ok(), Some(Kept::Journaled));
        assert!(cache.is_journaled(&key(3)));
        assert_eq!(cache.get_response(&key(3)).ok().flatten(), Some(response()));
        assert_eq!(cache.journal_lines(), 1);
        assert!(!cache.store_journaled(&key(3)), "still locked: not stored, still journaled");
        assert!(cache.is_journaled(&key(3)));
        other.execute_batch("COMMIT").expect("unlock");
        assert!(cache.store_journaled(&key(3)));
        assert!(!cache.is_journaled(&key(3)));
        assert!(
            !cache.journal.path().exists(),
            "the last journaled answer stored: the journal is gone"
        );
        let fresh = Cache::open(&path).expect("another opener");
        assert_eq!(fresh.get_response(&key(3)).ok().flatten(), Some(response()));
        assert_eq!(cache.keep_response(&key(4), &response()).ok(), Some(Kept::Stored));
    }

    /// A store a newer redjury wrote (a higher schema version, or a column
    /// this version cannot fill in) is refused, naming both versions, and
    /// left untouched. (It was opened, every answer failed "NOT NULL
    /// constraint failed" into a journal that never drained, and every run
    /// paid for every call again.)
    #[test]
    fn a_store_written_by_a_newer_redjury_is_refused_and_left_untouched() {
        for (tag, change) in [
            ("version", "PRAGMA user_version = 99".to_string()),
            (
                "column",
                "ALTER TABLE responses ADD COLUMN judged_by TEXT NOT NULL DEFAULT ''".into(),
            ),
        ] {
            let (_dir, path) = temp(tag);
            drop(Cache::open(&path).expect("opens"));
            let conn = rusqlite::Connection::open(&path).expect("connection");
            conn.execute_batch(&change).expect("made newer");
            drop(conn);
            let before = std::fs::read(&path).expect("read");
            let e = Cache::open(&path).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(e.contains("written by a newer redjury"), "{tag}: {e}");
            assert!(e.contains(&format!("store schema {SCHEMA_VERSION}")), "{tag}: {e}");
            let named = if tag == "version" { "store schema 99" } else { "responses.judged_by" };
            assert!(e.contains(named), "{tag}: {e}");
            assert_eq!(std::fs::read(&path).expect("read"), before, "{tag}: untouched");
        }
    }

    /// A store from before schema versions (an older redjury's) opens, is
    /// migrated, and keeps its answers.
    #[test]
    fn an_older_store_is_migrated_and_keeps_its_answers() {
        let (_dir, path) = temp("older");
        let conn = rusqlite::Connection::open(&path).expect("connection");
        conn.execute_batch(
            "CREATE TABLE responses (
                key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, params TEXT NOT NULL,
                template_version TEXT NOT NULL, prompt_hash TEXT NOT NULL, repeat INTEGER NOT NULL,
                outcome TEXT NOT NULL, text TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
                cached_tokens INTEGER NOT NULL, latency_ms INTEGER NOT NULL, attempts INTEGER NOT NULL, created_at INTEGER NOT NULL);
             CREATE TABLE batch_items (
                batch_id TEXT NOT NULL, custom_id TEXT NOT NULL, call TEXT NOT NULL, digest TEXT NOT NULL,
                PRIMARY KEY (batch_id, custom_id));",
        )
        .expect("old schema");
        conn.execute(
            "INSERT INTO responses VALUES (?1, 'openai', 'm', 'p', 'v', 'h', 0, 'text', '{}', 10, 2, 0, 5, 1, 0)",
            rusqlite::params![key(0).digest()],
        )
        .expect("old answer");
        drop(conn);
        let cache = Cache::open(&path).expect("migrated");
        let old = cache.get_response(&key(0)).expect("read").expect("kept");
        assert_eq!(old.usage.cache_write, 0);
        let version: i64 = cache
            .store
            .as_sqlite()
            .expect("sqlite")
            .read()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("v");
        assert_eq!(version, SCHEMA_VERSION);
    }

    /// With the store full and the journal unwritable (a full disk), an
    /// answer is held in memory and counted, and stored as soon as either
    /// can take it. (It was logged and dropped: the run exited 0 and the
    /// next one paid for it again.)
    #[test]
    fn an_answer_neither_the_store_nor_the_journal_can_take_is_held_until_one_can() {
        let (_dir, path) = temp("held");
        let cache = Cache::open(&path).expect("opens");
        let pages: i64 = cache
            .store
            .as_sqlite()
            .expect("sqlite")
            .read()
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .expect("pages");
        cache
            .store
            .as_sqlite()
            .expect("sqlite")
            .read()
            .pragma_update(None, "max_page_count", pages)
            .expect("full");
        let big = StoredResponse { text: "x".repeat(64 << 10), ..response() };
        std::fs::create_dir(cache.journal.path()).expect("the journal path is taken");
        let e = cache.keep_response(&key(1), &big).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("held in memory (1 held)"), "{e}");
        assert_eq!(cache.unstored(), 1);
        assert!(
            cache.unstored_reason().is_some_and(|r| r.contains("full")),
            "{:?}",
            cache.unstored_reason()
        );
        assert_eq!(cache.settle(), 1, "still nowhere to put it");
        std::fs::remove_dir(cache.journal.path()).expect("journal freed");
        cache
            .store
            .as_sqlite()
            .expect("sqlite")
            .read()
            .pragma_update(None, "max_page_count", 1_000_000)
            .expect("space");
        assert_eq!(cache.settle(), 0);
        assert_eq!(cache.get_response(&key(1)).expect("read"), Some(big));
    }

    /// The file deleted while open: the next write notices, writes a new
    /// store at the path with what this process had written, says so, and
    /// stores there from then on. (Answers went into the deleted file and
    /// were gone at exit; the run said nothing.)
    #[test]
    fn a_store_deleted_while_open_is_written_again_at_its_path() {
        for (tag, deleted) in [("main", &[""][..]), ("all", &["", "-wal", "-shm"][..])] {
            let (_dir, path) = temp(tag);
            let cache = Cache::open(&path).expect("opens");
            cache.put_response(&key(1), &response()).expect("stored");
            for suffix in deleted {
                std::fs::remove_file(format!("{}{suffix}", path.display())).expect("deleted");
            }
            cache.put_response(&key(2), &response()).expect("stored after the deletion");
            cache.put_response(&key(3), &response()).expect("and after that");
            let notes = cache.notes();
            assert!(notes.len() == 1 && notes[0].contains("was deleted"), "{tag}: {notes:?}");
            drop(cache);
            let reopened = Cache::open(&path).expect("a store is at the path again");
            for n in [1, 2, 3] {
                assert!(reopened.get_response(&key(n)).expect("read").is_some(), "{tag}: {n}");
            }
        }
    }

    /// A file that is not a redjury store (a text file, another program's
    /// database) is refused as a cache and left exactly as it was.
    #[test]
    fn a_file_that_is_not_a_store_is_refused_and_left_as_it_was() {
        let (dir, notes) = temp("foreign");
        std::fs::write(&notes, "my notes").expect("write");
        let e = Cache::open(&notes).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("not a redjury cache (not an SQLite database)"), "{e}");
        assert_eq!(std::fs::read_to_string(&notes).ok().as_deref(), Some("my notes"));
        let other = dir.path().join("app.db");
        let conn = rusqlite::Connection::open(&other).expect("db");
        conn.execute_batch("CREATE TABLE accounts (id INTEGER)").expect("table");
        drop(conn);
        let before = std::fs::read(&other).expect("read");
        let e = Cache::open(&other).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("not a redjury cache (its tables: accounts)"), "{e}");
        assert_eq!(std::fs::read(&other).expect("read"), before);
    }

    /// The file replaced by something that is not a store: it is left as
    /// it is, nothing more goes into the ghost, and answers go to the
    /// journal (with this process's earlier ones).
    #[test]
    fn a_store_replaced_by_another_file_is_left_alone_and_answers_are_journalled() {
        let (_dir, path) = temp("replaced");
        let cache = Cache::open(&path).expect("opens");
        cache.put_response(&key(1), &response()).expect("stored");
        let moved = path.with_extension("moved");
        std::fs::rename(&path, &moved).expect("moved away");
        std::fs::write(&path, "not a database").expect("replaced");
        cache.keep_response(&key(2), &response()).expect("journalled");
        let third = cache.put_response(&key(3), &response());
        assert!(third.is_err(), "no write into a ghost: {:?} {:?}", third, cache.notes());
        assert_eq!(std::fs::read_to_string(&path).ok().as_deref(), Some("not a database"));
        let journal = std::fs::read_to_string(cache.journal.path()).expect("journal");
        let lines = journal.lines().filter(|l| !l.is_empty()).count();
        assert_eq!(lines, 2, "this answer and the one stored in the lost file: {journal}");
        assert!(cache.notes().iter().any(|n| n.contains("replaced by another file")));
    }
}
