//! Two runs compared over the task × trial rows both scored: figures of
//! each, the paired CI of the headline difference, and per-row rewards.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Bootstrap, Figures, figures, paired_bootstrap_ci};
use crate::score::TaskResult;

/// One row scored in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairedRow {
    /// The task.
    pub task: String,
    /// The trial.
    pub trial: String,
    /// Its reward in run A.
    pub a: f64,
    /// Its reward in run B.
    pub b: f64,
}

/// The comparison of run A with run B.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Comparison {
    /// Run A's figures over the shared rows.
    pub a: Figures,
    /// Run B's figures over the shared rows.
    pub b: Figures,
    /// Paired percentile bootstrap 95% CI of turn_weighted(A) − turn_weighted(B).
    pub delta_ci95: Option<[f64; 2]>,
    /// Paired 95% CIs of every breakdown's A − B.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta_breakdowns: Option<super::breakdowns::BreakdownCis>,
    /// Every shared row.
    pub rows: Vec<PairedRow>,
}

impl Comparison {
    /// The rows whose reward moved most, largest |A − B| first.
    pub(crate) fn movers(&self, n: usize) -> Vec<&PairedRow> {
        let mut v: Vec<&PairedRow> = self.rows.iter().filter(|r| r.a != r.b).collect();
        v.sort_by(|x, y| {
            (y.a - y.b)
                .abs()
                .total_cmp(&(x.a - x.b).abs())
                .then_with(|| (&x.task, &x.trial).cmp(&(&y.task, &y.trial)))
        });
        v.truncate(n);
        v
    }
}

/// Compares two runs over the rows both counted (scored or gate-failed).
pub(crate) fn compare(a_rows: &[TaskResult], b_rows: &[TaskResult], boot: Bootstrap) -> Comparison {
    let key = |r: &TaskResult| (r.task.clone(), r.trial.clone());
    let b_index: BTreeMap<(String, String), &TaskResult> =
        b_rows.iter().filter(|r| r.counts()).map(|r| (key(r), r)).collect();
    let shared_a: Vec<TaskResult> =
        a_rows.iter().filter(|r| r.counts() && b_index.contains_key(&key(r))).cloned().collect();
    let shared_b: Vec<TaskResult> =
        shared_a.iter().filter_map(|r| b_index.get(&key(r)).map(|x| (*x).clone())).collect();
    let rows = shared_a
        .iter()
        .zip(&shared_b)
        .map(|(a, b)| PairedRow {
            task: a.task.clone(),
            trial: a.trial.clone(),
            a: a.reward.unwrap_or(0.0),
            b: b.reward.unwrap_or(0.0),
        })
        .collect();
    Comparison {
        a: figures(&shared_a),
        b: figures(&shared_b),
        delta_ci95: paired_bootstrap_ci(&shared_a, &shared_b, boot),
        delta_breakdowns: super::breakdowns::paired_delta_cis(&shared_a, &shared_b, boot),
        rows,
    }
}
