//! The store: one SQLite file holding prompts, judge responses, rendered
//! views and check verdicts, shared by every run and process that names it.
//!
//! Owns: content-addressed prompts; judge responses keyed by (provider,
//! model, call parameters, template version, prompt hash, repeat index),
//! each committed on its own so a killed process loses no answer already
//! received; the render and check caches the pipeline keys by an output's
//! bytes. Must never store an API key or anything derived from one.

use std::path::Path;
use std::sync::Mutex;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::hash::sha256_hex;
use crate::prompt::Prompt;

#[derive(Debug, thiserror::Error)]
#[error("cache {path}: {message}")]
pub struct CacheError {
    pub path: String,
    pub message: String,
}

/// Token usage as the provider billed it, normalised: `input` includes
/// cached prompt tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
}

/// A stored judge response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredResponse {
    /// "text" (reply text to parse) or "declined" (reason).
    pub outcome: String,
    pub text: String,
    pub usage: Usage,
    pub latency_ms: u64,
    pub attempts: u32,
}

pub struct Cache {
    conn: Mutex<Connection>,
    path: String,
}

/// What identifies one judge call.
pub struct CallKey<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    pub params: &'a str,
    pub template_version: &'a str,
    pub prompt_hash: &'a str,
    pub repeat: u32,
}

impl CallKey<'_> {
    pub fn digest(&self) -> String {
        sha256_hex(&format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
            self.provider, self.model, self.params, self.template_version, self.prompt_hash, self.repeat
        ))
    }
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

impl Cache {
    pub fn open(path: &Path) -> Result<Cache, CacheError> {
        let err = |e: rusqlite::Error| CacheError { path: path.display().to_string(), message: e.to_string() };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| CacheError { path: path.display().to_string(), message: e.to_string() })?;
        }
        let conn = Connection::open(path).map_err(err)?;
        conn.busy_timeout(std::time::Duration::from_secs(30)).map_err(err)?;
        // WAL + NORMAL: each committed response survives the process being
        // killed; only an OS crash could lose the last few.
        conn.pragma_update(None, "journal_mode", "WAL").map_err(err)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(err)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS prompts (
                hash TEXT PRIMARY KEY, template_version TEXT NOT NULL, system TEXT NOT NULL,
                user_prefix TEXT NOT NULL, user_rubrics TEXT NOT NULL, rubric_ids TEXT NOT NULL, created_at INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS responses (
                key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL, params TEXT NOT NULL,
                template_version TEXT NOT NULL, prompt_hash TEXT NOT NULL, repeat INTEGER NOT NULL,
                outcome TEXT NOT NULL, text TEXT NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
                cached_tokens INTEGER NOT NULL, latency_ms INTEGER NOT NULL, attempts INTEGER NOT NULL, created_at INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS renders (key TEXT PRIMARY KEY, gate TEXT NOT NULL, view TEXT, created_at INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS checks (key TEXT PRIMARY KEY, results TEXT NOT NULL, created_at INTEGER NOT NULL);",
        )
        .map_err(err)?;
        Ok(Cache { conn: Mutex::new(conn), path: path.display().to_string() })
    }

    fn err(&self, e: impl std::fmt::Display) -> CacheError {
        CacheError { path: self.path.clone(), message: e.to_string() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent;
        // keep using the connection.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn put_prompt(&self, p: &Prompt) -> Result<(), CacheError> {
        let ids = serde_json::to_string(&p.rubric_ids).map_err(|e| self.err(e))?;
        self.lock()
            .execute(
                "INSERT OR IGNORE INTO prompts VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![p.hash, p.template_version, p.system, p.user_prefix, p.user_rubrics, ids, now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

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

    pub fn get_response(&self, key: &CallKey<'_>) -> Result<Option<StoredResponse>, CacheError> {
        self.lock()
            .query_row(
                "SELECT outcome, text, input_tokens, output_tokens, cached_tokens, latency_ms, attempts FROM responses WHERE key = ?1",
                params![key.digest()],
                |r| {
                    Ok(StoredResponse {
                        outcome: r.get(0)?,
                        text: r.get(1)?,
                        usage: Usage {
                            input: r.get::<_, i64>(2)? as u64,
                            output: r.get::<_, i64>(3)? as u64,
                            cached: r.get::<_, i64>(4)? as u64,
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
    pub fn put_response(&self, key: &CallKey<'_>, r: &StoredResponse) -> Result<(), CacheError> {
        self.lock()
            .execute(
                "INSERT OR REPLACE INTO responses VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    key.digest(),
                    key.provider,
                    key.model,
                    key.params,
                    key.template_version,
                    key.prompt_hash,
                    key.repeat,
                    r.outcome,
                    r.text,
                    r.usage.input as i64,
                    r.usage.output as i64,
                    r.usage.cached as i64,
                    r.latency_ms as i64,
                    r.attempts,
                    now()
                ],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// A stored gate result and annotated view (see `run::render_key`).
    pub fn get_render(&self, key: &str) -> Result<Option<(String, Option<String>)>, CacheError> {
        self.lock()
            .query_row("SELECT gate, view FROM renders WHERE key = ?1", params![key], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(|e| self.err(e))
    }

    pub fn put_render(&self, key: &str, gate: &str, view: Option<&str>) -> Result<(), CacheError> {
        self.lock()
            .execute("INSERT OR REPLACE INTO renders VALUES (?1, ?2, ?3, ?4)", params![key, gate, view, now()])
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    /// Folds the write-ahead log into the database file, so that the next
    /// run reads from the file instead of replaying a long log.
    pub fn checkpoint(&self) -> Result<(), CacheError> {
        self.lock().query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(|e| self.err(e))
    }

    /// Stored check results (JSON) for an output and a task's checks.
    pub fn get_checks(&self, key: &str) -> Result<Option<String>, CacheError> {
        self.lock().query_row("SELECT results FROM checks WHERE key = ?1", params![key], |r| r.get(0)).optional().map_err(|e| self.err(e))
    }

    pub fn put_checks(&self, key: &str, results: &str) -> Result<(), CacheError> {
        self.lock()
            .execute("INSERT OR REPLACE INTO checks VALUES (?1, ?2, ?3)", params![key, results, now()])
            .map(|_| ())
            .map_err(|e| self.err(e))
    }

    pub fn response_count(&self) -> Result<u64, CacheError> {
        self.lock().query_row("SELECT COUNT(*) FROM responses", [], |r| r.get::<_, i64>(0)).map(|n| n as u64).map_err(|e| self.err(e))
    }
}
