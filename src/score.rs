//! The reward: the one implementation of the benchmark's formula.
//!
//! reward = clamp((Σ w of passed positive rubrics − Σ |w| of passed
//! negative rubrics) / Σ positive w, 0, 1).
//!
//! Owns: that formula and nothing else. Must never turn a rubric without a
//! verdict into a FAIL: a missing verdict makes the task incomplete.

use serde::Serialize;

use crate::verdict::Verdict;

/// A scored task's reward and its parts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reward {
    pub reward: f64,
    pub earned: i64,
    pub penalty: i64,
    pub total_positive: i64,
}

/// Scores one task from (weight, verdict) pairs. `None` when any rubric has
/// no verdict (the task is incomplete, never a silent 0), or when no weight
/// is positive (task loading rejects such tasks).
pub fn reward(items: &[(i32, Option<Verdict>)]) -> Option<Reward> {
    let mut earned = 0i64;
    let mut penalty = 0i64;
    let mut total_positive = 0i64;
    for &(weight, verdict) in items {
        let weight = i64::from(weight);
        if weight > 0 {
            total_positive += weight;
        }
        match verdict? {
            Verdict::Pass if weight > 0 => earned += weight,
            Verdict::Pass => penalty += -weight,
            Verdict::Fail => {}
        }
    }
    if total_positive == 0 {
        return None;
    }
    let raw = (earned - penalty) as f64 / total_positive as f64;
    Some(Reward { reward: raw.clamp(0.0, 1.0), earned, penalty, total_positive })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Fail, Pass};

    fn r(items: &[(i32, Option<Verdict>)]) -> f64 {
        reward(items).map(|r| r.reward).unwrap_or(f64::NAN)
    }

    #[test]
    fn hand_computed_rewards() {
        // 8 + 4 earned of 8 + 4 + 3 = 15 positive: 12/15.
        assert_eq!(r(&[(8, Some(Pass)), (4, Some(Pass)), (3, Some(Fail))]), 0.8);
        // A triggered penalty subtracts its |weight|: (8 − 5) / 12.
        assert_eq!(r(&[(8, Some(Pass)), (4, Some(Fail)), (-5, Some(Pass))]), 0.25);
        // An untriggered penalty costs nothing.
        assert_eq!(r(&[(8, Some(Pass)), (4, Some(Fail)), (-5, Some(Fail))]), 8.0 / 12.0);
        // Clamped at 0: 2 − 10 < 0.
        assert_eq!(r(&[(2, Some(Pass)), (6, Some(Fail)), (-10, Some(Pass))]), 0.0);
        // Everything passes, penalties not triggered: exactly 1.
        assert_eq!(r(&[(5, Some(Pass)), (5, Some(Pass)), (-3, Some(Fail))]), 1.0);
        // Everything fails.
        assert_eq!(r(&[(5, Some(Fail)), (5, Some(Fail))]), 0.0);
        // Penalties only triggered, nothing earned.
        assert_eq!(r(&[(5, Some(Fail)), (-1, Some(Pass)), (-2, Some(Pass))]), 0.0);
        let parts = reward(&[(8, Some(Pass)), (4, Some(Fail)), (-5, Some(Pass))]).expect("scored");
        assert_eq!((parts.earned, parts.penalty, parts.total_positive), (8, 5, 12));
    }

    #[test]
    fn a_missing_verdict_leaves_the_task_incomplete() {
        assert_eq!(reward(&[(8, Some(Pass)), (4, None)]), None);
        assert_eq!(reward(&[(-4, None), (8, Some(Fail))]), None);
    }

    #[test]
    fn no_positive_weight_is_undefined() {
        assert_eq!(reward(&[(-4, Some(Fail))]), None);
    }
}

use std::collections::BTreeMap;

use crate::check::gate::GateResult;
use crate::task::Side;

/// What became of one task × trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every rubric has a verdict: the reward is final.
    Scored,
    /// The output failed the validity gate: reward 0, with the reason.
    GateFailed,
    /// Some rubric fell short of the quorum: no reward (never a silent 0).
    Incomplete,
    /// Judges were not called (dry run, or no judge has a key).
    Pending,
}

/// Who grades a rubric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RubricKind {
    #[default]
    Llm,
    Check,
}

/// One rubric's outcome for one task × trial.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct RubricResult {
    pub id: String,
    #[serde(default)]
    pub kind: RubricKind,
    pub weight: i32,
    pub category: String,
    /// The panel's verdict; `None` when incomplete or pending.
    pub verdict: Option<Verdict>,
    /// Each judge's vote (`None` = abstained or not asked); a check's
    /// result is under "check".
    pub votes: BTreeMap<String, Option<Verdict>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub justifications: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub abstentions: BTreeMap<String, String>,
}

/// One line of results.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TaskResult {
    pub task: String,
    pub trial: String,
    pub scenario: String,
    pub turn: u32,
    pub side: Side,
    pub group: String,
    pub variant: Option<String>,
    pub status: Status,
    pub gate: GateResult,
    pub reward: Option<f64>,
    pub earned: Option<i64>,
    pub penalty: Option<i64>,
    pub total_positive: i64,
    /// The prompt the judges read (its text is in prompts.jsonl and the cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    pub rubrics: Vec<RubricResult>,
}

impl TaskResult {
    /// Fills status and reward from the rubric verdicts (and the gate).
    pub fn settle(&mut self, pending: bool) {
        self.total_positive = self.rubrics.iter().filter(|r| r.weight > 0).map(|r| i64::from(r.weight)).sum();
        if !self.gate.passed {
            self.status = Status::GateFailed;
            self.reward = Some(0.0);
            self.earned = Some(0);
            self.penalty = Some(0);
            return;
        }
        let items: Vec<(i32, Option<Verdict>)> = self.rubrics.iter().map(|r| (r.weight, r.verdict)).collect();
        match reward(&items) {
            Some(r) => {
                self.status = Status::Scored;
                self.reward = Some(r.reward);
                self.earned = Some(r.earned);
                self.penalty = Some(r.penalty);
            }
            None => {
                self.status = if pending { Status::Pending } else { Status::Incomplete };
                self.reward = None;
                self.earned = None;
                self.penalty = None;
            }
        }
    }

    /// Whether the row counts in reward means (scored, or gate-failed = 0).
    pub fn counts(&self) -> bool {
        matches!(self.status, Status::Scored | Status::GateFailed)
    }
}
