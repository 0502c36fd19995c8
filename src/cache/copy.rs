//! `redjury cache copy FROM TO`: every row of one store into another —
//! SQLite to PostgreSQL and back — so a team's paid answers carry over.
//!
//! Owns: the copy, page by page in key order, and its check. Must never
//! change FROM, never replace an answer TO already holds (a copy run again
//! after an interruption skips what is there), and never call it done
//! while TO holds fewer rows of a kind than FROM.

use std::path::Path;

use super::engine::{Record, RecordKind};
use super::{Cache, CacheError};

/// Rows read from FROM per round trip.
const PAGE: usize = 500;

/// What a copy did, per kind of row: (kind, rows in FROM, rows in TO after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyReport {
    /// Per kind of row: its name, the rows FROM holds and TO holds now.
    pub kinds: Vec<(String, u64, u64)>,
}

impl CopyReport {
    /// One line per kind, for the user.
    pub fn text(&self) -> String {
        self.kinds
            .iter()
            .map(|(kind, from, to)| {
                format!("{kind}: {from} in the source, {to} in the destination\n")
            })
            .collect()
    }
}

/// Copies every row of the store at `from` into the store at `to` (each a
/// SQLite file or a `postgres://` URL), then checks that `to` holds at
/// least as many rows of each kind. Run again after an interruption, it
/// copies what is missing.
pub fn copy_store(from: &Path, to: &Path) -> Result<CopyReport, CacheError> {
    let source = Cache::open(from)?;
    let target = Cache::open(to)?;
    if source.location == target.location {
        return Err(source.err("the source and the destination are the same store"));
    }
    let mut kinds = Vec::new();
    for kind in RecordKind::ALL {
        let mut after = String::new();
        loop {
            let page = source.store.records(kind, &after, PAGE)?;
            let Some((last, _)) = page.last() else { break };
            after = last.clone();
            for (_, record) in &page {
                put(&target, record)?;
            }
        }
        let (n_from, n_to) = (source.store.count(kind)?, target.store.count(kind)?);
        if n_to < n_from {
            return Err(target.err(format!(
                "{} holds {n_to} {} after the copy, the source {n_from}: run the copy again",
                target.location.display(),
                kind.name()
            )));
        }
        kinds.push((kind.name().to_string(), n_from, n_to));
    }
    target.checkpoint()?;
    Ok(CopyReport { kinds })
}

fn put(target: &Cache, record: &Record) -> Result<(), CacheError> {
    match record {
        Record::Prompt(p) => target.put_prompt(p),
        Record::Response(key, r) => {
            // An answer the destination holds already is the one kept.
            if target.get_response(key)?.is_none() {
                target.put_response(key, r)?;
            }
            Ok(())
        }
        Record::Render { key, gate, view } => target.put_render(key, gate, view.as_deref()),
        Record::Checks { key, results } => target.put_checks(key, results),
        Record::Batch(b, items) => target.record_batch(b, items),
    }
}
