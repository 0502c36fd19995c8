//! The store's one interface: what the cache front (`mod.rs`) asks of an
//! engine. Two engines implement it: SQLite (`sqlite.rs`: one file, the
//! default that needs nothing) and PostgreSQL (`postgres/`: one server
//! shared by replicas on many machines and by the shards of a run).
//!
//! Owns: the operations and what each promises, whatever the engine: an
//! answer is committed before `put_response` returns; a lease is held by
//! one owner at a time until it expires; a batch intent is recorded before
//! its batch is sent; a store written by a newer redjury is refused before
//! anything is written to it. Must never carry an API key, and never let
//! an engine decide policy (journalling, holding answers in memory): the
//! front does that for both.

use std::time::Duration;

use super::{BatchItem, BatchRecord, BatchState, CacheError, CallKey, StoredResponse};
use crate::prompt::Prompt;

/// Whether the store can be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read and written.
    ReadWrite,
    /// Opened read-only (a read-only file system, say): hits are served,
    /// nothing new is kept in it.
    ReadOnly,
}

/// When a lease another owner holds may be taken over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Takeover {
    /// Once it has expired (its holder stopped renewing it).
    WhenExpired,
    /// At once, from this holder, known to be gone — only while the lease
    /// is still that holder's: of several waiters who saw it gone, exactly
    /// one takes it over (compare-and-set in one statement).
    FromGone(String),
}

/// The kinds of rows a store holds, for copying one store into another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordKind {
    Prompts,
    Responses,
    Renders,
    Checks,
    Batches,
}

impl RecordKind {
    /// Every kind, in the order a copy goes.
    pub(crate) const ALL: [RecordKind; 5] = [
        RecordKind::Prompts,
        RecordKind::Responses,
        RecordKind::Renders,
        RecordKind::Checks,
        RecordKind::Batches,
    ];

    /// The kind's name, as the store's table and in messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            RecordKind::Prompts => "prompts",
            RecordKind::Responses => "responses",
            RecordKind::Renders => "renders",
            RecordKind::Checks => "checks",
            RecordKind::Batches => "batches",
        }
    }
}

/// One row of a store, as copied from one engine to another.
#[derive(Debug, Clone)]
pub(crate) enum Record {
    Prompt(Prompt),
    Response(CallKey, StoredResponse),
    Render { key: String, gate: String, view: Option<String> },
    Checks { key: String, results: String },
    Batch(BatchRecord, Vec<BatchItem>),
}

/// What the cache front asks of an engine.
pub(crate) trait Engine: Send + Sync {
    /// Whether the store can be written.
    fn access(&self) -> Access;
    /// What happened to the store that a run should tell at its end.
    fn notes(&self) -> Vec<String>;
    /// Whether the store was lost (its file replaced) since last asked.
    fn newly_lost(&self) -> bool {
        false
    }
    /// Responses this process stored, for a journal when the store is lost.
    fn responses_since_open(&self) -> Vec<(CallKey, StoredResponse)> {
        Vec::new()
    }
    /// Flushes what the engine keeps aside (SQLite's write-ahead log).
    fn checkpoint(&self) -> Result<(), CacheError> {
        Ok(())
    }

    fn put_prompt(&self, p: &Prompt) -> Result<(), CacheError>;
    fn get_prompt(&self, hash: &str) -> Result<Option<Prompt>, CacheError>;
    fn get_response(&self, key: &CallKey) -> Result<Option<StoredResponse>, CacheError>;
    /// Stores an answer, committed before it returns; an answer already
    /// stored for the call stays (the first paid answer is the one kept).
    fn put_response(&self, key: &CallKey, r: &StoredResponse) -> Result<(), CacheError>;
    /// Takes (or renews) a lease for `owner` for `ttl`; true when taken.
    fn take_lease(
        &self,
        digest: &str,
        owner: &str,
        ttl: Duration,
        rule: Takeover,
    ) -> Result<bool, CacheError>;
    fn lease_holder(&self, digest: &str) -> Result<Option<String>, CacheError>;
    fn release(&self, digest: &str, owner: &str) -> Result<(), CacheError>;
    fn get_render(&self, key: &str) -> Result<Option<(String, Option<String>)>, CacheError>;
    fn put_render(&self, key: &str, gate: &str, view: Option<&str>) -> Result<(), CacheError>;
    fn get_checks(&self, key: &str) -> Result<Option<String>, CacheError>;
    fn put_checks(&self, key: &str, results: &str) -> Result<(), CacheError>;
    fn response_count(&self) -> Result<u64, CacheError>;

    fn record_batch(&self, b: &BatchRecord, items: &[BatchItem]) -> Result<(), CacheError>;
    fn adopt_intent(
        &self,
        intent: &str,
        id: &str,
        input_file: Option<&str>,
    ) -> Result<(), CacheError>;
    fn drop_intent(&self, intent: &str) -> Result<(), CacheError>;
    fn open_batch_of(
        &self,
        digest: &str,
        base_url: &str,
    ) -> Result<Option<(String, BatchState)>, CacheError>;
    fn batch(&self, id: &str) -> Result<Option<BatchRecord>, CacheError>;
    fn batches(&self) -> Result<Vec<BatchRecord>, CacheError>;
    fn batch_items(&self, id: &str) -> Result<Vec<BatchItem>, CacheError>;
    fn set_batch_state(
        &self,
        id: &str,
        state: BatchState,
        note: Option<&str>,
    ) -> Result<(), CacheError>;

    /// Up to `limit` rows of a kind whose keys sort after `after`, in key
    /// order, with their keys.
    fn records(
        &self,
        kind: RecordKind,
        after: &str,
        limit: usize,
    ) -> Result<Vec<(String, Record)>, CacheError>;
    /// How many rows of a kind the store holds.
    fn count(&self, kind: RecordKind) -> Result<u64, CacheError>;

    /// Reserves the next request of a budget shared by every process of
    /// the store, `interval` after the one before: how long to wait
    /// before sending. `None` when the engine keeps no shared budget (each
    /// process paces on its own).
    fn pace(&self, _budget: &str, _interval: Duration) -> Result<Option<Duration>, CacheError> {
        Ok(None)
    }
    /// Whether other machines share the store (and so its leases and rate
    /// budgets): a process that cannot reach it must wait, not go on alone.
    fn shared(&self) -> bool {
        false
    }
    /// The SQLite engine, for tests that reach its connection.
    #[cfg(test)]
    fn as_sqlite(&self) -> Option<&super::sqlite::Sqlite> {
        None
    }
    /// Holds a shared budget for `wait` (the provider said it is spent).
    fn hold(&self, _budget: &str, _wait: Duration) -> Result<(), CacheError> {
        Ok(())
    }
}
