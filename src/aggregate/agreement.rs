//! How far the judges agree: pairwise agreement, Fleiss' kappa, and each
//! judge's departure from the panel verdict — numbers only; `report`
//! formats them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::score::{RubricKind, TaskResult};
use crate::verdict::Verdict;

/// Two judges' agreement over the items both voted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// One judge.
    pub a: String,
    /// The other.
    pub b: String,
    /// Items both judges voted on.
    pub items: usize,
    /// Of those, items where they voted alike.
    pub agreed: usize,
}

/// One judge against the panel's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Departure {
    /// The judge's name.
    pub judge: String,
    /// Items with both a vote from this judge and a panel verdict.
    pub votes: usize,
    /// Of those, items where the judge's vote differs from the verdict.
    pub differ: usize,
}

impl Departure {
    /// The share of votes that differ from the panel (0 without votes).
    pub(crate) fn rate(&self) -> f64 {
        if self.votes == 0 { 0.0 } else { self.differ as f64 / self.votes as f64 }
    }
}

/// Agreement among the judges of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Every judge that voted, sorted.
    pub judges: Vec<String>,
    /// Every pair of judges.
    pub pairs: Vec<Pair>,
    /// Items every judge voted on.
    pub fleiss_items: usize,
    /// `None` without items or without variation.
    pub fleiss_kappa: Option<f64>,
    /// Each judge against the panel.
    pub departures: Vec<Departure>,
}

impl Agreement {
    /// The judge whose votes differ from the panel's verdict most often.
    pub(crate) fn most_departing(&self) -> Option<&Departure> {
        self.departures.iter().filter(|d| d.votes > 0).fold(None, |best: Option<&Departure>, d| {
            match best {
                Some(b) if b.rate() >= d.rate() => Some(b),
                _ => Some(d),
            }
        })
    }
}

/// One rubric's votes by judge.
type Votes = BTreeMap<String, Option<Verdict>>;

/// Agreement over every judge rubric of `rows`.
impl Agreement {
    /// How far the judges agree over `rows` (as `redjury report` shows it).
    pub fn of(rows: &[TaskResult]) -> Agreement {
        agreement(rows)
    }
}

pub(crate) fn agreement(rows: &[TaskResult]) -> Agreement {
    let items: Vec<(&Votes, Option<Verdict>)> = rows
        .iter()
        .flat_map(|r| {
            r.rubrics.iter().filter(|x| x.kind == RubricKind::Llm).map(|x| (&x.votes, x.verdict))
        })
        .collect();
    let mut judges: Vec<String> = items.iter().flat_map(|(v, _)| v.keys().cloned()).collect();
    judges.sort();
    judges.dedup();
    let vote = |v: &Votes, j: &str| v.get(j).copied().flatten();
    let mut pairs = Vec::new();
    for (i, a) in judges.iter().enumerate() {
        for b in &judges[i + 1..] {
            let both: Vec<(Verdict, Verdict)> =
                items.iter().filter_map(|(v, _)| Some((vote(v, a)?, vote(v, b)?))).collect();
            pairs.push(Pair {
                a: a.clone(),
                b: b.clone(),
                items: both.len(),
                agreed: both.iter().filter(|(x, y)| x == y).count(),
            });
        }
    }
    let full: Vec<usize> = items
        .iter()
        .filter(|(v, _)| judges.iter().all(|j| vote(v, j).is_some()))
        .map(|(v, _)| judges.iter().filter(|j| vote(v, j) == Some(Verdict::Pass)).count())
        .collect();
    let departures = judges
        .iter()
        .map(|j| {
            let pairs: Vec<(Verdict, Verdict)> =
                items.iter().filter_map(|(v, p)| Some((vote(v, j)?, (*p)?))).collect();
            Departure {
                judge: j.clone(),
                votes: pairs.len(),
                differ: pairs.iter().filter(|(x, y)| x != y).count(),
            }
        })
        .collect();
    let fleiss_kappa = if judges.len() >= 2 { fleiss_kappa(&full, judges.len()) } else { None };
    Agreement { fleiss_items: full.len(), fleiss_kappa, pairs, departures, judges }
}

/// Fleiss' kappa for two categories: `passes[i]` of `raters` judges said
/// PASS on item i (every judge rated every item). `None` without items or
/// when chance agreement is perfect (no variation at all).
pub(crate) fn fleiss_kappa(passes: &[usize], raters: usize) -> Option<f64> {
    if passes.is_empty() || raters < 2 {
        return None;
    }
    let (n, m) = (passes.len() as f64, raters as f64);
    let agreement = |p: f64| {
        let f = m - p;
        (p * (p - 1.0) + f * (f - 1.0)) / (m * (m - 1.0))
    };
    let p_bar = passes.iter().map(|&p| agreement(p as f64)).sum::<f64>() / n;
    let share = passes.iter().sum::<usize>() as f64 / (n * m);
    let pe = share * share + (1.0 - share) * (1.0 - share);
    (pe < 1.0).then(|| (p_bar - pe) / (1.0 - pe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleiss_kappa_on_a_hand_worked_table() {
        // 4 items, 3 raters, PASS counts 3, 0, 2, 1. Per-item agreement
        // 1, 1, 1/3, 1/3 → P̄ = 2/3; PASS share 6/12 = 0.5 → Pe = 0.5;
        // κ = (2/3 − 1/2) / (1 − 1/2) = 1/3.
        let k = fleiss_kappa(&[3, 0, 2, 1], 3).unwrap_or(f64::NAN);
        assert!((k - 1.0 / 3.0).abs() < 1e-12, "{k}");
        // Perfect agreement with variation: κ = 1.
        assert_eq!(fleiss_kappa(&[3, 0, 3, 0], 3), Some(1.0));
        // Everyone always says PASS: chance agreement is 1, κ undefined.
        assert_eq!(fleiss_kappa(&[3, 3], 3), None);
        // 2 raters who always disagree on balanced items: P̄ = 0, Pe = 0.5, κ = −1.
        assert_eq!(fleiss_kappa(&[1, 1, 1, 1], 2), Some(-1.0));
        assert_eq!(fleiss_kappa(&[], 3), None);
    }
}
