//! The leaderboard's docx-shape sections, as RedlineBench's
//! `docx_metrics.py` computes them (`compute_surgicalness`,
//! `compute_verbosity_turn1`): surgicalness — the share of a run's
//! tracked-change events that are inline (under 30% of their paragraph's
//! unchanged text) — and, at turn 1, the verbosity trap (redlines per
//! task, edit operations per touched paragraph, average edit length,
//! paragraph overlap with the expert), each with the expert redlines'
//! row beside the run's.
//!
//! Owns: pooling the rows' edit records into those figures, rounded as
//! the reference rounds. Must never change a reward; a row whose output
//! did not load (no record) counts in no figure, as the reference skips a
//! file it cannot open.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::python::{py_mean, py_round};
use crate::docx::Edits;
use crate::score::TaskResult;

/// The inline/block split: an event under this share of its paragraph's
/// unchanged text is inline.
pub(crate) const INLINE_BLOCK_THRESHOLD: f64 = 0.30;

/// The key of the expert's row.
pub(crate) const EXPERT: &str = "expert";

/// One actor's surgicalness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Surgicalness {
    /// Inline events.
    pub n_inline: u64,
    /// Block events.
    pub n_block: u64,
    /// Inline events / events, rounded to 4 places (0 without events).
    pub inline_share: f64,
    /// Block events / events, rounded to 4 places.
    pub block_share: f64,
    /// The inline share: higher is more surgical.
    pub surgicalness_score: f64,
    /// Documents read.
    pub n_tasks: usize,
}

/// One actor's verbosity at turn 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verbosity {
    /// Mean runs of consecutive touched paragraphs per document (2 places).
    pub redlines_per_task: f64,
    /// Mean edit operations per touched paragraph, over documents that
    /// touched one (3 places).
    pub edits_per_touched_para: f64,
    /// Mean event size in characters, pooled over the events (1 place).
    pub avg_edit_length: f64,
    /// Mean |touched ∩ expert's| / |touched| by paragraph position, over
    /// tasks where both touched something (4 places); not on the expert's
    /// row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap_rate: Option<f64>,
    /// Documents read.
    pub n_tasks: usize,
    /// Tasks in the overlap mean; not on the expert's row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n_tasks_with_overlap: Option<usize>,
}

/// Both sections, by actor: the run (under its model's name) and
/// [`EXPERT`] when some task has an expert redline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DocxShape {
    /// Surgicalness per actor.
    pub surgicalness: BTreeMap<String, Surgicalness>,
    /// Verbosity at turn 1 per actor (absent without turn-1 documents).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub verbosity_turn1: BTreeMap<String, Verbosity>,
}

impl DocxShape {
    /// Whether there is nothing to show (no .docx output was read).
    pub fn is_empty(&self) -> bool {
        self.surgicalness.is_empty()
    }
}

/// The sections of `rows`, the run's row named `model`.
pub(crate) fn docx_shape(rows: &[TaskResult], model: &str) -> DocxShape {
    let read: Vec<&TaskResult> = rows.iter().filter(|r| r.edits.is_some()).collect();
    if read.is_empty() {
        return DocxShape::default();
    }
    // The expert's redline once per task, in task order.
    let mut experts: BTreeMap<&str, (&Edits, u32)> = BTreeMap::new();
    for r in rows {
        if let Some(e) = &r.expert {
            experts.entry(r.task.as_str()).or_insert((e, r.turn));
        }
    }
    let mut out = DocxShape::default();
    let own = read.iter().filter_map(|r| r.edits.as_ref()).map(|e| e.own.as_slice());
    out.surgicalness.insert(model.to_string(), surgicalness(own));
    if !experts.is_empty() {
        let all = experts.values().map(|(e, _)| e.events.as_slice());
        out.surgicalness.insert(EXPERT.into(), surgicalness(all));
    }
    let first: Vec<&TaskResult> = read.into_iter().filter(|r| r.turn == 1).collect();
    let expert_first: Vec<&Edits> =
        experts.values().filter(|(_, turn)| *turn == 1).map(|(e, _)| *e).collect();
    if !expert_first.is_empty() {
        out.verbosity_turn1.insert(EXPERT.into(), verbosity(&expert_first, None));
    }
    if !first.is_empty() {
        let docs: Vec<&Edits> =
            first.iter().filter_map(|r| r.edits.as_ref()).map(|e| &e.all).collect();
        let theirs: Vec<Option<&Edits>> =
            first.iter().map(|r| experts.get(r.task.as_str()).map(|(e, _)| *e)).collect();
        out.verbosity_turn1.insert(model.to_string(), verbosity(&docs, Some(&theirs)));
    }
    out
}

fn surgicalness<'a>(docs: impl Iterator<Item = &'a [crate::docx::EditEvent]>) -> Surgicalness {
    let (mut inline, mut block, mut tasks) = (0u64, 0u64, 0usize);
    for events in docs {
        tasks += 1;
        for e in events {
            if e.is_inline(INLINE_BLOCK_THRESHOLD) { inline += 1 } else { block += 1 }
        }
    }
    let total = inline + block;
    let share = |n: u64| if total > 0 { n as f64 / total as f64 } else { 0.0 };
    Surgicalness {
        n_inline: inline,
        n_block: block,
        inline_share: py_round(share(inline), 4),
        block_share: py_round(share(block), 4),
        surgicalness_score: py_round(share(inline), 4),
        n_tasks: tasks,
    }
}

/// The verbosity of `docs`; with `experts` (the expert's edits of each
/// document's task, when it has one), the overlap with them too.
fn verbosity(docs: &[&Edits], experts: Option<&[Option<&Edits>]>) -> Verbosity {
    let redlines: Vec<f64> = docs.iter().map(|d| d.redlines() as f64).collect();
    let per_paragraph: Vec<f64> = docs
        .iter()
        .filter(|d| d.touched_paragraphs > 0)
        .map(|d| d.operations as f64 / d.touched_paragraphs as f64)
        .collect();
    let sizes: Vec<f64> =
        docs.iter().flat_map(|d| d.events.iter().map(|e| e.size as f64)).collect();
    let overlaps: Option<Vec<f64>> = experts.map(|experts| {
        docs.iter()
            .zip(experts)
            .filter_map(|(d, e)| {
                let e = (*e)?;
                if d.touched.is_empty() || e.touched.is_empty() {
                    return None;
                }
                let theirs: std::collections::BTreeSet<u32> = e.touched.iter().copied().collect();
                let both = d.touched.iter().filter(|i| theirs.contains(i)).count();
                Some(both as f64 / d.touched.len() as f64)
            })
            .collect()
    });
    let mean = |v: &[f64], places: i32| py_mean(v).map(|m| py_round(m, places)).unwrap_or(0.0);
    Verbosity {
        redlines_per_task: mean(&redlines, 2),
        edits_per_touched_para: mean(&per_paragraph, 3),
        avg_edit_length: mean(&sizes, 1),
        overlap_rate: overlaps.as_ref().map(|o| mean(o, 4)),
        n_tasks: docs.len(),
        n_tasks_with_overlap: overlaps.as_ref().map(Vec::len),
    }
}
