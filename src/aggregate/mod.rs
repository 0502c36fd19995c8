//! Aggregation: from task × trial rewards to the figures models are compared
//! by — reproducing the reference benchmark's method exactly, then adding
//! what it lacks (counts of what was dropped, a CI over input groups).
//!
//! The reference method: a group's score is the mean of its rows (variants
//! and trials); `overall` is the mean over groups; a (scenario, turn) cell is
//! the mean of its groups' scores, rounded to 4 places (the reference rounds
//! cells before averaging them); the headline `turn_weighted` is the mean
//! over cells. `by_turn` averages groups; `by_side` and `by_scenario`
//! average cells (a cell's side is the side of its first row).
//!
//! Owns: those definitions and a reproducible bootstrap. Must never average
//! an incomplete or pending row into a mean, and never drop a gate failure
//! from one (it counts as 0).

pub mod agreement;
pub mod compare;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::score::{Status, TaskResult};
use crate::task::Side;
use crate::verdict::Verdict;

/// Counts of every kind of outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Rows (task × trial) with an output.
    pub results: usize,
    pub scored: usize,
    pub gate_failed: usize,
    pub incomplete: usize,
    pub pending: usize,
    /// Tasks with no output at all.
    pub missing_outputs: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    pub seed: u64,
    pub resamples: usize,
}

/// Headline figures and breakdowns for one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub overall: Option<f64>,
    pub turn_weighted: Option<f64>,
    pub mean_per_task: Option<f64>,
    pub by_turn: BTreeMap<String, f64>,
    pub by_side: BTreeMap<String, f64>,
    pub by_scenario: BTreeMap<String, f64>,
    /// Cells "scenario-turn".
    pub by_scenario_turn: BTreeMap<String, f64>,
    pub by_category: BTreeMap<String, f64>,
    pub groups: BTreeMap<String, f64>,
}

/// Rounds like Python's `round(x, 4)` for the values we meet (ties are
/// vanishingly rare in means of rewards).
pub fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn side_name(s: Side) -> String {
    match s {
        Side::A => "A".into(),
        Side::B => "B".into(),
    }
}

/// Figures over the rows that count (scored and gate-failed).
pub fn figures(rows: &[TaskResult]) -> Figures {
    let counted: Vec<&TaskResult> = rows.iter().filter(|r| r.counts()).collect();
    let mut by_group: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in &counted {
        by_group.entry(&r.group).or_default().push(r.reward.unwrap_or(0.0));
    }
    let groups: BTreeMap<String, f64> = by_group.iter().filter_map(|(g, v)| Some((g.to_string(), mean(v)?))).collect();
    headline(&counted, &groups)
}

/// The part of [`figures`] that depends on which groups are in: reused by
/// the bootstrap on resampled groups.
fn headline(counted: &[&TaskResult], groups: &BTreeMap<String, f64>) -> Figures {
    // Cells and the first side seen in each, in row order (as the reference).
    let mut cell_groups: BTreeMap<(String, u32), Vec<&str>> = BTreeMap::new();
    let mut cell_side: BTreeMap<(String, u32), Side> = BTreeMap::new();
    let mut turn_groups: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
    for r in counted {
        let cell = (r.scenario.clone(), r.turn);
        let entry = cell_groups.entry(cell.clone()).or_default();
        if !entry.contains(&r.group.as_str()) {
            entry.push(&r.group);
        }
        cell_side.entry(cell).or_insert(r.side);
        let t = turn_groups.entry(r.turn).or_default();
        if !t.contains(&r.group.as_str()) {
            t.push(&r.group);
        }
    }
    let mut by_scenario_turn = BTreeMap::new();
    let mut cells: Vec<((String, u32), f64)> = Vec::new();
    for (cell, gs) in &cell_groups {
        let values: Vec<f64> = gs.iter().filter_map(|g| groups.get(*g).copied()).collect();
        if let Some(m) = mean(&values) {
            let m = round4(m);
            by_scenario_turn.insert(format!("{}-{}", cell.0, cell.1), m);
            cells.push((cell.clone(), m));
        }
    }
    let cell_values: Vec<f64> = cells.iter().map(|(_, v)| *v).collect();
    let mut by_scenario_cells: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut by_side_cells: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for ((scenario, turn), v) in &cells {
        by_scenario_cells.entry(scenario.clone()).or_default().push(*v);
        if let Some(side) = cell_side.get(&(scenario.clone(), *turn)) {
            by_side_cells.entry(side_name(*side)).or_default().push(*v);
        }
    }
    let collapse = |m: BTreeMap<String, Vec<f64>>| -> BTreeMap<String, f64> {
        m.into_iter().filter_map(|(k, v)| Some((k, round4(mean(&v)?)))).collect()
    };
    let by_turn = turn_groups
        .iter()
        .filter_map(|(t, gs)| {
            let values: Vec<f64> = gs.iter().filter_map(|g| groups.get(*g).copied()).collect();
            Some((t.to_string(), round4(mean(&values)?)))
        })
        .collect();
    let per_task: Vec<f64> = counted.iter().map(|r| r.reward.unwrap_or(0.0)).collect();
    Figures {
        overall: mean(&groups.values().copied().collect::<Vec<_>>()).map(round4),
        turn_weighted: mean(&cell_values).map(round4),
        mean_per_task: mean(&per_task).map(round4),
        by_turn,
        by_side: collapse(by_side_cells),
        by_scenario: collapse(by_scenario_cells),
        by_scenario_turn,
        by_category: by_category(counted),
        groups: groups.iter().map(|(k, v)| (k.clone(), round4(*v))).collect(),
    }
}

/// Pooled per category: Σ weight of rubrics graded correct / Σ |weight|, a
/// penalty rubric being correct when not triggered. Scored rows only.
fn by_category(rows: &[&TaskResult]) -> BTreeMap<String, f64> {
    let mut acc: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == Status::Scored) {
        for rubric in &r.rubrics {
            let w = i64::from(rubric.weight.abs());
            let e = acc.entry(rubric.category.clone()).or_default();
            e.1 += w;
            let passed = rubric.verdict == Some(Verdict::Pass);
            if (rubric.weight > 0 && passed) || (rubric.weight < 0 && !passed) {
                e.0 += w;
            }
        }
    }
    acc.into_iter().filter(|(_, (_, t))| *t > 0).map(|(c, (e, t))| (c, round4(e as f64 / t as f64))).collect()
}

pub fn counts(rows: &[TaskResult], missing_outputs: usize) -> Counts {
    let n = |s: Status| rows.iter().filter(|r| r.status == s).count();
    Counts {
        results: rows.len(),
        scored: n(Status::Scored),
        gate_failed: n(Status::GateFailed),
        incomplete: n(Status::Incomplete),
        pending: n(Status::Pending),
        missing_outputs,
    }
}

/// Best-of-k: each task's best trial (ties: the first trial in name order).
pub fn best_of_trials(rows: &[TaskResult]) -> Vec<TaskResult> {
    let mut best: BTreeMap<&str, &TaskResult> = BTreeMap::new();
    let mut sorted: Vec<&TaskResult> = rows.iter().filter(|r| r.counts()).collect();
    sorted.sort_by(|a, b| (&a.task, &a.trial).cmp(&(&b.task, &b.trial)));
    for r in sorted {
        let e = best.entry(&r.task).or_insert(r);
        if r.reward.unwrap_or(0.0) > e.reward.unwrap_or(0.0) {
            *e = r;
        }
    }
    best.into_values().cloned().collect()
}

/// SplitMix64: small, fast, and the same sequence on every platform.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (multiply-high; no float involved).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// Percentile bootstrap 95% CI of `turn_weighted`, resampling input groups
/// with replacement; bit-for-bit reproducible for a seed. Reference-style
/// percentiles: sorted[⌊0.025·n⌋] and sorted[⌊0.975·n⌋].
pub fn bootstrap_ci(rows: &[TaskResult], boot: Bootstrap) -> Option<[f64; 2]> {
    let groups = group_cells(rows);
    if groups.len() < 2 || boot.resamples == 0 {
        return figures(rows).turn_weighted.map(|t| [t, t]);
    }
    let values: Vec<((String, u32), Vec<f64>)> = groups.into_iter().map(|(_, cell, m)| (cell, vec![m])).collect();
    resample(&values, boot, |tw| tw[0])
}

/// Paired percentile bootstrap 95% CI of turn_weighted(A) − turn_weighted(B)
/// over the input groups both runs scored: every draw resamples the same
/// groups in both runs.
pub fn paired_bootstrap_ci(a: &[TaskResult], b: &[TaskResult], boot: Bootstrap) -> Option<[f64; 2]> {
    let b_means: BTreeMap<String, f64> = group_cells(b).into_iter().map(|(g, _, m)| (g, m)).collect();
    let values: Vec<((String, u32), Vec<f64>)> =
        group_cells(a).into_iter().filter_map(|(g, cell, m)| Some((cell, vec![m, *b_means.get(&g)?]))).collect();
    if values.len() < 2 || boot.resamples == 0 {
        return None;
    }
    resample(&values, boot, |tw| tw[0] - tw[1])
}

/// Each counted group: its name, its (scenario, turn) cell and its
/// unrounded mean. The headline of a resample needs nothing else.
fn group_cells(rows: &[TaskResult]) -> Vec<(String, (String, u32), f64)> {
    let mut cell_of: BTreeMap<&str, (String, u32)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.counts()) {
        cell_of.entry(&r.group).or_insert((r.scenario.clone(), r.turn));
    }
    exact_group_means(rows).into_iter().filter_map(|(g, m)| Some((g.to_string(), cell_of.get(g)?.clone(), m))).collect()
}

/// Resamples groups with replacement; for each draw computes the
/// turn-weighted figure of every run (cells rounded as the reference does)
/// and reduces them with `stat`. Reference-style percentiles:
/// sorted[⌊0.025·n⌋] and sorted[⌊0.975·n⌋].
fn resample(groups: &[((String, u32), Vec<f64>)], boot: Bootstrap, stat: impl Fn(&[f64]) -> f64) -> Option<[f64; 2]> {
    let runs = groups.first().map(|(_, v)| v.len()).unwrap_or(0);
    let cells: Vec<(String, u32)> = {
        let mut c: Vec<(String, u32)> = groups.iter().map(|(c, _)| c.clone()).collect();
        c.sort();
        c.dedup();
        c
    };
    let cell_index: Vec<usize> = groups.iter().map(|(c, _)| cells.binary_search(c).unwrap_or(0)).collect();
    let mut rng = Rng::new(boot.seed);
    let mut stats = Vec::with_capacity(boot.resamples);
    let mut sums = vec![vec![0.0f64; cells.len()]; runs];
    let mut ns = vec![0usize; cells.len()];
    let mut tw = vec![0.0f64; runs];
    for _ in 0..boot.resamples {
        sums.iter_mut().for_each(|s| s.iter_mut().for_each(|x| *x = 0.0));
        ns.iter_mut().for_each(|n| *n = 0);
        for _ in 0..groups.len() {
            let g = rng.below(groups.len());
            for (r, v) in groups[g].1.iter().enumerate() {
                sums[r][cell_index[g]] += v;
            }
            ns[cell_index[g]] += 1;
        }
        let mut complete = true;
        for r in 0..runs {
            let cell_means: Vec<f64> = sums[r].iter().zip(&ns).filter(|(_, n)| **n > 0).map(|(s, n)| round4(s / *n as f64)).collect();
            match mean(&cell_means) {
                Some(m) => tw[r] = m,
                None => complete = false,
            }
        }
        if complete {
            stats.push(stat(&tw));
        }
    }
    if stats.is_empty() {
        return None;
    }
    stats.sort_by(|a, b| a.total_cmp(b));
    let n = stats.len();
    let lo = stats[((0.025 * n as f64) as usize).min(n - 1)];
    let hi = stats[((0.975 * n as f64) as usize).min(n - 1)];
    Some([round4(lo), round4(hi)])
}

fn exact_group_means(rows: &[TaskResult]) -> BTreeMap<&str, f64> {
    let mut by_group: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.counts()) {
        by_group.entry(&r.group).or_default().push(r.reward.unwrap_or(0.0));
    }
    by_group.into_iter().filter_map(|(g, v)| Some((g, mean(&v)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::gate::GateResult;

    fn row(task: &str, trial: &str, scenario: &str, turn: u32, side: Side, group: &str, status: Status, reward: Option<f64>) -> TaskResult {
        TaskResult {
            task: task.into(),
            trial: trial.into(),
            scenario: scenario.into(),
            turn,
            side,
            group: group.into(),
            variant: None,
            status,
            gate: GateResult { passed: status != Status::GateFailed, reason: String::new(), revisions: 0, comments: 0 },
            reward,
            earned: None,
            penalty: None,
            total_positive: 10,
            prompt_hash: None,
            reason: None,
            rubrics: vec![],
        }
    }

    /// Hand-built: scenario 1 has turn 1 (side A) with groups g1 (variants
    /// a = 1.0, b = 0.5 → 0.75) and g2 (0.25), and turn 2 (side B) with g3
    /// (a gate failure = 0 and a 0.6 → 0.3). Scenario 2 turn 1 (side A) has
    /// g4 = 0.9, plus an incomplete row that must not count.
    fn set() -> Vec<TaskResult> {
        use Side::*;
        use Status::*;
        vec![
            row("t-g1a", "1", "1", 1, A, "s1-t1-g01", Scored, Some(1.0)),
            row("t-g1b", "1", "1", 1, A, "s1-t1-g01", Scored, Some(0.5)),
            row("t-g2", "1", "1", 1, A, "s1-t1-g02", Scored, Some(0.25)),
            row("t-g3a", "1", "1", 2, B, "s1-t2-g01", GateFailed, Some(0.0)),
            row("t-g3b", "1", "1", 2, B, "s1-t2-g01", Scored, Some(0.6)),
            row("t-g4", "1", "2", 1, A, "s2-t1-g01", Scored, Some(0.9)),
            row("t-g5", "1", "2", 1, A, "s2-t1-g02", Incomplete, None),
        ]
    }

    #[test]
    fn figures_on_a_hand_built_set() {
        let f = figures(&set());
        // Groups: g1 0.75, g2 0.25, g3 0.3, g4 0.9 → overall 2.2 / 4 = 0.55.
        assert_eq!(f.overall, Some(0.55));
        // Cells: 1-1 = (0.75 + 0.25) / 2 = 0.5; 1-2 = 0.3; 2-1 = 0.9 → 1.7 / 3.
        assert_eq!(f.by_scenario_turn, BTreeMap::from([("1-1".into(), 0.5), ("1-2".into(), 0.3), ("2-1".into(), 0.9)]));
        assert_eq!(f.turn_weighted, Some(0.5667));
        // by_turn averages groups: turn 1 = (0.75 + 0.25 + 0.9) / 3, turn 2 = 0.3.
        assert_eq!(f.by_turn, BTreeMap::from([("1".into(), 0.6333), ("2".into(), 0.3)]));
        // by_side averages cells: A = (0.5 + 0.9) / 2, B = 0.3.
        assert_eq!(f.by_side, BTreeMap::from([("A".into(), 0.7), ("B".into(), 0.3)]));
        assert_eq!(f.by_scenario, BTreeMap::from([("1".into(), 0.4), ("2".into(), 0.9)]));
        // Flat mean over the six counted rows: 3.25 / 6.
        assert_eq!(f.mean_per_task, Some(0.5417));
        let c = counts(&set(), 2);
        assert_eq!((c.results, c.scored, c.gate_failed, c.incomplete, c.missing_outputs), (7, 5, 1, 1, 2));
    }

    #[test]
    fn best_of_k_takes_each_tasks_best_trial() {
        use Side::*;
        use Status::*;
        let rows = vec![
            row("t1", "1", "1", 1, A, "g1", Scored, Some(0.2)),
            row("t1", "2", "1", 1, A, "g1", Scored, Some(0.8)),
            row("t2", "1", "1", 1, A, "g2", Scored, Some(0.4)),
            row("t2", "2", "1", 1, A, "g2", GateFailed, Some(0.0)),
        ];
        let best = best_of_trials(&rows);
        assert_eq!(best.iter().map(|r| (r.task.as_str(), r.trial.as_str())).collect::<Vec<_>>(), [("t1", "2"), ("t2", "1")]);
        assert_eq!(figures(&best).turn_weighted, Some(0.6));
        // Mean over trials: groups 0.5 and 0.2 → 0.35.
        assert_eq!(figures(&rows).turn_weighted, Some(0.35));
    }

    #[test]
    fn bootstrap_is_reproducible_and_brackets_the_estimate() {
        let boot = Bootstrap { seed: 7, resamples: 2000 };
        let a = bootstrap_ci(&set(), boot).expect("ci");
        let b = bootstrap_ci(&set(), boot).expect("ci");
        assert_eq!(a, b, "same seed, same interval, bit for bit");
        assert!(a[0] <= 0.5667 && 0.5667 <= a[1], "{a:?}");
        assert!(a[0] >= 0.0 && a[1] <= 1.0);
        let c = bootstrap_ci(&set(), Bootstrap { seed: 8, resamples: 2000 }).expect("ci");
        assert!(c[0] <= c[1]);
        // A run against itself: every paired difference is exactly 0.
        assert_eq!(paired_bootstrap_ci(&set(), &set(), boot), Some([0.0, 0.0]));
        // Against a run 0.1 lower on every row, the difference is 0.1 on
        // every draw (up to the cells' 4-place rounding).
        let lower: Vec<TaskResult> = set()
            .into_iter()
            .map(|mut r| {
                r.reward = r.reward.map(|x| x - 0.1);
                r
            })
            .collect();
        let d = paired_bootstrap_ci(&set(), &lower, boot).expect("ci");
        assert!((d[0] - 0.1).abs() < 1e-3 && (d[1] - 0.1).abs() < 1e-3, "{d:?}");
    }
}
