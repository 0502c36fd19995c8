//! `calibrate --target-agreement A --risk R`: the thresholds of a cascade
//! (vote mode "escalate") fitted on the calibration set, what it covers and
//! costs there, and the panel file that runs it.
//!
//! Owns: the cascade's order (cheapest measured cost per call first), the
//! items it is fitted on, its figures and its panel file. Must never write
//! a judge no threshold holds for into that panel (it would only cost), nor
//! a panel when no judge holds one. The arithmetic of the fit and its bound
//! is `aggregate::cascade`'s.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{JudgeCost, Observation};
use crate::aggregate::cascade::{self, CascadeItem};
use crate::judge::config::Guarantee;

/// The file the cascade's panel is written to, in the calibration folder.
pub(crate) const PANEL_FILE: &str = "escalate-panel.toml";

/// A cascade fitted on the calibration set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cascade {
    /// What it was fitted for.
    pub guarantee: Guarantee,
    /// The judges in asking order (cheapest per call first).
    pub judges: Vec<String>,
    /// Per judge in that order: its threshold, `None` when none held (it
    /// is left out of the panel).
    pub thresholds: Vec<Option<f64>>,
    /// Per judge, the labelled items it is asked about.
    pub reached: Vec<usize>,
    /// Labelled judge items.
    pub items: usize,
    /// Share of them the cascade decides (the rest abstain).
    pub coverage: f64,
    /// Share of its decided verdicts agreeing with gold, on this set.
    pub agreement: Option<f64>,
    /// USD per 1,000 decided verdicts: per output, a call to each judge
    /// any of its rubrics reaches, at that judge's cost per whole call (a
    /// narrowed call costs less: an upper bound).
    pub cost_per_1000: Option<f64>,
}

impl Cascade {
    /// Whether any judge is trusted (else no panel is written).
    pub fn trusts_a_judge(&self) -> bool {
        self.thresholds.iter().any(Option::is_some)
    }
}

/// Fits the cascade over `names` (panel order) on the observations.
pub(super) fn fit(
    obs: &[Observation],
    names: &[String],
    costs: &BTreeMap<String, JudgeCost>,
    guarantee: Guarantee,
) -> Cascade {
    let per_call = |n: &String| costs.get(n).and_then(JudgeCost::per_call);
    let mut order: Vec<&String> = names.iter().collect();
    order.sort_by(|a, b| {
        per_call(a).unwrap_or(f64::INFINITY).total_cmp(&per_call(b).unwrap_or(f64::INFINITY))
    });
    let items: Vec<CascadeItem> = obs
        .iter()
        .map(|o| CascadeItem {
            votes: order
                .iter()
                .map(|n| {
                    let vote = o.votes.get(*n).copied().flatten()?;
                    Some((vote, o.confidence.get(*n).copied().unwrap_or(1.0)))
                })
                .collect(),
            gold: o.gold,
        })
        .collect();
    let fitted = cascade::fit(&items, guarantee.target_agreement, guarantee.risk);
    // Calls: per output, each judge reached by any of its rubrics.
    let mut calls: Vec<BTreeSet<(&str, &str)>> = vec![BTreeSet::new(); order.len()];
    for (o, item) in obs.iter().zip(&items) {
        let last = order.len().saturating_sub(1);
        let by = cascade::decide(&fitted.thresholds, &item.votes).map_or(last, |d| d.0);
        for reached in calls.iter_mut().take(by + 1) {
            reached.insert((o.task.as_str(), o.output.as_str()));
        }
    }
    let usd: Option<f64> =
        order.iter().zip(&calls).map(|(n, c)| per_call(n).map(|p| p * c.len() as f64)).sum();
    let share = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    Cascade {
        guarantee,
        judges: order.into_iter().cloned().collect(),
        thresholds: fitted.thresholds,
        reached: fitted.reached,
        items: fitted.items,
        coverage: share(fitted.decided, fitted.items).unwrap_or(0.0),
        agreement: share(fitted.agreeing, fitted.decided),
        cost_per_1000: usd
            .zip((fitted.decided > 0).then(|| 1000.0 / fitted.decided as f64))
            .map(|(u, k)| u * k),
    }
}

/// The panel file that runs the cascade: `panel` (the calibrated panel's
/// file) with vote mode "escalate" in the cascade's order, the guarantee,
/// and only the judges with a threshold, each with it. `None` when no
/// judge has one or the panel does not parse as a table.
pub(crate) fn panel_file(panel: &str, c: &Cascade) -> Option<String> {
    if !c.trusts_a_judge() {
        return None;
    }
    let mut table: toml::Table = panel.parse().ok()?;
    let judges = table.get("judge")?.as_array()?.clone();
    let mut kept = Vec::new();
    for (name, threshold) in c.judges.iter().zip(&c.thresholds) {
        let Some(t) = threshold else { continue };
        let mut judge = judges
            .iter()
            .find(|j| j.get("name").and_then(toml::Value::as_str) == Some(name.as_str()))?
            .clone();
        judge.as_table_mut()?.insert("threshold".into(), toml::Value::Float(*t));
        kept.push(judge);
    }
    // The cascade takes one judge's verdict: a quorum of 1.
    let mut vote = toml::Table::new();
    vote.insert("quorum".into(), toml::Value::Integer(1));
    vote.insert("mode".into(), toml::Value::String("escalate".into()));
    vote.insert("order".into(), toml::Value::String("panel".into()));
    vote.insert("target_agreement".into(), toml::Value::Float(c.guarantee.target_agreement));
    vote.insert("risk".into(), toml::Value::Float(c.guarantee.risk));
    table.insert("vote".into(), toml::Value::Table(vote));
    table.insert("judge".into(), toml::Value::Array(kept));
    let head = format!(
        "# Written by redjury calibrate --target-agreement {} --risk {}: on {} labelled items this cascade decided {:.1}% and agreed with gold on {} of them. On fresh items drawn like those, its verdicts agree with gold on at least {} of the rubrics it decides with probability at least {}; a rubric no judge is sure enough of abstains.\n\n",
        c.guarantee.target_agreement,
        c.guarantee.risk,
        c.items,
        c.coverage * 100.0,
        c.agreement.map_or("none".into(), |a| format!("{:.1}%", a * 100.0)),
        c.guarantee.target_agreement,
        1.0 - c.guarantee.risk
    );
    Some(head + &toml::to_string(&table).ok()?)
}
