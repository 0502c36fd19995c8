//! Aggregation: from task × trial rewards to the figures models are compared
//! by — reproducing the reference benchmark's leaderboard to the last digit,
//! then adding what it lacks (counts of what was dropped, a CI over input
//! groups).
//!
//! The reference method (its panel reader and `aggregate.py`): each task's
//! reward is rounded to 4 places; a group's score is the exact mean
//! (`statistics.mean`) of its rows (variants and trials); a (scenario,
//! turn) cell is the mean of its groups' scores, rounded to 4 places; the
//! headline `turn_weighted` is the mean over cells, rounded; `by_turn`
//! averages groups; `by_side` and `by_scenario` average cells (a cell's
//! side is the side of its first row); `by_category` pools Σ |w| graded
//! correct / Σ |w| over every rubric of every counted row, a gate failure's
//! rubrics all FAIL. Every rounding is Python's `round(x, 4)` on the exact
//! binary value (`python.rs`). The CI resamples the cells in the order the
//! rows first show them, with Python's Mersenne Twister.
//!
//! Owns: those definitions and two reproducible bootstraps. Must never
//! average an incomplete or pending row into a mean, and never drop a gate
//! failure from one (it counts as 0).

pub(crate) mod agreement;
pub(crate) mod breakdowns;
pub(crate) mod calibration;
pub(crate) mod cascade;
pub(crate) mod compare;
mod cost;
pub(crate) mod pivotal;
pub(crate) mod severity;
pub(crate) mod shape;

pub(crate) use cost::{Billed, saved_by_deciding};
pub use cost::{PriceError, Prices};
pub(crate) mod python;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use crate::score::{Status, TaskResult};
use crate::task::Side;
use crate::verdict::Verdict;
use python::{PyRandom, py_mean, py_round};

/// Counts of every kind of outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Rows (task × trial) with an output.
    pub results: usize,
    /// Rows whose every rubric has a verdict.
    pub scored: usize,
    /// Rows whose output failed the gate (reward 0).
    pub gate_failed: usize,
    /// Rows with a rubric short of the quorum (no reward).
    pub incomplete: usize,
    /// Rows not judged (a dry run).
    pub pending: usize,
    /// Tasks with no output at all.
    pub missing_outputs: usize,
}

/// A bootstrap's seed and number of resamples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    /// The seed of the draws.
    pub seed: u64,
    /// How many resamples.
    pub resamples: usize,
}

impl Default for Bootstrap {
    /// Seed 0 and the reference's 5,000 resamples, as `score` defaults.
    fn default() -> Bootstrap {
        Bootstrap { seed: 0, resamples: 5000 }
    }
}

/// Headline figures and breakdowns for one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// The mean over input groups.
    pub overall: Option<f64>,
    /// The headline: the mean over (scenario, turn) cells.
    pub turn_weighted: Option<f64>,
    /// The mean over rows.
    pub mean_per_task: Option<f64>,
    /// Per turn: the mean over its input groups.
    pub by_turn: BTreeMap<String, f64>,
    /// Per side: the mean over its cells.
    pub by_side: BTreeMap<String, f64>,
    /// Per scenario: the mean over its cells.
    pub by_scenario: BTreeMap<String, f64>,
    /// Cells "scenario-turn".
    pub by_scenario_turn: BTreeMap<String, f64>,
    /// Per category: Σ |w| graded correct / Σ |w|.
    pub by_category: BTreeMap<String, f64>,
    /// Each input group's mean.
    pub groups: BTreeMap<String, f64>,
    /// Rows in the figures: the leaderboard's `n_trials`.
    #[serde(default)]
    pub n_trials: usize,
    /// Their input groups: its `n_input_groups`.
    #[serde(default)]
    pub n_input_groups: usize,
    /// Those of them that failed the gate: its `n_gate_failures`.
    #[serde(default)]
    pub n_gate_failures: usize,
}

/// `round(x, 4)`, as Python computes it.
pub(crate) fn round4(x: f64) -> f64 {
    py_round(x, 4)
}

fn mean(v: &[f64]) -> Option<f64> {
    py_mean(v)
}

/// A row's reward as the reference's leaderboard reads it: rounded to 4
/// places (results.jsonl and rewards.jsonl keep it unrounded).
fn published_reward(r: &TaskResult) -> f64 {
    round4(r.reward.unwrap_or(0.0))
}

/// Keys in the order they first appear (the order the reference's dicts
/// keep), with an index for lookups.
struct Ordered<K, V> {
    keys: Vec<K>,
    values: Vec<V>,
    index: HashMap<K, usize>,
}

impl<K: Eq + Hash + Clone, V: Default> Ordered<K, V> {
    fn new() -> Self {
        Ordered { keys: Vec::new(), values: Vec::new(), index: HashMap::new() }
    }
    fn entry(&mut self, key: &K) -> &mut V {
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => {
                self.keys.push(key.clone());
                self.values.push(V::default());
                self.index.insert(key.clone(), self.keys.len() - 1);
                self.keys.len() - 1
            }
        };
        &mut self.values[i]
    }
    fn get(&self, key: &K) -> Option<&V> {
        self.index.get(key).map(|&i| &self.values[i])
    }
    fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.keys.iter().zip(&self.values)
    }
}

/// The groups of the counted rows with their exact mean rewards, in order
/// of first appearance.
fn group_means(counted: &[&TaskResult]) -> Ordered<String, f64> {
    let mut rewards: Ordered<String, Vec<f64>> = Ordered::new();
    for r in counted {
        rewards.entry(&r.group).push(published_reward(r));
    }
    Ordered {
        values: rewards.values.iter().map(|v| mean(v).unwrap_or(0.0)).collect(),
        keys: rewards.keys,
        index: rewards.index,
    }
}

/// The (scenario, turn) cells in order of first appearance: each cell's
/// rounded mean of its groups, and the side of its first row.
pub(crate) fn cells(rows: &[TaskResult]) -> Vec<((String, u32), f64, Side)> {
    let counted: Vec<&TaskResult> = rows.iter().filter(|r| r.counts()).collect();
    cells_of(&counted, &group_means(&counted))
}

fn cells_of(
    counted: &[&TaskResult],
    groups: &Ordered<String, f64>,
) -> Vec<((String, u32), f64, Side)> {
    let mut members: Ordered<(String, u32), (Vec<String>, Option<Side>)> = Ordered::new();
    for r in counted {
        let (gs, side) = members.entry(&(r.scenario.clone(), r.turn));
        if !gs.contains(&r.group) {
            gs.push(r.group.clone());
        }
        side.get_or_insert(r.side);
    }
    let value = |g: &String| groups.get(g).copied();
    members
        .iter()
        .filter_map(|(cell, (gs, side))| {
            let values: Vec<f64> = gs.iter().filter_map(value).collect();
            Some((cell.clone(), round4(mean(&values)?), (*side)?))
        })
        .collect()
}

/// Figures over the rows that count (scored and gate-failed).
pub(crate) fn figures(rows: &[TaskResult]) -> Figures {
    let counted: Vec<&TaskResult> = rows.iter().filter(|r| r.counts()).collect();
    let groups = group_means(&counted);
    let cells = cells_of(&counted, &groups);
    let collapse = |m: BTreeMap<String, Vec<f64>>| -> BTreeMap<String, f64> {
        m.into_iter().filter_map(|(k, v)| Some((k, round4(mean(&v)?)))).collect()
    };
    let mut by_scenario: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut by_side: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for ((scenario, _), v, side) in &cells {
        by_scenario.entry(scenario.clone()).or_default().push(*v);
        by_side.entry(side.as_str().to_string()).or_default().push(*v);
    }
    let mut turn_groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut seen: HashSet<(u32, &str)> = HashSet::new();
    for r in &counted {
        if !seen.insert((r.turn, r.group.as_str())) {
            continue;
        }
        if let Some(v) = groups.get(&r.group) {
            turn_groups.entry(r.turn.to_string()).or_default().push(*v);
        }
    }
    let cell_values: Vec<f64> = cells.iter().map(|(_, v, _)| *v).collect();
    let per_task: Vec<f64> = counted.iter().map(|r| published_reward(r)).collect();
    Figures {
        overall: mean(&groups.values).map(round4),
        turn_weighted: mean(&cell_values).map(round4),
        mean_per_task: mean(&per_task).map(round4),
        by_turn: collapse(turn_groups),
        by_side: collapse(by_side),
        by_scenario: collapse(by_scenario),
        by_scenario_turn: cells.iter().map(|((s, t), v, _)| (format!("{s}-{t}"), *v)).collect(),
        by_category: by_category(&counted),
        groups: groups.iter().map(|(k, v)| (k.clone(), round4(*v))).collect(),
        n_trials: counted.len(),
        n_input_groups: groups.keys.len(),
        n_gate_failures: counted.iter().filter(|r| r.status == Status::GateFailed).count(),
    }
}

/// Pooled per category: Σ |weight| of rubrics graded correct / Σ |weight|,
/// a penalty rubric being correct when not triggered. Every counted row's
/// rubrics enter, a gate failure's as FAIL (as the reference counts them).
fn by_category(rows: &[&TaskResult]) -> BTreeMap<String, f64> {
    let mut acc: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for r in rows {
        let gate_failed = r.status == Status::GateFailed;
        for rubric in &r.rubrics {
            let w = i64::from(rubric.weight.abs());
            let e = acc.entry(rubric.category.clone()).or_default();
            e.1 += w;
            let passed = !gate_failed && rubric.verdict == Some(Verdict::Pass);
            if (rubric.weight > 0 && passed) || (rubric.weight < 0 && !passed) {
                e.0 += w;
            }
        }
    }
    acc.into_iter()
        .filter(|(_, (_, t))| *t > 0)
        .map(|(c, (e, t))| (c, round4(e as f64 / t as f64)))
        .collect()
}

/// Counts of each status.
pub(crate) fn counts(rows: &[TaskResult], missing_outputs: usize) -> Counts {
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

/// Trials in the reference's order: numerically when both are numbers.
fn trial_order(a: &str, b: &str) -> std::cmp::Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// Best-of-k: each task's best trial by published reward, ties to the
/// lowest trial, in the order tasks first appear.
pub(crate) fn best_of_trials(rows: &[TaskResult]) -> Vec<TaskResult> {
    let mut best: Ordered<String, Option<&TaskResult>> = Ordered::new();
    for r in rows.iter().filter(|r| r.counts()) {
        let slot = best.entry(&r.task);
        let better = match slot {
            None => true,
            Some(b) => {
                let (x, y) = (published_reward(r), published_reward(b));
                x > y || (x == y && trial_order(&r.trial, &b.trial).is_lt())
            }
        };
        if better {
            *slot = Some(r);
        }
    }
    best.values.into_iter().flatten().cloned().collect()
}

/// The reference's CI seed for a model name: the sum of its UTF-8 bytes
/// modulo 2³² (`metrics_summary._model_seed`).
pub(crate) fn model_seed(model: &str) -> u64 {
    model.bytes().map(u64::from).sum::<u64>() % (1 << 32)
}

/// The reference's 95% CI of the headline: the cells (in order of first
/// appearance) resampled with `random.Random(seed).randrange`, each
/// replicate their left-to-right sum over k (CPython 3.11's `sum`), the
/// sorted replicates at ⌊0.025·n⌋ and ⌊0.975·n⌋, rounded.
pub(crate) fn reference_ci(rows: &[TaskResult], boot: Bootstrap) -> [f64; 2] {
    let values: Vec<f64> = cells(rows).into_iter().map(|(_, v, _)| v).collect();
    match values.as_slice() {
        [] => return [0.0, 0.0],
        [only] => return [round4(*only), round4(*only)],
        _ => {}
    }
    let n = boot.resamples.max(1);
    let k = values.len();
    let mut rng = PyRandom::from_u64(boot.seed);
    let mut means: Vec<f64> = (0..n)
        .map(|_| {
            (0..k)
                .map(|_| values[rng.randrange(k as i64).unwrap_or(0) as usize])
                .fold(0.0, |sum, v| sum + v)
                / k as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((q * n as f64) as usize).min(n - 1)];
    [round4(at(0.025)), round4(at(0.975))]
}

/// SplitMix64: small, fast, and the same sequence on every platform.
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in 0..n (multiply-high; no float involved).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// redjury's own 95% CI of `turn_weighted`: a percentile bootstrap that
/// resamples input groups with replacement (the unit the benchmark's tasks
/// come in), bit-for-bit reproducible for a seed. `sorted[⌊0.025·n⌋]` and
/// `sorted[⌊0.975·n⌋]`.
pub(crate) fn bootstrap_ci(rows: &[TaskResult], boot: Bootstrap) -> Option<[f64; 2]> {
    let groups = group_cells(rows);
    if groups.len() < 2 || boot.resamples == 0 {
        return figures(rows).turn_weighted.map(|t| [t, t]);
    }
    let values: Vec<((String, u32), Vec<f64>)> =
        groups.into_iter().map(|(_, cell, m)| (cell, vec![m])).collect();
    resample(&values, boot, |tw| tw[0])
}

/// Paired percentile bootstrap 95% CI of turn_weighted(A) − turn_weighted(B)
/// over the input groups both runs scored: every draw resamples the same
/// groups in both runs.
pub(crate) fn paired_bootstrap_ci(
    a: &[TaskResult],
    b: &[TaskResult],
    boot: Bootstrap,
) -> Option<[f64; 2]> {
    let b_means: BTreeMap<String, f64> =
        group_cells(b).into_iter().map(|(g, _, m)| (g, m)).collect();
    let values: Vec<((String, u32), Vec<f64>)> = group_cells(a)
        .into_iter()
        .filter_map(|(g, cell, m)| Some((cell, vec![m, *b_means.get(&g)?])))
        .collect();
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
    exact_group_means(rows)
        .into_iter()
        .filter_map(|(g, m)| Some((g.to_string(), cell_of.get(g)?.clone(), m)))
        .collect()
}

/// Resamples groups with replacement; for each draw computes the
/// turn-weighted figure of every run (cells rounded as the reference does)
/// and reduces them with `stat`. Reference-style percentiles:
/// sorted[⌊0.025·n⌋] and sorted[⌊0.975·n⌋].
fn resample(
    groups: &[((String, u32), Vec<f64>)],
    boot: Bootstrap,
    stat: impl Fn(&[f64]) -> f64,
) -> Option<[f64; 2]> {
    let runs = groups.first().map(|(_, v)| v.len()).unwrap_or(0);
    let cells: Vec<(String, u32)> = {
        let mut c: Vec<(String, u32)> = groups.iter().map(|(c, _)| c.clone()).collect();
        c.sort();
        c.dedup();
        c
    };
    let cell_index: Vec<usize> =
        groups.iter().map(|(c, _)| cells.binary_search(c).unwrap_or(0)).collect();
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
            let cell_means: Vec<f64> = sums[r]
                .iter()
                .zip(&ns)
                .filter(|(_, n)| **n > 0)
                .map(|(s, n)| round4(s / *n as f64))
                .collect();
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
        by_group.entry(&r.group).or_default().push(published_reward(r));
    }
    by_group.into_iter().filter_map(|(g, v)| Some((g, mean(&v)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::gate::GateResult;

    #[allow(clippy::too_many_arguments)]
    fn row(
        task: &str,
        trial: &str,
        scenario: &str,
        turn: u32,
        side: Side,
        group: &str,
        status: Status,
        reward: Option<f64>,
    ) -> TaskResult {
        TaskResult {
            task: task.into(),
            trial: trial.into(),
            scenario: scenario.into(),
            turn,
            side,
            group: group.into(),
            variant: None,
            status,
            gate: GateResult {
                passed: status != Status::GateFailed,
                reason: String::new(),
                revisions: 0,
                comments: 0,
                untracked: 0,
            },
            reward,
            earned: None,
            penalty: None,
            total_positive: 10,
            prompt_hash: None,
            reason: None,
            rubrics: vec![],
            edits: None,
            expert: None,
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
        assert_eq!(
            f.by_scenario_turn,
            BTreeMap::from([("1-1".into(), 0.5), ("1-2".into(), 0.3), ("2-1".into(), 0.9)])
        );
        assert_eq!(f.turn_weighted, Some(0.5667));
        // by_turn averages groups: turn 1 = (0.75 + 0.25 + 0.9) / 3, turn 2 = 0.3.
        assert_eq!(f.by_turn, BTreeMap::from([("1".into(), 0.6333), ("2".into(), 0.3)]));
        // by_side averages cells: A = (0.5 + 0.9) / 2, B = 0.3.
        assert_eq!(f.by_side, BTreeMap::from([("A".into(), 0.7), ("B".into(), 0.3)]));
        assert_eq!(f.by_scenario, BTreeMap::from([("1".into(), 0.4), ("2".into(), 0.9)]));
        // Flat mean over the six counted rows: 3.25 / 6.
        assert_eq!(f.mean_per_task, Some(0.5417));
        let c = counts(&set(), 2);
        assert_eq!(
            (c.results, c.scored, c.gate_failed, c.incomplete, c.missing_outputs),
            (7, 5, 1, 1, 2)
        );
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
        assert_eq!(
            best.iter().map(|r| (r.task.as_str(), r.trial.as_str())).collect::<Vec<_>>(),
            [("t1", "2"), ("t2", "1")]
        );
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
