//! Pivotal votes, as RedlineBench's `src/pivotal_votes.py` counts them: a
//! judge rubric is pivotal when its PASS and FAIL votes differ by one (one
//! more ballot could flip it). Per judged row: the share of its judge
//! rubrics that are pivotal, the share of its positive weight on them,
//! and the swing of its reward if every pivotal verdict flipped (an upper
//! bound on what one more judge could move); pooled over the run as the
//! reference's `PivotalTally` pools them.
//!
//! Owns: those counts from the stored votes. Must never change a reward
//! or a verdict: the flipped reward is a bound, reported beside.

use serde::{Deserialize, Serialize};

use super::python::{py_mean, py_round};
use crate::score::{RubricKind, Status, TaskResult, reward};
use crate::verdict::Verdict;

/// How many rows the summary lists by their swing.
const LISTED: usize = 10;

/// A row's pivotal rubrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PivotalRow {
    /// The task.
    pub task: String,
    /// The trial.
    pub trial: String,
    /// Judge rubrics with a vote.
    pub n_rubrics: usize,
    /// Those decided by one vote.
    pub n_pivotal: usize,
    /// The reward's change if every pivotal verdict flipped (4 places).
    pub swing: f64,
    /// The pivotal rubrics.
    pub rubrics: Vec<String>,
}

/// The run's pivotal votes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pivotal {
    /// Judge rubrics with a vote, over the judged rows.
    pub n_rubrics: usize,
    /// Those decided by one vote.
    pub n_pivotal: usize,
    /// n_pivotal / n_rubrics (4 places).
    pub fraction_pivotal: f64,
    /// Positive weight on pivotal rubrics / positive weight (4 places).
    pub pivotal_weight_share: f64,
    /// Rows judged.
    pub n_rows: usize,
    /// The mean swing over them (4 places).
    pub mean_swing: f64,
    /// The largest.
    pub max_swing: f64,
    /// The rows with the largest swings, largest first (at most 10).
    pub largest: Vec<PivotalRow>,
}

/// One row's tally: (rubrics, pivotal, positive weight, pivotal positive
/// weight, its listing).
fn row_tally(r: &TaskResult) -> Option<(usize, usize, i64, i64, PivotalRow)> {
    let mut items: Vec<(i32, Option<Verdict>)> = Vec::new();
    let mut flipped: Vec<(i32, Option<Verdict>)> = Vec::new();
    let (mut n, mut pivotal, mut positive, mut on_pivotal) = (0, 0, 0i64, 0i64);
    let mut ids = Vec::new();
    for rubric in &r.rubrics {
        items.push((rubric.weight, rubric.verdict));
        let votes: Vec<Verdict> = rubric.votes.values().filter_map(|v| *v).collect();
        if rubric.kind != RubricKind::Llm || votes.is_empty() {
            flipped.push((rubric.weight, rubric.verdict));
            continue;
        }
        n += 1;
        let passes = votes.iter().filter(|v| **v == Verdict::Pass).count() as i64;
        let fails = votes.len() as i64 - passes;
        let w = i64::from(rubric.weight.max(0));
        positive += w;
        let is_pivotal = (passes - fails).abs() == 1;
        let verdict = match (is_pivotal, rubric.verdict) {
            (true, Some(Verdict::Pass)) => Some(Verdict::Fail),
            (true, Some(Verdict::Fail)) => Some(Verdict::Pass),
            (_, v) => v,
        };
        flipped.push((rubric.weight, verdict));
        if is_pivotal {
            pivotal += 1;
            on_pivotal += w;
            ids.push(rubric.id.clone());
        }
    }
    if n == 0 {
        return None;
    }
    let swing = match (reward(&items), reward(&flipped)) {
        (Some(a), Some(b)) => py_round((b.reward - a.reward).abs(), 4),
        _ => 0.0,
    };
    let listed = PivotalRow {
        task: r.task.clone(),
        trial: r.trial.clone(),
        n_rubrics: n,
        n_pivotal: pivotal,
        swing,
        rubrics: ids,
    };
    Some((n, pivotal, positive, on_pivotal, listed))
}

/// The pivotal votes of the judged rows (status scored); `None` when no
/// judge voted.
pub(crate) fn pivotal(rows: &[TaskResult]) -> Option<Pivotal> {
    let tallies: Vec<_> =
        rows.iter().filter(|r| r.status == Status::Scored).filter_map(row_tally).collect();
    if tallies.is_empty() {
        return None;
    }
    let (n, pivotal, positive, on_pivotal) = tallies
        .iter()
        .fold((0, 0, 0i64, 0i64), |(a, b, c, d), t| (a + t.0, b + t.1, c + t.2, d + t.3));
    let swings: Vec<f64> = tallies.iter().map(|t| t.4.swing).collect();
    let mut largest: Vec<PivotalRow> =
        tallies.into_iter().map(|t| t.4).filter(|r| r.n_pivotal > 0).collect();
    largest.sort_by(|a, b| b.swing.total_cmp(&a.swing));
    largest.truncate(LISTED);
    let share = |a: i64, b: i64| if b > 0 { py_round(a as f64 / b as f64, 4) } else { 0.0 };
    Some(Pivotal {
        n_rubrics: n,
        n_pivotal: pivotal,
        fraction_pivotal: share(pivotal as i64, n as i64),
        pivotal_weight_share: share(on_pivotal, positive),
        n_rows: swings.len(),
        mean_swing: py_mean(&swings).map(|m| py_round(m, 4)).unwrap_or(0.0),
        max_swing: swings.iter().copied().fold(0.0, f64::max),
        largest,
    })
}
