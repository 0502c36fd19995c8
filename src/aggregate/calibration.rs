//! Agreement with gold labels: accuracy, Cohen's κ and macro-F1 of one
//! rater's PASS/FAIL verdicts against gold, Krippendorff's α among raters,
//! and a bootstrap over tasks for any of them.
//!
//! Owns: the definitions. A rater's abstention is not a verdict: the
//! figures are over the items it decided, and the share it decided is
//! reported beside them. Must never return a figure for an empty table
//! (`None` instead).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Rng;
use crate::verdict::Verdict;

/// Counts of gold × rater verdicts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confusion {
    /// Gold PASS, rater PASS.
    pub pass_pass: u64,
    /// Gold PASS, rater FAIL.
    pub pass_fail: u64,
    /// Gold FAIL, rater PASS.
    pub fail_pass: u64,
    /// Gold FAIL, rater FAIL.
    pub fail_fail: u64,
    /// Gold PASS, no verdict.
    pub pass_none: u64,
    /// Gold FAIL, no verdict.
    pub fail_none: u64,
}

impl Confusion {
    /// The table of `pairs` (gold, rater).
    pub fn of(pairs: &[(Verdict, Option<Verdict>)]) -> Confusion {
        let mut c = Confusion::default();
        for pair in pairs {
            let cell = match pair {
                (Verdict::Pass, Some(Verdict::Pass)) => &mut c.pass_pass,
                (Verdict::Pass, Some(Verdict::Fail)) => &mut c.pass_fail,
                (Verdict::Fail, Some(Verdict::Pass)) => &mut c.fail_pass,
                (Verdict::Fail, Some(Verdict::Fail)) => &mut c.fail_fail,
                (Verdict::Pass, None) => &mut c.pass_none,
                (Verdict::Fail, None) => &mut c.fail_none,
            };
            *cell += 1;
        }
        c
    }

    fn decided(&self) -> u64 {
        self.pass_pass + self.pass_fail + self.fail_pass + self.fail_fail
    }

    /// Items in the table, decided or not.
    pub fn total(&self) -> u64 {
        self.decided() + self.pass_none + self.fail_none
    }

    /// Share of items without a verdict.
    pub fn abstention_rate(&self) -> Option<f64> {
        let n = self.total();
        (n > 0).then(|| (self.pass_none + self.fail_none) as f64 / n as f64)
    }

    /// Share of decided items that agree with gold.
    pub fn accuracy(&self) -> Option<f64> {
        let n = self.decided();
        (n > 0).then(|| (self.pass_pass + self.fail_fail) as f64 / n as f64)
    }

    /// Cohen's κ over decided items: (pₒ − pₑ) / (1 − pₑ). When chance
    /// agreement is total (both always say the same one thing) κ is 1 if
    /// they agree and undefined otherwise.
    pub fn kappa(&self) -> Option<f64> {
        let n = self.decided() as f64;
        if n == 0.0 {
            return None;
        }
        let po = (self.pass_pass + self.fail_fail) as f64 / n;
        let gold_pass = (self.pass_pass + self.pass_fail) as f64 / n;
        let rater_pass = (self.pass_pass + self.fail_pass) as f64 / n;
        let pe = gold_pass * rater_pass + (1.0 - gold_pass) * (1.0 - rater_pass);
        if (1.0 - pe).abs() < 1e-12 {
            return (po == 1.0).then_some(1.0);
        }
        Some((po - pe) / (1.0 - pe))
    }

    /// Macro-F1 over the PASS and FAIL classes (a class neither gold nor
    /// the rater uses is left out of the average).
    pub fn macro_f1(&self) -> Option<f64> {
        let f1 = |tp: u64, fp: u64, fn_: u64| -> Option<f64> {
            let denominator = 2 * tp + fp + fn_;
            (denominator > 0).then(|| 2.0 * tp as f64 / denominator as f64)
        };
        let classes = [
            f1(self.pass_pass, self.fail_pass, self.pass_fail),
            f1(self.fail_fail, self.pass_fail, self.fail_pass),
        ];
        let present: Vec<f64> = classes.into_iter().flatten().collect();
        (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
    }
}

/// Krippendorff's α for nominal data: each unit is the list of verdicts
/// its raters gave (`None` = no verdict; units with fewer than two
/// verdicts are left out). α = 1 − D₀/Dₑ from the coincidence matrix.
pub(crate) fn krippendorff_alpha(units: &[Vec<Option<Verdict>>]) -> Option<f64> {
    // Coincidences o[c][k], c,k ∈ {PASS, FAIL}.
    let mut o = [[0.0f64; 2]; 2];
    let index = |v: Verdict| match v {
        Verdict::Pass => 0,
        Verdict::Fail => 1,
    };
    for unit in units {
        let values: Vec<usize> = unit.iter().flatten().map(|v| index(*v)).collect();
        let m = values.len();
        if m < 2 {
            continue;
        }
        for (i, &c) in values.iter().enumerate() {
            for (j, &k) in values.iter().enumerate() {
                if i != j {
                    o[c][k] += 1.0 / (m - 1) as f64;
                }
            }
        }
    }
    let n_c = [o[0][0] + o[0][1], o[1][0] + o[1][1]];
    let n = n_c[0] + n_c[1];
    if n <= 1.0 {
        return None;
    }
    let observed = o[0][1] + o[1][0];
    let expected = 2.0 * n_c[0] * n_c[1] / (n - 1.0);
    if expected == 0.0 {
        // Every pairable value is the same: perfect agreement, no variation.
        return (observed == 0.0).then_some(1.0);
    }
    Some(1.0 - observed / expected)
}

/// A figure and its 95% bootstrap CI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The figure over every item.
    pub value: f64,
    /// Percentile bootstrap over tasks, when there are at least two.
    pub ci95: Option<[f64; 2]>,
}

/// `metric` over every group's items, with a percentile bootstrap that
/// resamples the groups (tasks) with replacement `resamples` times from
/// `seed`. Resamples where the metric is undefined are skipped.
pub(crate) fn estimate<T: Clone>(
    groups: &BTreeMap<String, Vec<T>>,
    metric: impl Fn(&[T]) -> Option<f64>,
    resamples: usize,
    seed: u64,
) -> Option<Estimate> {
    let all: Vec<T> = groups.values().flatten().cloned().collect();
    let value = metric(&all)?;
    let keys: Vec<&String> = groups.keys().collect();
    if keys.len() < 2 || resamples == 0 {
        return Some(Estimate { value, ci95: None });
    }
    let mut rng = Rng::new(seed);
    let mut draws = Vec::with_capacity(resamples);
    let mut sample = Vec::with_capacity(all.len());
    for _ in 0..resamples {
        sample.clear();
        for _ in 0..keys.len() {
            let key = keys[rng.below(keys.len())];
            if let Some(items) = groups.get(key) {
                sample.extend(items.iter().cloned());
            }
        }
        if let Some(m) = metric(&sample) {
            draws.push(m);
        }
    }
    if draws.is_empty() {
        return Some(Estimate { value, ci95: None });
    }
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws[((q * draws.len() as f64) as usize).min(draws.len() - 1)];
    Some(Estimate { value, ci95: Some([at(0.025), at(0.975)]) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Fail as F, Pass as P};

    fn table(pp: u64, pf: u64, fp: u64, ff: u64) -> Confusion {
        Confusion {
            pass_pass: pp,
            pass_fail: pf,
            fail_pass: fp,
            fail_fail: ff,
            ..Default::default()
        }
    }

    #[test]
    fn kappa_and_f1_by_hand() {
        // 20 PASS/PASS, 5 PASS/FAIL, 10 FAIL/PASS, 15 FAIL/FAIL (n = 50):
        // pₒ = 35/50 = 0.7; gold PASS 25/50, rater PASS 30/50;
        // pₑ = 0.5·0.6 + 0.5·0.4 = 0.5; κ = 0.2/0.5 = 0.4.
        let c = table(20, 5, 10, 15);
        assert!((c.kappa().unwrap() - 0.4).abs() < 1e-12);
        assert!((c.accuracy().unwrap() - 0.7).abs() < 1e-12);
        // F1(PASS) = 40/(40+10+5) = 40/55; F1(FAIL) = 30/(30+5+10) = 30/45.
        let f1 = (40.0 / 55.0 + 30.0 / 45.0) / 2.0;
        assert!((c.macro_f1().unwrap() - f1).abs() < 1e-12);
    }

    #[test]
    fn degenerate_tables() {
        assert_eq!(Confusion::default().kappa(), None);
        assert_eq!(table(4, 0, 0, 0).kappa(), Some(1.0), "both always PASS and agree");
        assert_eq!(table(2, 0, 2, 0).kappa(), Some(0.0), "rater always PASS: chance level");
        assert_eq!(table(4, 0, 0, 0).macro_f1(), Some(1.0), "FAIL absent from both");
        let c = Confusion::of(&[(P, None), (F, Some(F)), (P, Some(P))]);
        assert_eq!(c.abstention_rate(), Some(1.0 / 3.0));
        assert_eq!(c.accuracy(), Some(1.0), "over the decided items");
    }

    #[test]
    fn alpha_by_hand() {
        // Krippendorff's worked example reduced to two values: 3 units
        // rated by 2 raters: (P,P), (P,F), (F,F). Coincidences: o_PP = 2,
        // o_FF = 2, o_PF = o_FP = 1; n = 6, n_P = n_F = 3.
        // D₀ = 2; Dₑ = 2·3·3/5 = 3.6; α = 1 − 2/3.6 = 0.4444…
        let units = vec![vec![Some(P), Some(P)], vec![Some(P), Some(F)], vec![Some(F), Some(F)]];
        assert!((krippendorff_alpha(&units).unwrap() - (1.0 - 2.0 / 3.6)).abs() < 1e-12);
        // A missing value leaves the unit's other values pairable only if ≥ 2 remain.
        let with_gaps = vec![vec![Some(P), Some(P), None], vec![Some(F), None, None]];
        assert_eq!(krippendorff_alpha(&with_gaps), Some(1.0));
        assert_eq!(krippendorff_alpha(&[vec![Some(P)]]), None);
    }

    #[test]
    fn the_bootstrap_brackets_the_figure_and_is_reproducible() {
        let mut groups = BTreeMap::new();
        for t in 0..10 {
            let items: Vec<(Verdict, Option<Verdict>)> =
                (0..10).map(|i| (P, Some(if (t + i) % 5 == 0 { F } else { P }))).collect();
            groups.insert(format!("t{t}"), items);
        }
        let acc = |items: &[(Verdict, Option<Verdict>)]| Confusion::of(items).accuracy();
        let e = estimate(&groups, acc, 1000, 7).unwrap();
        assert!((e.value - 0.8).abs() < 1e-12);
        let [lo, hi] = e.ci95.unwrap();
        assert!(lo <= 0.8 && 0.8 <= hi);
        assert_eq!(estimate(&groups, acc, 1000, 7), Some(e), "same seed, same CI");
    }
}
