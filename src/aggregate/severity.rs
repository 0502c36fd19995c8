//! RedlineBench's action-graded severity of rubric failures
//! (`src/severity.py`): every rubric of every row in the figures graded
//! on an ordinal L0–L4 scale by a fixed rule over its verdict, weight and
//! sign, and the distribution rolled up.
//!
//! The rule: a penalty item that passed (the edit it forbids was made) is
//! L4 at |w| ≥ 6, else L3; a positive item that failed is L4 at w ≥ 8, L3
//! at 6–7, L2 at 3–5, L1 at ≤ 2; anything else (met) is L0. A gate
//! failure's rubrics all count as FAIL, as the reference counts them.
//!
//! Owns: that grading and its rollup. Must never change a reward: it
//! reads the verdicts the reward was computed from.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::python::{py_mean, py_round};
use crate::score::{Status, TaskResult};
use crate::verdict::Verdict;

/// The failures graded L3 or L4.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HighSeverity {
    /// How many.
    pub count: usize,
    /// Their share of the failures (4 places; 0 without failures).
    pub share_of_failures: f64,
}

/// The severity distribution of a run's rubric records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Severity {
    /// Records per level, "L0" … "L4".
    pub levels: BTreeMap<String, usize>,
    /// Each level's share of all records (4 places): L0's is the rate of
    /// items met.
    pub share: BTreeMap<String, f64>,
    /// The mean level (4 places).
    pub mean_severity: f64,
    /// The mean level of the failures, L1 and above (4 places).
    pub mean_fail_severity: f64,
    /// The highest level met.
    pub max_severity: u8,
    /// Records graded.
    pub n_records: usize,
    /// Records at L1 and above.
    pub n_failures: usize,
    /// The failures at L3 and above.
    pub high_severity_failures: HighSeverity,
}

/// One rubric record's level.
fn level(weight: i32, verdict: Verdict) -> u8 {
    let w = weight.unsigned_abs();
    match (weight < 0, verdict) {
        (true, Verdict::Pass) if w >= 6 => 4,
        (true, Verdict::Pass) => 3,
        (true, Verdict::Fail) | (false, Verdict::Pass) => 0,
        (false, Verdict::Fail) if w >= 8 => 4,
        (false, Verdict::Fail) if w >= 6 => 3,
        (false, Verdict::Fail) if w >= 3 => 2,
        (false, Verdict::Fail) => 1,
    }
}

/// The severity of every rubric of the rows in the figures; `None`
/// without any.
pub(crate) fn severity(rows: &[TaskResult]) -> Option<Severity> {
    let mut levels: Vec<u8> = Vec::new();
    for r in rows.iter().filter(|r| r.counts()) {
        let gate_failed = r.status == Status::GateFailed;
        for rubric in &r.rubrics {
            let verdict =
                if gate_failed { Verdict::Fail } else { rubric.verdict.unwrap_or(Verdict::Fail) };
            levels.push(level(rubric.weight, verdict));
        }
    }
    if levels.is_empty() {
        return None;
    }
    let n = levels.len();
    let count = |l: u8| levels.iter().filter(|x| **x == l).count();
    let failures: Vec<f64> = levels.iter().filter(|l| **l > 0).map(|l| f64::from(*l)).collect();
    let high = levels.iter().filter(|l| **l >= 3).count();
    let all: Vec<f64> = levels.iter().map(|l| f64::from(*l)).collect();
    let label = |l: u8| format!("L{l}");
    Some(Severity {
        levels: (0..=4).map(|l| (label(l), count(l))).collect(),
        share: (0..=4).map(|l| (label(l), py_round(count(l) as f64 / n as f64, 4))).collect(),
        mean_severity: py_mean(&all).map(|m| py_round(m, 4)).unwrap_or(0.0),
        mean_fail_severity: py_mean(&failures).map(|m| py_round(m, 4)).unwrap_or(0.0),
        max_severity: levels.iter().copied().max().unwrap_or(0),
        n_records: n,
        n_failures: failures.len(),
        high_severity_failures: HighSeverity {
            count: high,
            share_of_failures: if failures.is_empty() {
                0.0
            } else {
                py_round(high as f64 / failures.len() as f64, 4)
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::level;
    use crate::verdict::Verdict::{Fail, Pass};

    /// The rule's every boundary, as `severity.py` grades them.
    #[test]
    fn levels_follow_the_references_rule() {
        let cases = [
            (-6, Pass, 4),
            (-5, Pass, 3),
            (-1, Pass, 3),
            (-9, Fail, 0),
            (9, Pass, 0),
            (8, Fail, 4),
            (7, Fail, 3),
            (6, Fail, 3),
            (5, Fail, 2),
            (3, Fail, 2),
            (2, Fail, 1),
            (1, Fail, 1),
        ];
        for (w, v, want) in cases {
            assert_eq!(level(w, v), want, "weight {w}, {v:?}");
        }
    }
}
