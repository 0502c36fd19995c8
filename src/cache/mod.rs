//! The store: one SQLite file holding prompts, judge responses, rendered
//! views and check verdicts, shared by every run and process that names it.
//!
//! Owns: content-addressed prompts; judge responses keyed by (provider,
//! model, call parameters, template version, prompt hash, repeat index),
//! each committed on its own so a killed process loses no answer already
//! received; leases that stop two processes paying for the same call at
//! once; the render and check caches the pipeline keys by an output's
//! bytes. Must never store an API key or anything derived from one, and
//! never drop a received answer: one that cannot be stored (the database
//! locked for too long) goes to a journal beside the file and is stored on
//! the next chance.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::hash::sha256_hex;
use crate::prompt::Prompt;

mod batches;

pub use batches::{BatchRecord, BatchState};

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
#[error("cache {path}: {message}")]
pub struct CacheError {
    /// The cache file.
    pub path: String,
    /// What went wrong.
    pub message: String,
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
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The result of asking to send a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// This owner may send the call; renew the lease while it is in flight.
    Granted,
    /// Another live process has the call in flight.
    HeldElsewhere,
}

/// One SQLite file.
pub struct Cache {
    conn: Mutex<Connection>,
    path: String,
    journal: PathBuf,
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
pub fn unix_now() -> i64 {
    now()
}

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS prompts (
        hash TEXT PRIMARY KEY, template_version TEXT NOT NULL, system TEXT NOT NULL,
        user_prefix TEXT NOT NULL, user_rubrics TEXT NOT NULL, rubric_ids TEXT NOT NULL, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS responses (
        key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, params TEXT NOT NULL,
        template_version TEXT NOT NULL, prompt_hash TEXT NOT NULL, repeat INTEGER NOT NULL,
        outcome TEXT NOT NULL, text TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
        cached_tokens INTEGER NOT NULL, latency_ms INTEGER NOT NULL, attempts INTEGER NOT NULL, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS renders (key TEXT PRIMARY KEY, gate TEXT NOT NULL, view TEXT, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS checks (key TEXT PRIMARY KEY, results TEXT NOT NULL, created_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL);
     CREATE TABLE IF NOT EXISTS batches (
        id TEXT PRIMARY KEY, judge TEXT NOT NULL, provider TEXT NOT NULL, base_url TEXT NOT NULL,
        model TEXT NOT NULL, state TEXT NOT NULL, items INTEGER NOT NULL, input_file TEXT,
        note TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
     CREATE TABLE IF NOT EXISTS batch_items (
        batch_id TEXT NOT NULL, custom_id TEXT NOT NULL, call TEXT NOT NULL, digest TEXT NOT NULL,
        PRIMARY KEY (batch_id, custom_id));
     CREATE INDEX IF NOT EXISTS batch_items_digest ON batch_items (digest);";

impl Cache {
    /// Opens (or creates) the store, waiting up to [`DEFAULT_BUSY_TIMEOUT`]
    /// whenever another process holds it locked.
    pub fn open(path: &Path) -> Result<Cache, CacheError> {
        Cache::open_with(path, DEFAULT_BUSY_TIMEOUT)
    }

    /// Opens the store with another busy timeout.
    pub fn open_with(path: &Path, busy_timeout: Duration) -> Result<Cache, CacheError> {
        let err = |e: &dyn std::fmt::Display| CacheError {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| err(&e))?;
        }
        let conn = Connection::open(path).map_err(|e| err(&e))?;
        conn.busy_timeout(busy_timeout).map_err(|e| err(&e))?;
        // WAL + NORMAL: each committed response survives the process being
        // killed; only an OS crash could lose the last few.
        enable_wal(&conn, busy_timeout).map_err(|e| err(&busy(&e, busy_timeout)))?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(|e| err(&e))?;
        conn.execute_batch(SCHEMA).map_err(|e| err(&busy(&e, busy_timeout)))?;
        migrate(&conn).map_err(|e| err(&busy(&e, busy_timeout)))?;
        let mut journal = path.as_os_str().to_owned();
        journal.push(".pending.jsonl");
        let cache = Cache {
            conn: Mutex::new(conn),
            path: path.display().to_string(),
            journal: PathBuf::from(journal),
        };
        cache.flush_journal()?;
        Ok(cache)
    }

    fn err(&self, e: impl std::fmt::Display) -> CacheError {
        CacheError { path: self.path.clone(), message: e.to_string() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent;
        // keep using the connection.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
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

    /// Stores a prompt by its hash (once).
    pub fn put_prompt(&self, p: &Prompt) -> Result<(), CacheError> {
        let ids = serde_json::to_string(&p.rubric_ids).map_err(|e| self.err(e))?;
        self.lock()
            .execute(
                "INSERT OR IGNORE INTO prompts VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    p.hash,
                    p.template_version,
                    p.system,
                    p.user_prefix,
                    p.user_rubrics,
                    ids,
                    now()
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// A stored prompt, by hash.
    pub fn get_prompt(&self, hash: &str) -> Result<Option<Prompt>, CacheError> {
        let row = self
            .lock()
            .query_row(
                "SELECT system, user_prefix, user_rubrics, rubric_ids, template_version FROM prompts WHERE hash = ?1",
                params![hash],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(row.and_then(|(system, prefix, rubrics, ids, version)| {
            let ids: Vec<String> = serde_json::from_str(&ids).ok()?;
            Some(Prompt::new(system, prefix, rubrics, ids, version))
        }))
    }

    /// A stored response.
    pub fn get_response(&self, key: &CallKey) -> Result<Option<StoredResponse>, CacheError> {
        self.lock()
            .query_row(
                "SELECT outcome, text, input_tokens, output_tokens, cached_tokens, latency_ms, attempts, cache_write_tokens
                 FROM responses WHERE key = ?1",
                params![key.digest()],
                |r| {
                    let outcome: String = r.get(0)?;
                    Ok(StoredResponse {
                        outcome: if outcome == "declined" { Outcome::Declined } else { Outcome::Text },
                        text: r.get(1)?,
                        usage: Usage {
                            input: r.get::<_, i64>(2)? as u64,
                            output: r.get::<_, i64>(3)? as u64,
                            cached: r.get::<_, i64>(4)? as u64,
                            cache_write: r.get::<_, i64>(7)? as u64,
                        },
                        latency_ms: r.get::<_, i64>(5)? as u64,
                        attempts: r.get::<_, i64>(6)? as u32,
                    })
                },
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Stores one response; committed before this returns.
    pub fn put_response(&self, key: &CallKey, r: &StoredResponse) -> Result<(), CacheError> {
        self.lock()
            .execute(
                "INSERT OR REPLACE INTO responses
                 (key, provider, model, params, template_version, prompt_hash, repeat, outcome, text, input_tokens,
                  output_tokens, cached_tokens, latency_ms, attempts, created_at, cache_write_tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                params![
                    key.digest(),
                    key.provider,
                    key.model,
                    key.params,
                    key.template_version,
                    key.prompt_hash,
                    key.repeat,
                    r.outcome.as_str(),
                    r.text,
                    r.usage.input as i64,
                    r.usage.output as i64,
                    r.usage.cached as i64,
                    r.latency_ms as i64,
                    r.attempts,
                    now(),
                    r.usage.cache_write as i64
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Stores a response, or, when the database cannot take it (locked by
    /// another process beyond the busy timeout), appends it to the journal
    /// beside the file, synced, to be stored on the next chance. Only an
    /// error writing the journal itself is returned.
    pub fn keep_response(&self, key: &CallKey, r: &StoredResponse) -> Result<(), CacheError> {
        let Err(e) = self.put_response(key, r) else { return Ok(()) };
        tracing::warn!(
            "{e}; the answer is kept in {} and stored when the cache is free",
            self.journal.display()
        );
        let line = serde_json::to_string(&(key, r)).map_err(|e| self.err(e))?;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.journal)
            .map_err(|e| self.err(e))?;
        f.write_all(format!("{line}\n").as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| self.err(e))
    }

    /// Stores every answer waiting in the journal, then removes it. Leaves
    /// the journal in place (and says so) while the database is locked.
    pub fn flush_journal(&self) -> Result<usize, CacheError> {
        let text = match std::fs::read_to_string(&self.journal) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(self.err(e)),
        };
        let mut stored = 0;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            // A line cut short by a crash while appending holds no answer.
            let Ok((key, r)) = serde_json::from_str::<(CallKey, StoredResponse)>(line) else {
                continue;
            };
            if let Err(e) = self.put_response(&key, &r) {
                tracing::warn!(
                    "{e}; {} keeps its answers for the next run",
                    self.journal.display()
                );
                return Ok(stored);
            }
            stored += 1;
        }
        std::fs::remove_file(&self.journal).map_err(|e| self.err(e))?;
        Ok(stored)
    }

    /// Asks to send a call: granted when no other owner holds an unexpired
    /// lease on it, or when the owner is a process of this machine that is
    /// gone (killed: its lease would otherwise hold until it expires).
    /// `owner` should come from [`lease_owner`].
    pub fn claim(&self, key: &CallKey, owner: &str, ttl: Duration) -> Result<Lease, CacheError> {
        let now = now_secs();
        let conn = self.lock();
        let take = |conn: &Connection, stale_before: f64| {
            conn.execute(
                "INSERT INTO leases VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                 WHERE leases.expires_at < ?4 OR leases.owner = excluded.owner",
                params![key.digest(), owner, now + ttl.as_secs_f64(), stale_before],
            )
        };
        if take(&conn, now).map_err(|e| self.err(e))? > 0 {
            return Ok(Lease::Granted);
        }
        let holder: Option<String> = conn
            .query_row("SELECT owner FROM leases WHERE key = ?1", params![key.digest()], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        if holder.as_deref().is_some_and(owner_is_gone)
            && take(&conn, f64::INFINITY).map_err(|e| self.err(e))? > 0
        {
            return Ok(Lease::Granted);
        }
        Ok(Lease::HeldElsewhere)
    }

    /// Ends this owner's lease on a call.
    pub fn release(&self, key: &CallKey, owner: &str) -> Result<(), CacheError> {
        self.lock()
            .execute(
                "DELETE FROM leases WHERE key = ?1 AND owner = ?2",
                params![key.digest(), owner],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// A stored gate result and annotated view (see `run::render_key`).
    pub fn get_render(&self, key: &str) -> Result<Option<(String, Option<String>)>, CacheError> {
        self.lock()
            .query_row("SELECT gate, view FROM renders WHERE key = ?1", params![key], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Stores a gate result and annotated view.
    pub fn put_render(&self, key: &str, gate: &str, view: Option<&str>) -> Result<(), CacheError> {
        self.lock()
            .execute(
                "INSERT OR REPLACE INTO renders VALUES (?1, ?2, ?3, ?4)",
                params![key, gate, view, now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Folds the write-ahead log into the database file, so that the next
    /// run reads from the file instead of replaying a long log.
    pub fn checkpoint(&self) -> Result<(), CacheError> {
        self.lock()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .map_err(|e| self.err(e))
    }

    /// Stored check results (JSON) for an output and a task's checks.
    pub fn get_checks(&self, key: &str) -> Result<Option<String>, CacheError> {
        self.lock()
            .query_row("SELECT results FROM checks WHERE key = ?1", params![key], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Stores a task's check verdicts on one output.
    pub fn put_checks(&self, key: &str, results: &str) -> Result<(), CacheError> {
        self.lock()
            .execute(
                "INSERT OR REPLACE INTO checks VALUES (?1, ?2, ?3)",
                params![key, results, now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// How many responses are stored.
    pub fn response_count(&self) -> Result<u64, CacheError> {
        self.lock()
            .query_row("SELECT COUNT(*) FROM responses", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|e| self.err(e))
    }

    /// The file's path, for messages.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// A lease owner name for this process: "host/pid/nonce", so that another
/// process on the same machine can tell when the owner is gone.
pub fn lease_owner(nonce: &str) -> String {
    format!("{}/{}/{nonce}", host_name(), std::process::id())
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// Whether a lease owner is a process of this machine that no longer runs.
/// Only Linux can tell (through /proc); elsewhere leases wait for expiry.
fn owner_is_gone(owner: &str) -> bool {
    let mut parts = owner.splitn(3, '/');
    let (Some(host), Some(pid)) = (parts.next(), parts.next()) else { return false };
    cfg!(target_os = "linux")
        && host == host_name()
        && pid.parse::<u32>().is_ok()
        && !Path::new(&format!("/proc/{pid}")).exists()
}

/// Switches the store to WAL. SQLite answers a journal-mode change made
/// while another connection has the file open with "locked" at once,
/// without waiting on the busy timeout, so several processes opening a new
/// store together retry here until one of them has made the change.
fn enable_wal(conn: &Connection, timeout: Duration) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") {
            return Ok(());
        }
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Columns added after the first release. Look and add under one write
/// lock: two processes opening the same old (or new) store at once would
/// otherwise both see the column missing and the second ALTER would fail.
fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let result = (|| {
        let has = conn
            .prepare(
                "SELECT 1 FROM pragma_table_info('responses') WHERE name = 'cache_write_tokens'",
            )?
            .exists([])?;
        if !has {
            conn.execute_batch(
                "ALTER TABLE responses ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0",
            )?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// SQLite's "database is locked" says nothing of how long we waited.
fn busy(e: &rusqlite::Error, waited: Duration) -> String {
    match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
            format!("{e} (another process held it for more than {} s)", waited.as_secs())
        }
        _ => e.to_string(),
    }
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

    #[test]
    fn many_openers_of_a_new_store_all_succeed() {
        for round in 0..60 {
            let path = temp(&format!("openers-{round}"));
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

    fn temp(tag: &str) -> PathBuf {
        let p =
            std::env::temp_dir().join(format!("redjury-cache-{tag}-{}.sqlite", std::process::id()));
        for suffix in ["", "-wal", "-shm", ".pending.jsonl"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", p.display()));
        }
        p
    }

    #[test]
    fn leases_exclude_other_owners_until_they_expire() {
        let path = temp("lease");
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
        let path = temp("journal");
        let cache = Cache::open_with(&path, Duration::from_millis(100)).expect("opens");
        let other = Connection::open(&path).expect("second connection");
        other.execute_batch("BEGIN EXCLUSIVE").expect("lock");
        cache.keep_response(&key(7), &response()).expect("kept");
        assert!(cache.journal.exists(), "the answer waits in the journal");
        assert_eq!(
            cache.flush_journal().ok(),
            Some(0),
            "still locked: nothing stored, nothing lost"
        );
        other.execute_batch("COMMIT").expect("unlock");
        assert_eq!(cache.flush_journal().ok(), Some(1));
        assert!(!cache.journal.exists());
        assert_eq!(cache.get_response(&key(7)).ok().flatten(), Some(response()));
    }
}
