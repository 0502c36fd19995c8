//! Provider batches in the store: every submitted batch and the calls it
//! carries, recorded before anything waits on it, so an interrupted run
//! (Ctrl-C, kill -9, a laptop closed for the night) polls the same
//! batches when it runs again instead of paying for the calls twice.

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{Cache, CacheError, CallKey, now};

/// Where a batch is in its life, as far as redjury knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchState {
    /// Accepted by the provider; results not yet collected.
    Submitted,
    /// Its results are stored (or it ended without any).
    Collected,
}

impl BatchState {
    fn as_str(self) -> &'static str {
        match self {
            BatchState::Submitted => "submitted",
            BatchState::Collected => "collected",
        }
    }

    fn parse(s: &str) -> BatchState {
        match s {
            "collected" => BatchState::Collected,
            _ => BatchState::Submitted,
        }
    }
}

/// One provider batch.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchRecord {
    /// The provider's id for it.
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
    /// When it was submitted (Unix seconds).
    pub created_at: i64,
}

impl Cache {
    /// Records a submitted batch and its calls (custom id → call) in one
    /// transaction.
    pub fn record_batch(
        &self,
        b: &BatchRecord,
        items: &[(String, CallKey)],
    ) -> Result<(), CacheError> {
        let mut conn = self.lock();
        let tx = conn.transaction().map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT OR REPLACE INTO batches VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)",
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
                b.created_at
            ],
        )
        .map_err(|e| self.err(e))?;
        for (custom_id, key) in items {
            let call = serde_json::to_string(key).map_err(|e| self.err(e))?;
            tx.execute(
                "INSERT OR REPLACE INTO batch_items VALUES (?1, ?2, ?3, ?4)",
                params![b.id, custom_id, call, key.digest()],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// The batches not yet collected that carry a call with this digest,
    /// sent to `base_url`.
    pub fn open_batch_of(
        &self,
        digest: &str,
        base_url: &str,
    ) -> Result<Option<String>, CacheError> {
        self.lock()
            .query_row(
                "SELECT b.id FROM batch_items i JOIN batches b ON b.id = i.batch_id
                 WHERE i.digest = ?1 AND b.base_url = ?2 AND b.state = 'submitted'
                 ORDER BY b.created_at DESC LIMIT 1",
                params![digest, base_url],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))
    }

    /// One batch.
    pub fn batch(&self, id: &str) -> Result<Option<BatchRecord>, CacheError> {
        let conn = self.lock();
        let mut stmt =
            conn.prepare(&format!("{SELECT_BATCH} WHERE id = ?1")).map_err(|e| self.err(e))?;
        stmt.query_row(params![id], batch_row).optional().map_err(|e| self.err(e))
    }

    /// Every batch, newest first.
    pub fn batches(&self) -> Result<Vec<BatchRecord>, CacheError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare(&format!("{SELECT_BATCH} ORDER BY created_at DESC, id"))
            .map_err(|e| self.err(e))?;
        let rows = stmt.query_map([], batch_row).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// A batch's calls: custom id → call.
    pub fn batch_items(&self, id: &str) -> Result<Vec<(String, CallKey)>, CacheError> {
        let conn = self.lock();
        let mut stmt = conn
            .prepare("SELECT custom_id, call FROM batch_items WHERE batch_id = ?1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (custom_id, call) = row.map_err(|e| self.err(e))?;
            let key: CallKey = serde_json::from_str(&call).map_err(|e| self.err(e))?;
            out.push((custom_id, key));
        }
        Ok(out)
    }

    /// Moves a batch on, with a note on why.
    pub fn set_batch_state(
        &self,
        id: &str,
        state: BatchState,
        note: Option<&str>,
    ) -> Result<(), CacheError> {
        self.lock()
            .execute(
                "UPDATE batches SET state = ?2, note = COALESCE(?3, note), updated_at = ?4 WHERE id = ?1",
                params![id, state.as_str(), note, now()],
            )
            .map(|_| ())
            .map_err(|e| self.err(e))
    }
}

const SELECT_BATCH: &str = "SELECT id, judge, provider, base_url, model, state, items, input_file, note, created_at FROM batches";

fn batch_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<BatchRecord> {
    Ok(BatchRecord {
        id: r.get(0)?,
        judge: r.get(1)?,
        provider: r.get(2)?,
        base_url: r.get(3)?,
        model: r.get(4)?,
        state: BatchState::parse(&r.get::<_, String>(5)?),
        items: r.get::<_, i64>(6)? as u64,
        input_file: r.get(7)?,
        note: r.get(8)?,
        created_at: r.get(9)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_batch_is_found_by_its_calls_until_collected() {
        let path =
            std::env::temp_dir().join(format!("redjury-batches-{}.sqlite", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let cache = Cache::open(&path).expect("open");
        let key = CallKey {
            provider: "openai".into(),
            model: "m".into(),
            params: "p".into(),
            template_version: "v".into(),
            prompt_hash: "h".into(),
            repeat: 0,
        };
        let record = BatchRecord {
            id: "batch_1".into(),
            judge: "gpt".into(),
            provider: "openai".into(),
            base_url: "http://x/v1".into(),
            model: "m".into(),
            state: BatchState::Submitted,
            items: 1,
            input_file: Some("file-1".into()),
            note: None,
            created_at: 1,
        };
        cache.record_batch(&record, &[(key.digest(), key.clone())]).expect("record");
        assert_eq!(
            cache.open_batch_of(&key.digest(), "http://x/v1").expect("query").as_deref(),
            Some("batch_1")
        );
        assert_eq!(cache.open_batch_of(&key.digest(), "http://other/v1").expect("query"), None);
        assert_eq!(cache.batch_items("batch_1").expect("items"), vec![(key.digest(), key.clone())]);
        cache.set_batch_state("batch_1", BatchState::Collected, Some("completed")).expect("set");
        assert_eq!(cache.open_batch_of(&key.digest(), "http://x/v1").expect("query"), None);
        let listed = cache.batches().expect("list");
        assert_eq!(listed[0].state, BatchState::Collected);
        assert_eq!(listed[0].note.as_deref(), Some("completed"));
        drop(cache);
        let _ = std::fs::remove_file(&path);
    }
}
