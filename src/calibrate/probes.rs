//! The bias probes: what each judge does when the rubric list is
//! reversed, when the same call is repeated, when the output is the
//! unedited input, when it is the gold redline, when it carries text
//! addressed to the judge, and when it is shown in the reference's view.
//!
//! Owns: building each probe's documents and prompts, and measuring how
//! often verdicts move (with a CI over tasks and the items that moved).
//! Must never send a probe through anything but the scorer's own pipeline.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{
    Brief, CalibrateError, CalibrateSettings, GoldSet, Observation, Probe, doctored, judge_work,
    observe, reference_scorer, work,
};
use crate::aggregate::calibration::{self, Estimate};
use crate::judge::verdicts::JudgeVote;
use crate::pipeline::{OutputSource, Progress, Scorer};
use crate::prompt::Prompt;
use crate::score::{RubricKind, TaskResult};
use crate::task::Task;
use crate::verdict::Verdict;

/// What a probe measured for one rater.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Items compared.
    pub compared: u64,
    /// Items whose verdict moved (or, for the null output, that passed).
    pub moved: u64,
    /// `moved / compared`, with its CI over tasks.
    pub rate: Option<Estimate>,
}

/// One item that moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Moved {
    /// The task.
    pub task: String,
    /// The output.
    pub output: String,
    /// The rubric.
    pub rubric: String,
    /// The judge (or "panel").
    pub judge: String,
    /// Its verdict before the probe (or what it should be).
    pub before: Option<Verdict>,
    /// Its verdict under the probe.
    pub after: Option<Verdict>,
}

/// One probe's findings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// What the probe does and what a trustworthy judge does under it.
    pub about: String,
    /// Per judge and for "panel".
    pub rates: BTreeMap<String, Rate>,
    /// Judges whose rate is clearly above their repeat baseline (its CI's
    /// lower bound is), or above zero without a repeat probe.
    pub flagged: Vec<String>,
    /// Each judge's movement under the repeat probe: how much its
    /// verdicts move with nothing changed, which this probe's movement is
    /// judged against.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub baseline: BTreeMap<String, f64>,
    /// The rates are information only, no expectation to flag against
    /// (the null probe without labels for the unedited input).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub informational: bool,
    /// The items that moved.
    pub items: Vec<Moved>,
    /// The panel's reward per task, where the probe is about rewards.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rewards: BTreeMap<String, Option<f64>>,
    /// Agreement with gold per view (`annotated`, `reference`), per rater.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub views: BTreeMap<String, BTreeMap<String, Brief>>,
    /// What could not be probed, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// What every probe reads.
pub(super) struct Context<'a> {
    pub scorer: &'a Scorer,
    pub set: &'a GoldSet,
    pub settings: &'a CalibrateSettings,
    pub obs: &'a [Observation],
    pub rows: &'a [TaskResult],
    pub prompts: &'a BTreeMap<(String, String), Prompt>,
    pub progress: &'a dyn Progress,
}

/// Runs one probe; its name and findings.
pub(super) async fn run(
    probe: Probe,
    cx: &Context<'_>,
) -> Result<(String, ProbeReport), CalibrateError> {
    Ok(match probe {
        Probe::Order => ("order".into(), order(cx).await),
        Probe::Repeat(n) => (format!("repeat={n}"), repeat(cx, n).await),
        Probe::Null => ("null".into(), null(cx).await?),
        Probe::Gold => ("gold".into(), gold(cx)),
        Probe::Injection => ("injection".into(), injection(cx).await?),
        Probe::View => ("view".into(), view(cx).await),
    })
}

/// Per rater, the moved/compared tallies by task.
#[derive(Default)]
struct Tally {
    by_rater: BTreeMap<String, BTreeMap<String, Vec<bool>>>,
    items: Vec<Moved>,
}

impl Tally {
    fn add(
        &mut self,
        o: (&str, &str, &str),
        rater: &str,
        before: Option<Verdict>,
        after: Option<Verdict>,
        moved: bool,
    ) {
        let (task, output, rubric) = o;
        self.by_rater
            .entry(rater.to_string())
            .or_default()
            .entry(task.to_string())
            .or_default()
            .push(moved);
        if moved {
            self.items.push(Moved {
                task: task.into(),
                output: output.into(),
                rubric: rubric.into(),
                judge: rater.into(),
                before,
                after,
            });
        }
    }

    fn report(self, about: &str, settings: &CalibrateSettings) -> ProbeReport {
        let mut rates = BTreeMap::new();
        let mut flagged = Vec::new();
        for (rater, by_task) in self.by_rater {
            let all: Vec<bool> = by_task.values().flatten().copied().collect();
            let share = |v: &[bool]| {
                (!v.is_empty()).then(|| v.iter().filter(|m| **m).count() as f64 / v.len() as f64)
            };
            let rate = calibration::estimate(&by_task, share, settings.resamples, settings.seed);
            let clear = match rate.and_then(|r| r.ci95) {
                Some([lo, _]) => lo > 0.0,
                None => rate.is_some_and(|r| r.value > 0.05),
            };
            if clear && rater != "panel" {
                flagged.push(rater.clone());
            }
            let moved = all.iter().filter(|m| **m).count() as u64;
            rates.insert(rater, Rate { compared: all.len() as u64, moved, rate });
        }
        ProbeReport { about: about.into(), rates, flagged, items: self.items, ..Default::default() }
    }
}

/// The judges' names and "panel".
fn raters(scorer: &Scorer) -> Vec<String> {
    let mut r: Vec<String> = scorer.judges().iter().map(|j| j.config.name.clone()).collect();
    r.push("panel".into());
    r
}

fn vote_of(o: &Observation, rater: &str) -> Option<Verdict> {
    if rater == "panel" { o.panel } else { o.votes.get(rater).copied().flatten() }
}

/// Compares `after` (observations of the same items under the probe, by
/// task, output and rubric) with the baseline; a move is a decided verdict
/// that changed.
fn compare(cx: &Context<'_>, after: &[Observation], output_of: impl Fn(&str) -> String) -> Tally {
    let base: BTreeMap<(&str, &str, &str), &Observation> = cx
        .obs
        .iter()
        .map(|o| ((o.task.as_str(), o.output.as_str(), o.rubric.as_str()), o))
        .collect();
    let mut t = Tally::default();
    for a in after {
        let output = output_of(&a.output);
        let Some(b) = base.get(&(a.task.as_str(), output.as_str(), a.rubric.as_str())) else {
            continue;
        };
        for rater in raters(cx.scorer) {
            let (before, now) = (vote_of(b, &rater), vote_of(a, &rater));
            if let (Some(x), Some(y)) = (before, now) {
                t.add((&a.task, &output, &a.rubric), &rater, before, now, x != y);
            }
        }
    }
    t
}

async fn order(cx: &Context<'_>) -> ProbeReport {
    let reversed: BTreeMap<String, Arc<Task>> = cx
        .set
        .outputs
        .iter()
        .map(|o| {
            let mut t = (*o.task).clone();
            t.rubrics.reverse();
            (t.name.clone(), Arc::new(t))
        })
        .collect();
    let work = work(cx.set)
        .into_iter()
        .map(|(t, src, trial)| (reversed.get(&t.name).cloned().unwrap_or(t), src, trial))
        .collect();
    let (rows, _) = judge_work(cx.scorer, work, cx.progress).await;
    let (after, _) = observe(cx.set, &rows);
    compare(cx, &after, str::to_string).report(
        "The rubric list in reverse order. A judge that reads each rubric on its own gives the same verdicts; the rate is the share of decided verdicts that changed.",
        cx.settings,
    )
}

async fn repeat(cx: &Context<'_>, n: u32) -> ProbeReport {
    let mut set = tokio::task::JoinSet::new();
    for ((task, output), prompt) in cx.prompts {
        for (ji, judge) in cx.scorer.judges().iter().enumerate() {
            for r in 1..n {
                let (judge, cache, prompt) =
                    (judge.clone(), cx.scorer.cache().clone(), prompt.clone());
                let key = (task.clone(), output.clone(), ji);
                set.spawn(async move { (key, judge.call(&prompt, r, &cache).await) });
            }
        }
    }
    let mut answers: BTreeMap<(String, String, usize), Vec<BTreeMap<String, JudgeVote>>> =
        BTreeMap::new();
    while let Some(Ok((key, result))) = set.join_next().await {
        answers.entry(key).or_default().push(result.votes);
    }
    let mut t = Tally::default();
    for o in cx.obs {
        for (ji, judge) in cx.scorer.judges().iter().enumerate() {
            let name = &judge.config.name;
            let Some(first) = o.votes.get(name).copied().flatten() else { continue };
            let Some(repeats) = answers.get(&(o.task.clone(), o.output.clone(), ji)) else {
                continue;
            };
            let later: Vec<Verdict> = repeats
                .iter()
                .filter_map(|votes| match votes.get(&o.rubric) {
                    Some(JudgeVote::Verdict { verdict, .. }) => Some(*verdict),
                    _ => None,
                })
                .collect();
            if later.is_empty() {
                continue;
            }
            let other = later.iter().find(|v| **v != first).copied();
            t.add(
                (&o.task, &o.output, &o.rubric),
                name,
                Some(first),
                other.or(Some(first)),
                other.is_some(),
            );
        }
    }
    t.report(
        &format!("The same call {n} times (repeat indices 0..{n}). The rate is the share of decided verdicts where a repeat disagreed with the first: a self-consistency check."),
        cx.settings,
    )
}

/// The pipeline's rows for `docs` (task, bytes, trial).
async fn judge_docs(cx: &Context<'_>, docs: Vec<(Arc<Task>, Vec<u8>, String)>) -> Vec<TaskResult> {
    let work = docs.into_iter().map(|(t, b, trial)| (t, OutputSource::Bytes(b), trial)).collect();
    judge_work(cx.scorer, work, cx.progress).await.0
}

fn probe_error(probe: &str, task: &str, e: impl std::fmt::Display) -> CalibrateError {
    CalibrateError::Probe { probe: probe.into(), message: format!("task {task}: {e}") }
}

async fn null(cx: &Context<'_>) -> Result<ProbeReport, CalibrateError> {
    let mut tasks: BTreeMap<String, Arc<Task>> = BTreeMap::new();
    for o in &cx.set.outputs {
        tasks.entry(o.task.name.clone()).or_insert_with(|| o.task.clone());
    }
    let mut docs = Vec::new();
    let mut notes = Vec::new();
    for task in tasks.values() {
        if task.output == crate::task::OutputKind::Workbook {
            // Its unedited output is the template, which the gate refuses:
            // no judge would be asked.
            notes.push(format!("{}: its output is a workbook (no unedited redline)", task.name));
            continue;
        }
        let Some(input) = &task.input else {
            notes.push(format!("{}: no input document", task.name));
            continue;
        };
        let bytes = std::fs::read(input).map_err(|e| probe_error("null", &task.name, e))?;
        let doc = doctored::null_output(&bytes, &task.author)
            .map_err(|e| probe_error("null", &task.name, e))?;
        docs.push((task.clone(), doc, "probe-null".to_string()));
    }
    let rows = judge_docs(cx, docs).await;
    // Against the labels of the unedited input where the set gives them;
    // elsewhere the share of PASS verdicts, as information: a rubric like
    // "Preserves clause 8" is rightly PASS on an unedited input.
    let (mut labelled, mut unlabelled) = (Tally::default(), Tally::default());
    let mut rewards = BTreeMap::new();
    for row in &rows {
        rewards.insert(row.task.clone(), row.reward);
        let expected = cx.set.unedited.get(&row.task);
        for r in row.rubrics.iter().filter(|r| r.kind == RubricKind::Llm) {
            let mut verdicts: Vec<(String, Option<Verdict>)> =
                r.votes.iter().map(|(j, v)| (j.clone(), *v)).collect();
            verdicts.push(("panel".into(), r.verdict));
            let label = expected.and_then(|e| e.get(&r.id)).copied();
            for (rater, v) in verdicts {
                let Some(v) = v else { continue };
                match label {
                    Some(want) => labelled.add(
                        (&row.task, "null", &r.id),
                        &rater,
                        Some(want),
                        Some(v),
                        v != want,
                    ),
                    None => unlabelled.add(
                        (&row.task, "null", &r.id),
                        &rater,
                        None,
                        Some(v),
                        v == Verdict::Pass,
                    ),
                }
            }
        }
    }
    let unlabelled_items = unlabelled.items.len();
    let mut report = if labelled.by_rater.is_empty() {
        let mut r = unlabelled.report(
            "The task's input returned unedited, with one comment by the author so the gate passes. The calibration set labels no unedited input (an output named \"unedited\" in verdicts/<task>.json), so the rate is the share of decided verdicts that said PASS: information, not a flag (a rubric like \"Preserves …\" is rightly PASS here).",
            cx.settings,
        );
        r.flagged.clear();
        r.informational = true;
        r
    } else {
        let mut r = labelled.report(
            "The task's input returned unedited, with one comment by the author so the gate passes, judged against the calibration set's labels for it (the output named \"unedited\"): the rate is the share of decided verdicts that differ from the label.",
            cx.settings,
        );
        if unlabelled_items > 0 {
            r.notes.push(format!(
                "{unlabelled_items} PASS verdicts on rubrics without a label for the unedited input are left out"
            ));
        }
        r
    };
    report.rewards = rewards;
    report.notes.extend(notes);
    Ok(report)
}

/// Judges each probe's movement against the judge's own under the repeat
/// probe: a judge whose verdicts move by themselves (sampling) moves
/// under every probe too, and is flagged only where a probe moves it
/// clearly more (the probe rate's 95% CI above the repeat rate).
pub(super) fn against_repeat(reports: &mut BTreeMap<String, ProbeReport>) {
    let base: Option<BTreeMap<String, f64>> =
        reports.iter().find(|(name, _)| name.starts_with("repeat")).map(|(_, r)| {
            r.rates
                .iter()
                .map(|(rater, rate)| (rater.clone(), rate.rate.map_or(0.0, |e| e.value)))
                .collect()
        });
    for (name, report) in reports.iter_mut() {
        let compared = ["order", "injection", "null"].contains(&name.as_str());
        if !compared || report.informational {
            continue;
        }
        let Some(base) = &base else {
            report.notes.push(
                "no repeat probe was run: movement is judged against none (run --probe repeat for each judge's own baseline)"
                    .into(),
            );
            continue;
        };
        report.flagged = report
            .rates
            .iter()
            .filter(|(rater, rate)| {
                let b = base.get(*rater).copied().unwrap_or(0.0);
                rater.as_str() != "panel"
                    && match rate.rate {
                        Some(Estimate { ci95: Some([lo, _]), .. }) => lo > b,
                        Some(e) => e.value > b + 0.05,
                        None => false,
                    }
            })
            .map(|(rater, _)| rater.clone())
            .collect();
        report.baseline = base.clone();
    }
}

fn gold(cx: &Context<'_>) -> ProbeReport {
    let rewards: BTreeMap<String, Option<f64>> =
        cx.rows.iter().filter(|r| r.trial == "gold").map(|r| (r.task.clone(), r.reward)).collect();
    let notes = if rewards.is_empty() {
        vec!["the calibration set has no output named \"gold\"".to_string()]
    } else {
        Vec::new()
    };
    ProbeReport {
        about: "The gold redline's reward under the panel: it should be near 1. A low one points at rubrics the gold redline does not meet, or at the judges.".into(),
        rewards,
        notes,
        ..Default::default()
    }
}

async fn injection(cx: &Context<'_>) -> Result<ProbeReport, CalibrateError> {
    let mut docs = Vec::new();
    for o in &cx.set.outputs {
        let bytes =
            std::fs::read(&o.path).map_err(|e| probe_error("injection", &o.task.name, e))?;
        let doc = doctored::injected(&bytes, &o.task.author)
            .map_err(|e| probe_error("injection", &o.task.name, e))?;
        docs.push((o.task.clone(), doc, format!("{}+injection", o.output)));
    }
    let rows = judge_docs(cx, docs).await;
    let (after, _) = observe_probe(cx.set, &rows, "+injection");
    let mut report = compare(cx, &after, |t| t.trim_end_matches("+injection").to_string()).report(
        "Each output with a tracked paragraph telling the judge that every rubric is satisfied and to answer PASS. A judge that treats the document as data gives the same verdicts; the rate is the share of decided verdicts that changed.",
        cx.settings,
    );
    let to_pass = report.items.iter().filter(|m| m.after == Some(Verdict::Pass)).count();
    report.notes.push(format!("{to_pass} of {} moves were to PASS", report.items.len()));
    Ok(report)
}

/// Observations of probe rows whose trial is an output's name + `suffix`.
fn observe_probe(
    set: &GoldSet,
    rows: &[TaskResult],
    suffix: &str,
) -> (Vec<Observation>, (u64, u64)) {
    let renamed: Vec<TaskResult> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.trial = r.trial.trim_end_matches(suffix).to_string();
            r
        })
        .collect();
    let (mut obs, checks) = observe(set, &renamed);
    for o in &mut obs {
        o.output.push_str(suffix);
    }
    (obs, checks)
}

async fn view(cx: &Context<'_>) -> ProbeReport {
    let Some(reference) = reference_scorer(cx.scorer) else {
        return ProbeReport {
            notes: vec!["the reference templates could not be used".into()],
            ..Default::default()
        };
    };
    let (rows, _) = judge_work(&reference, work(cx.set), cx.progress).await;
    let (after, _) = observe(cx.set, &rows);
    let mut report = compare(cx, &after, str::to_string).report(
        "The reference-faithful view and prompts (prompts/reference) against redjury's default annotated view. The rate is the share of decided verdicts that differ between the two; `views` gives each one's agreement with gold.",
        cx.settings,
    );
    report.flagged.clear();
    for (label, obs) in [("annotated", cx.obs), ("reference", after.as_slice())] {
        let mut per = BTreeMap::new();
        for rater in raters(cx.scorer) {
            let pairs: Vec<(Verdict, Option<Verdict>)> =
                obs.iter().map(|o| (o.gold, vote_of(o, &rater))).collect();
            per.insert(rater, super::brief(&pairs));
        }
        report.views.insert(label.into(), per);
    }
    report
}
