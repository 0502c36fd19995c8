//! `redjury calibrate`: how far each judge and the panel can be trusted,
//! measured against gold labels — accuracy, Cohen's κ and macro-F1 with
//! bootstrap CIs over tasks, Krippendorff's α among judges, every
//! disagreement with gold, the panels worth running and what they cost,
//! and probes of each judge's biases.
//!
//! Owns: turning a calibration set into judge calls (through the one
//! [`Scorer`], so the cache makes a second run free) and the calibration
//! record. Must never judge anything the scorer would not judge the same
//! way in a run (the same prepare, prompts, votes and panel rule), and
//! never count an abstention as a wrong verdict (the figures are over
//! decided items; abstention rates are reported beside them).

pub(crate) mod cascade;
pub(crate) mod doctored;
pub(crate) mod gold;
mod probes;
pub(crate) mod report;

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::aggregate::calibration::{self, Confusion, Estimate};
use crate::aggregate::{Billed, Prices};
use crate::judge::config::{Guarantee, VoteMode};
use crate::pipeline::{OutputSource, Prepared, Progress, Scorer};
use crate::prompt::{Prompt, Templates};
use crate::score::{RubricKind, TaskResult};
use crate::task::Task;
use crate::verdict::Verdict;
pub use gold::{GoldError, GoldSet, LabelledOutput};

/// A bias probe, chosen by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Probe {
    /// The rubric list reversed.
    Order,
    /// The same call this many times in all.
    Repeat(u32),
    /// The task's input unedited (one comment by the author).
    Null,
    /// The gold redline's reward.
    Gold,
    /// A tracked paragraph telling the judge to answer PASS.
    Injection,
    /// The reference-faithful view and prompts against the default ones.
    View,
}

impl FromStr for Probe {
    type Err = String;

    fn from_str(s: &str) -> Result<Probe, String> {
        match s.trim() {
            "order" => Ok(Probe::Order),
            "null" => Ok(Probe::Null),
            "gold" => Ok(Probe::Gold),
            "injection" => Ok(Probe::Injection),
            "view" => Ok(Probe::View),
            "repeat" => Ok(Probe::Repeat(3)),
            other => match other.strip_prefix("repeat=").map(str::parse::<u32>) {
                Some(Ok(n)) if (2..=20).contains(&n) => Ok(Probe::Repeat(n)),
                _ => Err(format!(
                    "unknown probe {other:?}: choose order, repeat[=N] (2..20), null, gold, injection or view"
                )),
            },
        }
    }
}

/// How a calibration is run besides the scorer and the set.
#[derive(Debug, Clone)]
pub struct CalibrateSettings {
    /// The probes to run.
    pub probes: Vec<Probe>,
    /// A panel within this much κ of the best may be recommended if cheaper.
    pub within: f64,
    /// Only panels that decide at least this share of the labelled items
    /// are recommended (an abstaining panel is not a better one).
    pub min_coverage: f64,
    /// Whether a panel with a judge a probe flagged may be recommended.
    pub flagged_judges: FlaggedJudges,
    /// `--target-agreement` and `--risk`: fit a cascade for them.
    pub cascade: Option<Guarantee>,
    /// Prices for the cost of panels.
    pub prices: Prices,
    /// Bootstrap resamples over tasks.
    pub resamples: usize,
    /// Bootstrap seed.
    pub seed: u64,
}

/// One labelled (output, rubric) and what each judge and the panel said.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Observation {
    /// The task.
    pub task: String,
    /// The output's name.
    pub output: String,
    /// The rubric.
    pub rubric: String,
    /// Its weight (negative = penalty).
    pub weight: i32,
    /// Its category.
    pub category: String,
    /// The gold verdict.
    pub gold: Verdict,
    /// The labeller's reason.
    pub reason: String,
    /// The panel's verdict.
    pub panel: Option<Verdict>,
    /// Each judge's vote.
    pub votes: BTreeMap<String, Option<Verdict>>,
    /// Each judge's justification, or why it abstained.
    pub notes: BTreeMap<String, String>,
    /// Per judge asked more than once, the share of its calls that gave
    /// its vote (once asked, its vote is all it said: 1).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub confidence: BTreeMap<String, f64>,
}

/// A rater's figures in one slice (a category, positive or penalty items).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Brief {
    /// Labelled items in the slice.
    pub items: u64,
    /// Share of decided items agreeing with gold.
    pub accuracy: Option<f64>,
    /// Cohen's κ against gold.
    pub kappa: Option<f64>,
    /// Macro-F1 against gold.
    pub macro_f1: Option<f64>,
}

/// One rater's (a judge's or the panel's) agreement with gold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RaterFigures {
    /// Labelled items.
    pub items: u64,
    /// Share of items without a verdict.
    pub abstention_rate: Option<f64>,
    /// Accuracy over decided items, with its CI over tasks.
    pub accuracy: Option<Estimate>,
    /// Cohen's κ.
    pub kappa: Option<Estimate>,
    /// Macro-F1.
    pub macro_f1: Option<Estimate>,
    /// Gold × rater counts.
    pub confusion: Confusion,
    /// By rubric category.
    pub by_category: BTreeMap<String, Brief>,
    /// Positive items and penalty items.
    pub by_sign: BTreeMap<String, Brief>,
    /// Cohen's κ with abstentions counted as wrong (beside `kappa`,
    /// which is over the items it decided).
    #[serde(default)]
    pub kappa_strict: Option<f64>,
    /// USD per 1,000 verdicts it decided (judges only): every billed
    /// attempt of its calls, retries and failures included (from the
    /// stored token counts when a rerun made no call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_per_1000: Option<f64>,
}

/// Whether the recommendation may name a judge a probe flagged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlaggedJudges {
    /// Panels with a flagged judge are ranked but never recommended: a
    /// judge that follows an injection or passes an unedited input is a
    /// reward a policy can game, whatever its κ on the set.
    #[default]
    Excluded,
    /// They may be recommended (`--allow-flagged`).
    Allowed,
}

/// A panel made of some of the judges, with its quorum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelChoice {
    /// The judges in it.
    pub judges: Vec<String>,
    /// Its quorum.
    pub quorum: usize,
    /// Cohen's κ of its verdicts against gold.
    pub kappa: Option<f64>,
    /// Its accuracy over decided items.
    pub accuracy: Option<f64>,
    /// Share of items it decides.
    pub coverage: f64,
    /// Cohen's κ with the items it leaves undecided counted as wrong.
    #[serde(default)]
    pub kappa_strict: Option<f64>,
    /// How it asks its judges: all of them, or in the order of `judges`
    /// until the verdict is settled.
    #[serde(default)]
    pub mode: VoteMode,
    /// USD per 1,000 verdicts it decided, from the calls it made (every
    /// billed attempt); in `decided` mode, the calls it would make on
    /// these outputs given the judges' answers.
    pub cost_per_1000: Option<f64>,
    /// How many of its judges a probe flagged.
    #[serde(default)]
    pub flagged: usize,
}

/// What `redjury calibrate` found.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Calibration {
    /// Tasks in the set.
    pub tasks: usize,
    /// Labelled outputs.
    pub outputs: usize,
    /// Labelled judge rubric verdicts.
    pub items: usize,
    /// Why the judges were not calibrated, when they were not (no judge has
    /// an API key): the check verdicts are, all the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judges_skipped: Option<String>,
    /// Labelled outputs that failed the gate, with the reason: their
    /// labels are left out of every figure (shown, never just counted as
    /// abstentions).
    #[serde(default)]
    pub gate_failed: Vec<String>,
    /// The prompt templates' version.
    pub template_version: String,
    /// The configured panel's quorum.
    pub quorum: usize,
    /// Each judge's model.
    pub models: BTreeMap<String, String>,
    /// Each judge's figures.
    pub judges: BTreeMap<String, RaterFigures>,
    /// The configured panel's figures.
    pub panel: RaterFigures,
    /// Krippendorff's α among the judges.
    pub alpha: Option<f64>,
    /// Deterministic checks against gold: (items, agreeing).
    pub checks: (u64, u64),
    /// Every item where the panel or a judge departs from gold.
    pub disagreements: Vec<Observation>,
    /// Every subset of judges × quorum, best κ first (cheaper first on ties).
    pub panels: Vec<PanelChoice>,
    /// The cheapest panel within `within` κ of the best.
    pub recommended: Option<PanelChoice>,
    /// The tolerance used for the recommendation.
    pub within: f64,
    /// The least share of items a recommended panel decides.
    #[serde(default)]
    pub min_coverage: f64,
    /// The probes' findings, by probe name.
    pub probes: BTreeMap<String, probes::ProbeReport>,
    /// Whether panels with a flagged judge could be recommended.
    #[serde(default)]
    pub flagged_judges: FlaggedJudges,
    /// Per judge a probe flagged, the probes that flagged it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flagged_by: BTreeMap<String, Vec<String>>,
    /// The panel recommended among those without a flagged judge (the
    /// recommendation itself unless `--allow-flagged`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_unflagged: Option<PanelChoice>,
    /// The cascade fitted for `--target-agreement`, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cascade: Option<cascade::Cascade>,
}

/// Why a calibration cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrateError {
    /// The calibration set is not valid.
    #[error(transparent)]
    Gold(#[from] GoldError),
    /// A probe cannot be made.
    #[error("probe {probe}: {message}")]
    #[allow(missing_docs)]
    Probe { probe: String, message: String },
    /// A calibration folder cannot be read back.
    #[error("cannot read {path}: {source} (is it a `redjury calibrate` folder?)")]
    #[allow(missing_docs)]
    Read { path: std::path::PathBuf, source: std::io::Error },
    /// A calibration.json that does not parse.
    #[error("{path}: {source}")]
    #[allow(missing_docs)]
    Parse { path: std::path::PathBuf, source: serde_json::Error },
}

/// The labelled outputs as pipeline work (trial = the output's name).
fn work(set: &GoldSet) -> Vec<(Arc<Task>, OutputSource, String)> {
    set.outputs
        .iter()
        .map(|o| (o.task.clone(), OutputSource::Path(o.path.clone()), o.output.clone()))
        .collect()
}

/// Judges `work` on `scorer`; the rows and the prompts (by task, trial).
async fn judge_work(
    scorer: &Scorer,
    work: Vec<(Arc<Task>, OutputSource, String)>,
    progress: &dyn Progress,
) -> (Vec<TaskResult>, BTreeMap<(String, String), Prompt>) {
    let prepared: Vec<Prepared> = scorer.prepare_all(work).await;
    let prompts = prepared
        .iter()
        .filter_map(|p| Some(((p.row.task.clone(), p.row.trial.clone()), p.prompt.clone()?)))
        .collect();
    (scorer.judge(prepared, progress).await, prompts)
}

/// The labelled outputs whose rows failed the gate, each with its file,
/// task and reason.
fn gate_failures(set: &GoldSet, rows: &[TaskResult]) -> Vec<String> {
    let failed: BTreeMap<(&str, &str), &str> = rows
        .iter()
        .filter(|r| !r.gate.passed)
        .map(|r| ((r.task.as_str(), r.trial.as_str()), r.gate.reason.as_str()))
        .collect();
    set.outputs
        .iter()
        .filter_map(|o| {
            let why = failed.get(&(o.task.name.as_str(), o.output.as_str()))?;
            Some(format!(
                "output {:?} of task {} ({}) fails the gate ({why}): its {} labels are left out",
                o.output,
                o.task.name,
                o.path.display(),
                o.labels.len()
            ))
        })
        .collect()
}

/// The labelled judge-rubric observations of `rows`.
fn observe(set: &GoldSet, rows: &[TaskResult]) -> (Vec<Observation>, (u64, u64)) {
    let by_key: BTreeMap<(&str, &str), &TaskResult> =
        rows.iter().map(|r| ((r.task.as_str(), r.trial.as_str()), r)).collect();
    let mut out = Vec::new();
    let mut checks = (0, 0);
    for labelled in &set.outputs {
        let Some(row) = by_key.get(&(labelled.task.name.as_str(), labelled.output.as_str())) else {
            continue;
        };
        for r in &row.rubrics {
            let Some((gold, reason)) = labelled.labels.get(&r.id) else { continue };
            if r.kind == RubricKind::Check {
                checks.0 += 1;
                checks.1 += u64::from(r.verdict == Some(*gold));
                continue;
            }
            let mut notes = r.justifications.clone();
            notes.extend(r.abstentions.clone());
            out.push(Observation {
                task: row.task.clone(),
                output: row.trial.clone(),
                rubric: r.id.clone(),
                weight: r.weight,
                category: r.category.clone(),
                gold: *gold,
                reason: reason.clone(),
                panel: r.verdict,
                votes: r.votes.clone(),
                notes,
                confidence: r.confidence.clone(),
            });
        }
    }
    (out, checks)
}

fn brief(pairs: &[(Verdict, Option<Verdict>)]) -> Brief {
    let c = Confusion::of(pairs);
    Brief {
        items: pairs.len() as u64,
        accuracy: c.accuracy(),
        kappa: c.kappa(),
        macro_f1: c.macro_f1(),
    }
}

/// One rater's figures; `rater` reads its verdict off an observation.
fn figures(
    obs: &[Observation],
    rater: impl Fn(&Observation) -> Option<Verdict>,
    settings: &CalibrateSettings,
) -> RaterFigures {
    let mut by_task: BTreeMap<String, Vec<(Verdict, Option<Verdict>)>> = BTreeMap::new();
    let mut by_category: BTreeMap<String, Vec<(Verdict, Option<Verdict>)>> = BTreeMap::new();
    let mut by_sign: BTreeMap<String, Vec<(Verdict, Option<Verdict>)>> = BTreeMap::new();
    for o in obs {
        let pair = (o.gold, rater(o));
        by_task.entry(o.task.clone()).or_default().push(pair);
        by_category.entry(o.category.clone()).or_default().push(pair);
        let sign = if o.weight < 0 { "penalty" } else { "positive" };
        by_sign.entry(sign.into()).or_default().push(pair);
    }
    let all: Vec<(Verdict, Option<Verdict>)> = by_task.values().flatten().copied().collect();
    let confusion = Confusion::of(&all);
    let est = |m: fn(&Confusion) -> Option<f64>| {
        calibration::estimate(&by_task, |p| m(&Confusion::of(p)), settings.resamples, settings.seed)
    };
    RaterFigures {
        items: all.len() as u64,
        kappa_strict: strict_kappa(&all),
        abstention_rate: confusion.abstention_rate(),
        accuracy: est(Confusion::accuracy),
        kappa: est(Confusion::kappa),
        macro_f1: est(Confusion::macro_f1),
        confusion,
        by_category: by_category.iter().map(|(k, v)| (k.clone(), brief(v))).collect(),
        by_sign: by_sign.iter().map(|(k, v)| (k.clone(), brief(v))).collect(),
        cost_per_1000: None,
    }
}

/// κ with every abstention counted as the wrong verdict.
fn strict_kappa(pairs: &[(Verdict, Option<Verdict>)]) -> Option<f64> {
    let wrong = |g: Verdict| if g == Verdict::Pass { Verdict::Fail } else { Verdict::Pass };
    let strict: Vec<(Verdict, Option<Verdict>)> =
        pairs.iter().map(|(g, v)| (*g, Some(v.unwrap_or_else(|| wrong(*g))))).collect();
    Confusion::of(&strict).kappa()
}

/// What one judge's calls in this calibration cost.
#[derive(Debug, Clone, Copy, Default)]
struct JudgeCost {
    /// USD of the answers used; `None` without a price.
    total: Option<f64>,
    /// Calls made (one per output prompt and repeat index).
    calls: u64,
}

impl JudgeCost {
    fn per_call(&self) -> Option<f64> {
        self.total.filter(|_| self.calls > 0).map(|t| t / self.calls as f64)
    }
}

/// Each judge's cost: the billed tokens stored with the answers its votes
/// came from (every repeat), whether this run received them or found them
/// in the cache, so a rerun reports the same figures. (Taken from the run's
/// counters, a rerun's held only unbilled retries: a judge answered from
/// the cache cost 0 and the recommendation moved.) Probe calls and failed
/// attempts are not part of a panel's cost of giving these verdicts.
async fn costs(
    scorer: &Scorer,
    prompts: &BTreeMap<(String, String), Prompt>,
    prices: &Prices,
) -> BTreeMap<String, JudgeCost> {
    let mut out = BTreeMap::new();
    for judge in scorer.judges() {
        let keys: Vec<_> = prompts
            .values()
            .flat_map(|p| (0..judge.config.repeats).map(|r| judge.call_key(p, r)))
            .collect();
        let stored: Vec<Option<_>> = scorer
            .cache()
            .blocking(move |c| keys.iter().map(|k| c.get_response(k).ok().flatten()).collect())
            .await;
        let mut billed = Billed::default();
        for s in stored.into_iter().flatten() {
            billed.input += s.usage.input;
            billed.cached += s.usage.cached;
            billed.cache_write += s.usage.cache_write;
            billed.output += s.usage.output;
        }
        let calls = prompts.len() as u64 * u64::from(judge.config.repeats);
        let total = prices.cost(&judge.config.model, billed);
        out.insert(judge.config.name.clone(), JudgeCost { total, calls });
    }
    out
}

/// Per judge rubric of the judged rows: each judge's vote (in `names`
/// order), grouped by output: what every panel is simulated on.
fn rubric_votes(rows: &[TaskResult], names: &[String]) -> Vec<Vec<Vec<Option<Verdict>>>> {
    rows.iter()
        .filter(|r| r.rubrics.iter().any(|x| x.kind == RubricKind::Llm && !x.votes.is_empty()))
        .map(|r| {
            r.rubrics
                .iter()
                .filter(|x| x.kind == RubricKind::Llm)
                .map(|x| names.iter().map(|n| x.votes.get(n).copied().flatten()).collect())
                .collect()
        })
        .collect()
}

/// How many calls each member makes on one output in `decided` mode
/// (members in asking order), given their votes on its rubrics.
fn decided_calls(votes: &[Vec<Option<Verdict>>], members: &[usize], quorum: usize) -> Vec<u64> {
    let first = crate::panel::first_wave(members.len(), quorum);
    let mut calls = vec![0; members.len()];
    for (k, call) in calls.iter_mut().enumerate() {
        let open = k < first
            || votes.iter().any(|rubric| {
                let so_far: Vec<Option<Verdict>> =
                    members[..k].iter().map(|&m| rubric.get(m).copied().flatten()).collect();
                !crate::panel::settled(&so_far, members.len() - k, quorum)
            });
        *call = u64::from(open);
    }
    calls
}

/// Every non-empty subset of `judges` with every quorum it can have, each
/// asking all its judges, and (two judges or more) in `decided` mode in
/// every order.
fn panel_choices(
    obs: &[Observation],
    rows: &[TaskResult],
    judges: &[String],
    costs: &BTreeMap<String, JudgeCost>,
) -> Vec<PanelChoice> {
    let per_output = rubric_votes(rows, judges);
    let mut out = Vec::new();
    for mask in 1u32..(1 << judges.len().min(8)) {
        let members: Vec<usize> = (0..judges.len()).filter(|i| mask & (1 << i) != 0).collect();
        for quorum in 1..=members.len() {
            let pairs: Vec<(Verdict, Option<Verdict>)> = obs
                .iter()
                .map(|o| {
                    let votes: Vec<Option<Verdict>> = members
                        .iter()
                        .map(|&j| o.votes.get(&judges[j]).copied().flatten())
                        .collect();
                    (o.gold, crate::panel::decide(&votes, quorum))
                })
                .collect();
            let c = Confusion::of(&pairs);
            let decided: u64 = per_output
                .iter()
                .flatten()
                .filter(|v| {
                    let votes: Vec<Option<Verdict>> = members.iter().map(|&j| v[j]).collect();
                    crate::panel::decide(&votes, quorum).is_some()
                })
                .count() as u64;
            let per_1000 =
                |usd: Option<f64>| usd.filter(|_| decided > 0).map(|u| u / decided as f64 * 1000.0);
            let base = PanelChoice {
                judges: members.iter().map(|&j| judges[j].clone()).collect(),
                quorum,
                kappa: c.kappa(),
                accuracy: c.accuracy(),
                coverage: 1.0 - c.abstention_rate().unwrap_or(1.0),
                kappa_strict: strict_kappa(&pairs),
                mode: VoteMode::All,
                cost_per_1000: per_1000(
                    members.iter().map(|&j| costs.get(&judges[j]).and_then(|c| c.total)).sum(),
                ),
                flagged: 0,
            };
            if members.len() > 1 {
                for order in permutations(&members) {
                    let mut usd = Some(0.0);
                    for votes in &per_output {
                        for (k, n) in decided_calls(votes, &order, quorum).into_iter().enumerate() {
                            let per_call =
                                costs.get(&judges[order[k]]).and_then(JudgeCost::per_call);
                            usd = usd.zip(per_call).map(|(u, p)| u + p * n as f64);
                        }
                    }
                    out.push(PanelChoice {
                        judges: order.iter().map(|&j| judges[j].clone()).collect(),
                        mode: VoteMode::Decided,
                        cost_per_1000: per_1000(usd),
                        ..base.clone()
                    });
                }
            }
            out.push(base);
        }
    }
    rank(&mut out, &[]);
    out
}

/// Every order of `items`.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for (i, &first) in items.iter().enumerate() {
        let mut rest = items.to_vec();
        rest.remove(i);
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            out.push(tail);
        }
    }
    out
}

fn cost_key(p: &PanelChoice) -> f64 {
    p.cost_per_1000.unwrap_or(f64::MAX)
}

/// Orders panels: best κ first; among equals, fewer judges a probe
/// flagged, more items decided, cheaper, smaller.
fn rank(panels: &mut [PanelChoice], flagged: &[String]) {
    for p in panels.iter_mut() {
        p.flagged = p.judges.iter().filter(|j| flagged.contains(j)).count();
    }
    panels.sort_by(|a, b| {
        let k = |p: &PanelChoice| p.kappa.unwrap_or(f64::NEG_INFINITY);
        k(b).total_cmp(&k(a))
            .then(a.flagged.cmp(&b.flagged))
            .then(b.coverage.total_cmp(&a.coverage))
            .then(cost_key(a).total_cmp(&cost_key(b)))
            .then(a.judges.len().cmp(&b.judges.len()))
    });
}

/// Among the panels that decide at least `min_coverage` of the items (and,
/// unless `flagged` allows them, have no judge a probe flagged), the
/// cheapest whose κ is within `within` of the best of them, preferring one
/// with fewer flagged judges. `None` when no panel qualifies.
fn recommend(
    panels: &[PanelChoice],
    within: f64,
    min_coverage: f64,
    flagged: FlaggedJudges,
) -> Option<PanelChoice> {
    let enough: Vec<&PanelChoice> = panels
        .iter()
        .filter(|p| p.coverage + 1e-12 >= min_coverage)
        .filter(|p| flagged == FlaggedJudges::Allowed || p.flagged == 0)
        .collect();
    let best = enough.first()?;
    let floor = best.kappa? - within;
    enough
        .into_iter()
        .filter(|p| p.kappa.is_some_and(|k| k >= floor))
        .min_by(|a, b| {
            a.flagged
                .cmp(&b.flagged)
                .then(cost_key(a).total_cmp(&cost_key(b)))
                .then(a.judges.len().cmp(&b.judges.len()))
        })
        .cloned()
}

/// Runs the calibration: every labelled output judged, the figures, the
/// panels, and the probes asked for.
pub(crate) async fn run(
    scorer: &Scorer,
    set: &GoldSet,
    settings: &CalibrateSettings,
    progress: &dyn Progress,
) -> Result<Calibration, CalibrateError> {
    let (rows, prompts) = judge_work(scorer, work(set), progress).await;
    let gate_failed = gate_failures(set, &rows);
    let (obs, checks) = observe(set, &rows);
    if scorer.dry_run().is_some() {
        return Ok(checks_only(scorer, set, checks, gate_failed));
    }
    let names: Vec<String> = scorer.judges().iter().map(|j| j.config.name.clone()).collect();
    let costs = costs(scorer, &prompts, &settings.prices).await;
    let mut judges = BTreeMap::new();
    for name in &names {
        let mut f = figures(&obs, |o| o.votes.get(name).copied().flatten(), settings);
        let decided = rows
            .iter()
            .flat_map(|r| r.rubrics.iter())
            .filter(|x| x.votes.get(name).copied().flatten().is_some())
            .count();
        f.cost_per_1000 = costs
            .get(name)
            .and_then(|c| c.total)
            .filter(|_| decided > 0)
            .map(|usd| usd / decided as f64 * 1000.0);
        judges.insert(name.clone(), f);
    }
    let units: Vec<Vec<Option<Verdict>>> = obs
        .iter()
        .map(|o| names.iter().map(|n| o.votes.get(n).copied().flatten()).collect())
        .collect();
    let panels = panel_choices(&obs, &rows, &names, &costs);
    let disagreements = obs
        .iter()
        .filter(|o| o.panel != Some(o.gold) || o.votes.values().any(|v| *v != Some(o.gold)))
        .cloned()
        .collect();
    let mut calibration = Calibration {
        tasks: set
            .outputs
            .iter()
            .map(|o| o.task.name.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        outputs: set.outputs.len(),
        items: obs.len(),
        gate_failed,
        judges_skipped: None,
        template_version: scorer.templates().version.clone(),
        quorum: scorer.quorum(),
        models: scorer
            .judges()
            .iter()
            .map(|j| (j.config.name.clone(), j.config.model.clone()))
            .collect(),
        panel: figures(&obs, |o| o.panel, settings),
        judges,
        alpha: calibration::krippendorff_alpha(&units),
        checks,
        disagreements,
        recommended: None,
        panels,
        within: settings.within,
        min_coverage: settings.min_coverage,
        probes: BTreeMap::new(),
        flagged_judges: settings.flagged_judges,
        flagged_by: BTreeMap::new(),
        best_unflagged: None,
        cascade: settings.cascade.map(|g| cascade::fit(&obs, &names, &costs, g)),
    };
    let context = probes::Context {
        scorer,
        set,
        settings,
        obs: &obs,
        rows: &rows,
        prompts: &prompts,
        progress,
    };
    for probe in &settings.probes {
        let (name, report) = probes::run(*probe, &context).await?;
        calibration.probes.insert(name, report);
    }
    probes::against_repeat(&mut calibration.probes);
    for (probe, report) in &calibration.probes {
        for judge in &report.flagged {
            calibration.flagged_by.entry(judge.clone()).or_default().push(probe.clone());
        }
    }
    let flagged: Vec<String> = calibration.flagged_by.keys().cloned().collect();
    rank(&mut calibration.panels, &flagged);
    let (within, coverage) = (settings.within, settings.min_coverage);
    calibration.flagged_judges = settings.flagged_judges;
    calibration.recommended =
        recommend(&calibration.panels, within, coverage, settings.flagged_judges);
    calibration.best_unflagged =
        recommend(&calibration.panels, within, coverage, FlaggedJudges::Excluded);
    Ok(calibration)
}

/// What a calibration without judges gives: the check verdicts against
/// gold, and why the judges were skipped.
fn checks_only(
    scorer: &Scorer,
    set: &GoldSet,
    checks: (u64, u64),
    gate_failed: Vec<String>,
) -> Calibration {
    let keys: Vec<&str> = scorer.judges().iter().filter_map(|j| j.missing_key()).collect();
    let why = if keys.is_empty() {
        "no judge was called (--dry-run)".to_string()
    } else {
        format!("no judge has an API key (set {})", keys.join(", "))
    };
    Calibration {
        tasks: set
            .outputs
            .iter()
            .map(|o| &o.task.name)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        outputs: set.outputs.len(),
        template_version: scorer.templates().version.clone(),
        quorum: scorer.quorum(),
        checks,
        gate_failed,
        judges_skipped: Some(why),
        ..Calibration::default()
    }
}

/// The scorer for the view probe: the same judges, cache and quorum with
/// the reference-faithful templates.
fn reference_scorer(scorer: &Scorer) -> Option<Scorer> {
    Scorer::with_judges(
        scorer.judges().to_vec(),
        scorer.quorum(),
        Templates::reference(),
        scorer.cache().clone(),
        crate::pipeline::JudgeMode::Live,
    )
    .ok()
    .map(|s| s.dispatching(scorer.dispatch()).voting(scorer.vote_mode()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn panel(judges: &[&str], kappa: f64, cost: f64, flagged: usize) -> PanelChoice {
        PanelChoice {
            judges: judges.iter().map(|j| j.to_string()).collect(),
            quorum: 1,
            kappa: Some(kappa),
            accuracy: Some(kappa),
            coverage: 1.0,
            kappa_strict: Some(kappa),
            mode: VoteMode::All,
            cost_per_1000: Some(cost),
            flagged,
        }
    }

    /// Regression (issue 36): a flagged panel set the κ margin and was
    /// only "preferred against", so an injection follower with the best κ
    /// was recommended when no unflagged panel came within the margin.
    #[test]
    fn a_panel_with_a_flagged_judge_is_not_recommended_unless_allowed() {
        let panels = [
            panel(&["follower"], 1.0, 1.0, 1),
            panel(&["perfect", "other"], 0.95, 5.0, 0),
            panel(&["other"], 0.90, 2.0, 0),
        ];
        let pick = |f| recommend(&panels, 0.02, 0.95, f).map(|p| p.judges);
        assert_eq!(pick(FlaggedJudges::Excluded), Some(vec!["perfect".into(), "other".into()]));
        assert_eq!(pick(FlaggedJudges::Allowed), Some(vec!["follower".to_string()]));
        let only_flagged = [panel(&["follower"], 1.0, 1.0, 1)];
        assert_eq!(recommend(&only_flagged, 0.02, 0.95, FlaggedJudges::Excluded), None);
    }
}
