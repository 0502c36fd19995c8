//! Provider batches in the store: every batch is recorded as an intent
//! (its calls, a run-unique tag) before it is sent, becomes a submitted
//! batch under the provider's id once accepted, and collected once its
//! results are stored. So an interrupted run (Ctrl-C, kill -9, a laptop
//! closed for the night) finds, when it runs again, every batch it may
//! have paid for — even one the provider accepted in the instant before
//! the process died — instead of paying for its calls twice.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::sqlite::Sqlite;
use super::{CacheError, CallKey, now};

/// Where a batch is in its life, as far as redjury knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchState {
    /// About to be sent: the provider may or may not have it (the next run
    /// looks it up by its tag before sending anything again).
    Intent,
    /// Accepted by the provider; results not yet collected.
    Submitted,
    /// Its results are stored (or it ended without any).
    Collected,
}

impl BatchState {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            BatchState::Intent => "intent",
            BatchState::Submitted => "submitted",
            BatchState::Collected => "collected",
        }
    }
}

/// A batch state the store holds that this redjury does not know (a newer
/// one wrote it, or the row was edited): never read as "submitted", which
/// would poll, collect or pay on a guess.
#[derive(Debug, thiserror::Error)]
#[error("a batch in the store is in state {0:?}, which this redjury does not know")]
pub struct UnknownBatchState(pub String);

impl std::str::FromStr for BatchState {
    type Err = UnknownBatchState;

    fn from_str(s: &str) -> Result<BatchState, UnknownBatchState> {
        match s {
            "intent" => Ok(BatchState::Intent),
            "submitted" => Ok(BatchState::Submitted),
            "collected" => Ok(BatchState::Collected),
            other => Err(UnknownBatchState(other.to_string())),
        }
    }
}

/// A state column read from SQLite, an unknown one a conversion error.
fn state_at(r: &rusqlite::Row<'_>, column: usize) -> rusqlite::Result<BatchState> {
    r.get::<_, String>(column)?.parse().map_err(|e: UnknownBatchState| {
        rusqlite::Error::FromSqlConversionFailure(column, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// One provider batch (or the intent to send one).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchRecord {
    /// The provider's id for it (`intent:<tag>` until it has one).
    pub id: String,
    /// The judge (panel name) it belongs to.
    pub judge: String,
    /// The provider.
    pub provider: String,
    /// The endpoint it was sent to (a batch is polled where it was made).
    pub base_url: String,
    /// The model.
    pub model: String,
    /// Where it is.
    pub state: BatchState,
    /// Calls in it.
    pub items: u64,
    /// The uploaded input file, where the provider takes one (OpenAI).
    pub input_file: Option<String>,
    /// What happened last (the provider's state, a failure).
    pub note: Option<String>,
    /// When it was recorded (Unix seconds).
    pub created_at: i64,
    /// The run-unique tag it was sent with (OpenAI metadata, Gemini's
    /// display name), by which an intent finds its batch.
    pub tag: Option<String>,
    /// The process that recorded it (a lease owner name).
    pub owner: Option<String>,
}

/// One call a batch carries.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchItem {
    /// The id the provider echoes back (the call's digest).
    pub custom_id: String,
    /// The call.
    pub key: CallKey,
    /// The rubric ids its prompt asks about, to validate the answer
    /// whichever run collects it (`None` in batches recorded before they
    /// were kept).
    pub rubric_ids: Option<Vec<String>>,
    /// Its place in the request (Gemini answers in request order).
    pub position: u32,
}

impl BatchRecord {
    /// The id an intent is recorded under.
    pub fn intent_id(tag: &str) -> String {
        format!("intent:{tag}")
    }
}

impl Sqlite {
    /// Records a batch (an intent, usually) and its calls in one
    /// transaction.
    pub(super) fn record_batch(
        &self,
        b: &BatchRecord,
        items: &[BatchItem],
    ) -> Result<(), CacheError> {
        let mut conn = self.write()?;
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT OR REPLACE INTO batches
             (id, judge, provider, base_url, model, state, items, input_file, note, created_at, updated_at, tag, owner)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11, ?12)",
            params![
                b.id,
                b.judge,
                b.provider,
                b.base_url,
                b.model,
                b.state.as_str(),
                b.items as i64,
                b.input_file,
                b.note,
                b.created_at,
                b.tag,
                b.owner
            ],
        )
        .map_err(|e| self.err(e))?;
        for item in items {
            let call = serde_json::to_string(&item.key).map_err(|e| self.err(e))?;
            let ids = item.rubric_ids.as_ref().map(serde_json::to_string).transpose();
            let ids = ids.map_err(|e| self.err(e))?;
            tx.execute(
                "INSERT OR REPLACE INTO batch_items (batch_id, custom_id, call, digest, rubric_ids, position)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![b.id, item.custom_id, call, item.key.digest(), ids, item.position],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// An intent's batch was found (or accepted): it is recorded under the
    /// provider's id, with its calls, in one transaction.
    pub(super) fn adopt_intent(
        &self,
        intent: &str,
        id: &str,
        input_file: Option<&str>,
    ) -> Result<(), CacheError> {
        let mut conn = self.write()?;
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        let moved = tx
            .execute(
                "INSERT OR REPLACE INTO batches
                 (id, judge, provider, base_url, model, state, items, input_file, note, created_at, updated_at, tag, owner)
                 SELECT ?2, judge, provider, base_url, model, 'submitted', items, COALESCE(?3, input_file), note,
                        created_at, ?4, tag, owner FROM batches WHERE id = ?1",
                params![intent, id, input_file, now()],
            )
            .map_err(|e| self.err(e))?;
        if moved == 0 {
            return Err(self.err(format!("no batch intent {intent} is recorded")));
        }
        tx.execute("UPDATE batch_items SET batch_id = ?2 WHERE batch_id = ?1", params![intent, id])
            .map_err(|e| self.err(e))?;
        tx.execute("DELETE FROM batches WHERE id = ?1", params![intent])
            .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// Forgets an intent whose batch the provider never created.
    pub(super) fn drop_intent(&self, intent: &str) -> Result<(), CacheError> {
        let mut conn = self.write()?;
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        for sql in
            ["DELETE FROM batch_items WHERE batch_id = ?1", "DELETE FROM batches WHERE id = ?1"]
        {
            tx.execute(sql, params![intent]).map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// The batch not yet collected (or intent) that carries a call with
    /// this digest, sent to `base_url`: (id, state).
    pub(super) fn open_batch_of(
        &self,
        digest: &str,
        base_url: &str,
    ) -> Result<Option<(String, BatchState)>, CacheError> {
        self.read()
            .query_row(
                "SELECT b.id, b.state FROM batch_items i JOIN batches b ON b.id = i.batch_id
                 WHERE i.digest = ?1 AND b.base_url = ?2 AND b.state IN ('submitted', 'intent')
                 ORDER BY b.state = 'intent', b.created_at DESC LIMIT 1",
                params![digest, base_url],
                |r| Ok((r.get(0)?, state_at(r, 1)?)),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    pub(super) fn batch(&self, id: &str) -> Result<Option<BatchRecord>, CacheError> {
        let conn = self.read();
        let mut stmt =
            conn.prepare(&format!("{SELECT_BATCH} WHERE id = ?1")).map_err(|e| self.err(e))?;
        stmt.query_row(params![id], batch_row).optional().map_err(|e| self.err(e))
    }

    pub(super) fn batches(&self) -> Result<Vec<BatchRecord>, CacheError> {
        let conn = self.read();
        let mut stmt = conn
            .prepare(&format!("{SELECT_BATCH} ORDER BY created_at DESC, id"))
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], batch_row).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    pub(super) fn batch_items(&self, id: &str) -> Result<Vec<BatchItem>, CacheError> {
        let conn = self.read();
        let mut stmt = conn
            .prepare(
                "SELECT custom_id, call, rubric_ids, position FROM batch_items WHERE batch_id = ?1
                 ORDER BY position, rowid",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<i64>>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for (n, row) in rows.enumerate() {
            let (custom_id, call, ids, position) = row.map_err(|e| self.err(e))?;
            let key: CallKey = serde_json::from_str(&call).map_err(|e| self.err(e))?;
            let rubric_ids = ids.and_then(|t| serde_json::from_str(&t).ok());
            let position = position.map(|p| p as u32).unwrap_or(n as u32);
            out.push(BatchItem { custom_id, key, rubric_ids, position });
        }
        Ok(out)
    }

    pub(super) fn set_batch_state(
        &self,
        id: &str,
        state: BatchState,
        note: Option<&str>,
    ) -> Result<(), CacheError> {
        self.write()?
            .execute(
                "UPDATE batches SET state = ?2, note = COALESCE(?3, note), updated_at = ?4 WHERE id = ?1",
                params![id, state.as_str(), note, now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }
}

const SELECT_BATCH: &str = "SELECT id, judge, provider, base_url, model, state, items, input_file, note, created_at, tag, owner FROM batches";

fn batch_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<BatchRecord> {
    Ok(BatchRecord {
        id: r.get(0)?,
        judge: r.get(1)?,
        provider: r.get(2)?,
        base_url: r.get(3)?,
        model: r.get(4)?,
        state: state_at(r, 5)?,
        items: r.get::<_, i64>(6)? as u64,
        input_file: r.get(7)?,
        note: r.get(8)?,
        created_at: r.get(9)?,
        tag: r.get(10)?,
        owner: r.get(11)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cache;

    fn key() -> CallKey {
        CallKey {
            provider: "openai".into(),
            model: "m".into(),
            params: "p".into(),
            template_version: "v".into(),
            prompt_hash: "h".into(),
            repeat: 0,
        }
    }

    fn intent(tag: &str) -> BatchRecord {
        BatchRecord {
            id: BatchRecord::intent_id(tag),
            judge: "gpt".into(),
            provider: "openai".into(),
            base_url: "http://x/v1".into(),
            model: "m".into(),
            state: BatchState::Intent,
            items: 1,
            input_file: None,
            note: None,
            created_at: 1,
            tag: Some(tag.into()),
            owner: Some("host/1/x".into()),
        }
    }

    /// Regression (issue 39): a state the store holds that this redjury
    /// does not know was read as "submitted" (polled and collected on a
    /// guess); it is an error naming the state.
    #[test]
    fn an_unknown_batch_state_is_an_error_not_submitted() {
        assert_eq!("collected".parse::<BatchState>().ok(), Some(BatchState::Collected));
        let dir = tempfile::tempdir().expect("temp");
        let path = dir.path().join("c.sqlite");
        let cache = Cache::open(&path).expect("open");
        let item =
            BatchItem { custom_id: key().digest(), key: key(), rubric_ids: None, position: 0 };
        cache.record_batch(&intent("t1"), std::slice::from_ref(&item)).expect("record");
        let raw = rusqlite::Connection::open(&path).expect("raw");
        raw.execute("UPDATE batches SET state = 'cancelling'", []).expect("edit");
        let read = cache.batch("intent:t1").map(|_| ()).map_err(|e| e.to_string());
        let why = read.err().unwrap_or_default();
        assert!(why.contains("state \"cancelling\", which this redjury does not know"), "{why}");
        let open = cache.open_batch_of(&key().digest(), "http://x/v1").map_err(|e| e.to_string());
        assert_eq!(open.ok(), Some(None), "only intents and submitted batches are open");
    }

    /// An intent carries its calls (with their rubric ids) before anything
    /// is sent; adopted under the provider's id it is found by its calls
    /// until collected; a dropped intent leaves nothing behind.
    #[test]
    fn an_intent_becomes_a_batch_found_by_its_calls_until_collected() {
        let dir = tempfile::tempdir().expect("temp");
        let cache = Cache::open(&dir.path().join("c.sqlite")).expect("open");
        let item = BatchItem {
            custom_id: key().digest(),
            key: key(),
            rubric_ids: Some(vec!["r1".into(), "r2".into()]),
            position: 0,
        };
        cache.record_batch(&intent("t1"), std::slice::from_ref(&item)).expect("record");
        let found = cache.open_batch_of(&key().digest(), "http://x/v1").expect("query");
        assert_eq!(found, Some(("intent:t1".to_string(), BatchState::Intent)));
        cache.adopt_intent("intent:t1", "batch_1", Some("file-1")).expect("adopt");
        let found = cache.open_batch_of(&key().digest(), "http://x/v1").expect("query");
        assert_eq!(found, Some(("batch_1".to_string(), BatchState::Submitted)));
        assert_eq!(cache.open_batch_of(&key().digest(), "http://other/v1").expect("query"), None);
        assert_eq!(cache.batch_items("batch_1").expect("items"), vec![item.clone()]);
        let adopted = cache.batch("batch_1").expect("read").expect("recorded");
        assert_eq!(
            (adopted.tag.as_deref(), adopted.input_file.as_deref()),
            (Some("t1"), Some("file-1"))
        );
        assert_eq!(cache.batch("intent:t1").expect("read"), None);
        cache.set_batch_state("batch_1", BatchState::Collected, Some("completed")).expect("set");
        assert_eq!(cache.open_batch_of(&key().digest(), "http://x/v1").expect("query"), None);
        cache.record_batch(&intent("t2"), &[item]).expect("record");
        cache.drop_intent("intent:t2").expect("drop");
        assert_eq!(cache.batch_items("intent:t2").expect("items"), vec![]);
        assert_eq!(cache.batches().expect("list").len(), 1);
    }
}
