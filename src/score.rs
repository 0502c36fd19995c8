//! The reward: the one implementation of the benchmark's formula.
//!
//! reward = clamp((Σ w of passed positive rubrics − Σ |w| of passed
//! negative rubrics) / Σ positive w, 0, 1).
//!
//! Owns: that formula and nothing else. Must never turn a rubric without a
//! verdict into a FAIL: a missing verdict makes the task incomplete.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::gate::GateResult;
use crate::task::Side;
use crate::verdict::Verdict;

/// A scored task's reward and its parts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Reward {
    /// The reward in [0, 1].
    pub reward: f64,
    /// Σ weight of passed positive rubrics.
    pub earned: i64,
    /// Σ |weight| of passed (triggered) penalty rubrics.
    pub penalty: i64,
    /// Σ weight of positive rubrics: the denominator.
    pub total_positive: i64,
}

/// Scores one task from (weight, verdict) pairs. `None` when any rubric has
/// no verdict (the task is incomplete, never a silent 0), or when no weight
/// is positive (task loading rejects such tasks).
pub(crate) fn reward(items: &[(i32, Option<Verdict>)]) -> Option<Reward> {
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

/// What became of one task × trial. Deliberately exhaustive: a trainer
/// that matches on it must handle every status, so a new one would be a
/// compile error, never a row silently read as a reward.
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

impl Status {
    /// The status as results.jsonl writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Scored => "scored",
            Status::GateFailed => "gate_failed",
            Status::Incomplete => "incomplete",
            Status::Pending => "pending",
        }
    }
}

/// Who grades a rubric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RubricKind {
    #[default]
    /// A judge rubric.
    Llm,
    /// A deterministic check.
    Check,
}

/// One rubric's outcome for one task × trial.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct RubricResult {
    /// The rubric's id.
    pub id: String,
    #[serde(default)]
    /// Who grades it.
    pub kind: RubricKind,
    /// Its weight (negative = penalty).
    pub weight: i32,
    /// Its category, as the task writes it.
    pub category: String,
    /// A required item: if it is not met, the reward is 0 whatever else
    /// passed (a layered pass rule).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// The panel's verdict; `None` when incomplete or pending.
    pub verdict: Option<Verdict>,
    /// Each judge's vote (`None` = abstained or not asked); a check's
    /// result is under "check".
    pub votes: BTreeMap<String, Option<Verdict>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    /// Each voter's one-line reason.
    pub justifications: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    /// Why a judge gave no vote.
    pub abstentions: BTreeMap<String, String>,
    /// Judges not asked about it, and why (vote mode "decided": its
    /// verdict was settled before their turn).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub not_asked: BTreeMap<String, String>,
    /// Per judge asked more than once (`repeats`), the share of its calls
    /// that gave its vote: how sure it was (vote mode "escalate" trusts a
    /// vote from its threshold up).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub confidence: BTreeMap<String, f64>,
}

impl RubricResult {
    /// Whether the item is met: a positive item passed, or a penalty item
    /// was not triggered. `None` without a verdict.
    pub fn met(&self) -> Option<bool> {
        self.verdict.map(|v| (v == Verdict::Pass) == (self.weight > 0))
    }
}

/// One line of results.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TaskResult {
    /// The task's name.
    pub task: String,
    /// The trial.
    pub trial: String,
    /// The scenario number.
    pub scenario: String,
    /// The turn.
    pub turn: u32,
    /// The side the output represents.
    pub side: Side,
    /// The input group.
    pub group: String,
    /// The rubric variant.
    pub variant: Option<String>,
    /// What became of the row.
    pub status: Status,
    /// The validity gate's result.
    pub gate: GateResult,
    /// The reward (unrounded); `None` unless scored or gate-failed.
    pub reward: Option<f64>,
    /// Σ weight of passed positive rubrics.
    pub earned: Option<i64>,
    /// Σ |weight| of triggered penalty rubrics.
    pub penalty: Option<i64>,
    /// Σ weight of positive rubrics.
    pub total_positive: i64,
    /// The prompt the judges read (its text is in prompts.jsonl and the cache).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// Why the row is incomplete, or why a required item zeroed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every rubric's outcome, in task order.
    pub rubrics: Vec<RubricResult>,
    /// The shape of the output's tracked changes (a .docx that loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edits: Option<crate::check::gate::EditRecord>,
    /// The edits of the task's expert redline, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert: Option<crate::docx::Edits>,
}

impl TaskResult {
    /// Fills status and reward after judging: a rubric without a verdict
    /// makes the row incomplete, with the judges' reasons.
    pub fn settle_judged(&mut self) {
        if self.settle_verdicts() {
            return;
        }
        self.status = Status::Incomplete;
        self.reason = Some(self.incomplete_reason());
    }

    /// Fills status and reward when no judge was called (a dry run): a
    /// rubric without a verdict leaves the row pending.
    pub fn settle_unjudged(&mut self) {
        if !self.settle_verdicts() {
            self.status = Status::Pending;
        }
    }

    /// Clears every judge rubric's votes, to be judged again.
    pub fn reopen_judged(&mut self) {
        for r in self.rubrics.iter_mut().filter(|r| r.kind == RubricKind::Llm) {
            r.verdict = None;
            r.votes.clear();
            r.justifications.clear();
            r.abstentions.clear();
            r.not_asked.clear();
            r.confidence.clear();
        }
        self.reason = None;
    }

    /// Settles a row whose every rubric has a verdict, or a gate failure;
    /// `false` (reward cleared) when some rubric has none.
    fn settle_verdicts(&mut self) -> bool {
        self.total_positive =
            self.rubrics.iter().filter(|r| r.weight > 0).map(|r| i64::from(r.weight)).sum();
        self.reason = None;
        if !self.gate.passed {
            self.status = Status::GateFailed;
            (self.reward, self.earned, self.penalty) = (Some(0.0), Some(0), Some(0));
            return true;
        }
        let items: Vec<(i32, Option<Verdict>)> =
            self.rubrics.iter().map(|r| (r.weight, r.verdict)).collect();
        let Some(r) = reward(&items) else {
            (self.reward, self.earned, self.penalty) = (None, None, None);
            return false;
        };
        self.status = Status::Scored;
        (self.reward, self.earned, self.penalty) =
            (Some(r.reward), Some(r.earned), Some(r.penalty));
        let unmet: Vec<&str> = self
            .rubrics
            .iter()
            .filter(|x| x.required && x.met() == Some(false))
            .map(|x| x.id.as_str())
            .collect();
        if !unmet.is_empty() {
            self.reward = Some(0.0);
            self.reason = Some(format!("required item(s) not met: {}", unmet.join(", ")));
        }
        true
    }

    /// "quorum not met — judge-a: no API key: set X; judge-b: …": the
    /// judges' reasons, in judge order, for the rubrics without a verdict
    /// (which rubrics those are, their own rows say). Rows failing for the
    /// same reasons read the same, so summaries can group them.
    fn incomplete_reason(&self) -> String {
        let mut why: BTreeMap<&str, &str> = BTreeMap::new();
        for r in self.rubrics.iter().filter(|r| r.verdict.is_none()) {
            for (judge, reason) in &r.abstentions {
                why.entry(judge).or_insert(reason);
            }
        }
        if why.is_empty() {
            return "quorum not met".into();
        }
        let why: Vec<String> = why.iter().map(|(j, r)| format!("{j}: {r}")).collect();
        format!("quorum not met — {}", why.join("; "))
    }

    /// Whether the row counts in reward means (scored, or gate-failed = 0).
    pub fn counts(&self) -> bool {
        matches!(self.status, Status::Scored | Status::GateFailed)
    }
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
