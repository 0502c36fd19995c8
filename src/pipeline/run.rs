//! Runs over folders: `score` (task files and output files → a results
//! folder) and `rejudge` (an earlier run's stored prompts → a new one), on
//! the one [`Scorer`].
//!
//! Owns: checking a run before anything is opened or spent (tasks,
//! outputs, `--out`: [`ScoreJob::plan`], [`RejudgeJob::plan`]), batches
//! (memory stays bounded by the batch, not the run), the views stream and
//! the summary's judge figures. Must never leave a results folder that
//! mixes two runs: a run writes into a fresh folder beside `--out` and
//! swaps it in at the end (`folder.rs`).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::folder::{self, Staging, Target};
use super::{Dispatch, OutputSource, Prepared, Progress, Scorer};
use crate::aggregate::{Billed, Bootstrap, Prices};
use crate::cache::Cache;
use crate::judge::CounterSnapshot;
use crate::prompt::Prompt;
use crate::report::{self, JudgeSummary, PromptRecord, Shard, Summary};
use crate::score::{RubricKind, TaskResult};
use crate::task::{self, Task};

/// Outputs prepared and judged together: bounds memory on large runs while
/// keeping every judge's limiter busy.
const BATCH: usize = 1024;

/// Whether the annotated view of every output is written to `views/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Views {
    /// Write them.
    Write,
    /// Skip them.
    Skip,
}

/// Settings of a run besides the scorer.
pub struct RunSettings {
    /// The results folder, replaced whole when the run ends.
    pub out: PathBuf,
    /// Prices for cost estimates.
    pub prices: Prices,
    /// The group bootstrap's settings (and the reference CI's draws).
    pub bootstrap: Bootstrap,
    /// Whether views are written.
    pub views: Views,
    /// The evaluated model's name: seeds the reference's CI.
    pub model: Option<String>,
    /// The part of the outputs this process scores (`score --shard K/N`).
    pub shard: Option<Shard>,
}

/// How a run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every task × trial has a reward.
    Complete,
    /// Some rows are incomplete (quorum not met); results are written.
    Incomplete,
    /// No judge was called; judge rubrics are pending.
    DryRun,
}

impl RunEnd {
    /// How a run whose summary is `summary` ended.
    pub(crate) fn of(summary: &Summary) -> RunEnd {
        if summary.dry_run {
            RunEnd::DryRun
        } else if summary.counts.incomplete > 0 {
            RunEnd::Incomplete
        } else {
            RunEnd::Complete
        }
    }
}

/// What a run produced.
pub struct RunReport {
    /// The run's summary.
    pub summary: Summary,
    /// How it ended.
    pub end: RunEnd,
    /// Where its results are.
    pub out_dir: PathBuf,
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    #[error(transparent)]
    /// The task files or the outputs could not be read.
    Task(#[from] task::TaskError),
    #[error(transparent)]
    /// An earlier run could not be read.
    Report(#[from] report::ReportError),
    /// The results folder cannot be written.
    #[error("cannot write results to {path}: {source}")]
    #[allow(missing_docs)]
    Write { path: PathBuf, source: std::io::Error },
    /// `--out` holds something that is not a results folder.
    #[error(
        "refusing to write results to {path}: it is not empty and not a redjury results folder (no summary.json), and redjury never replaces files it did not write; choose a new folder"
    )]
    #[allow(missing_docs)]
    Foreign { path: PathBuf },
    /// `--out` is, or holds, an input of the run.
    #[error(
        "refusing to write results to {path}: it holds {input}, an input of this run, which a results folder would replace; choose a folder of its own"
    )]
    #[allow(missing_docs)]
    Protected { path: PathBuf, input: PathBuf },
    /// No output matches a task, and task-named files lie further down.
    #[error(
        "no output under {path} matches a task, but task-named files lie below it: {found}; did you mean --outputs {suggest}?"
    )]
    #[allow(missing_docs)]
    OutputsTooHigh { path: PathBuf, found: String, suggest: PathBuf },
    /// `rejudge --out` names the run being rejudged.
    #[error("--out {path} is the run being rejudged; write the new results to another folder")]
    #[allow(missing_docs)]
    SameFolder { path: PathBuf },
    /// `rejudge` found rows whose prompt is not recorded.
    #[error("{path}/prompts.jsonl has no prompt for {rows}; rescore those with `redjury score`")]
    #[allow(missing_docs)]
    MissingPrompts { path: PathBuf, rows: String },
    /// Judge answers received in this run could be stored neither in the
    /// cache nor in its journal (a full disk, a read-only cache).
    #[error(
        "{held} judge answers received in this run could not be stored in the cache {cache} or its journal ({reason}); {kept}"
    )]
    #[allow(missing_docs)]
    Unstored { held: usize, cache: PathBuf, reason: String, kept: String },
    /// Judge answers received in this run are only in the journal: the
    /// shared store stayed unreachable to the end (the other processes do
    /// not see them, and may pay for those calls again).
    #[error(
        "{count} judge answers are kept in {journal}, not in the store ({reason}; waited {waited} s for it): the next run with this cache, from this folder, stores them first (nothing to pay again); until then other processes on the store do not see them"
    )]
    #[allow(missing_docs)]
    Journaled { count: usize, journal: PathBuf, reason: String, waited: u64 },
    /// An earlier run's answers saved beside its results still cannot be
    /// stored.
    #[error(
        "{path} holds judge answers an earlier run received and could not store, and the cache cannot take them yet ({message}): make room for the cache, then run again (they are paid for; nothing is lost)"
    )]
    #[allow(missing_docs)]
    PendingAnswers { path: PathBuf, message: String },
}

/// Where a run saves, in its results folder, the judge answers the cache
/// could not take; the next run into the same folder stores them first.
pub(crate) const PENDING_ANSWERS: &str = "pending-answers.jsonl";

/// Stores the answers an earlier run into `out` saved beside its results.
fn store_pending_answers(scorer: &Scorer, out: &Path) -> Result<(), RunError> {
    let file = out.join(PENDING_ANSWERS);
    match scorer.cache().store_answers_from(&file) {
        Ok(0) => Ok(()),
        Ok(n) => {
            tracing::info!("stored {n} judge answers an earlier run saved in {}", file.display());
            Ok(())
        }
        Err(e) => Err(RunError::PendingAnswers { path: file, message: e.message }),
    }
}

/// `redjury score`, checked before anything is opened or spent: the tasks
/// loaded and validated, the outputs found, `--out` checked. Every error
/// here is a problem with what was asked, found before any work.
pub struct ScoreJob {
    tasks: Vec<Arc<Task>>,
    outputs: task::Outputs,
    missing: Vec<String>,
    target: Target,
}

impl ScoreJob {
    /// Loads the tasks under `tasks_dir`, finds their outputs under
    /// `outputs_dir`, and checks `out`.
    pub fn plan(
        tasks_dir: &Path,
        outputs_dir: &Path,
        out: &Path,
        shard: Option<Shard>,
    ) -> Result<ScoreJob, RunError> {
        let tasks: Vec<Arc<Task>> =
            super::load_tasks(tasks_dir)?.into_iter().map(Arc::new).collect();
        let names: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
        let mut outputs = task::find_outputs(outputs_dir, &names)?;
        if outputs.found.is_empty() {
            suggest_outputs(outputs_dir, &names)?;
        }
        let target = folder::check(out, &[tasks_dir, outputs_dir])?;
        let with_output: HashSet<&str> = outputs.found.iter().map(|o| o.task.as_str()).collect();
        let missing = names.iter().filter(|n| !with_output.contains(n.as_str())).cloned().collect();
        if let Some(shard) = shard {
            outputs.found = shard_of(outputs.found, &tasks, shard);
        }
        Ok(ScoreJob { tasks, outputs, missing, target })
    }

    /// Files and folders in `--out` that redjury did not write, which the
    /// run keeps.
    pub fn kept(&self) -> &[PathBuf] {
        self.target.kept()
    }

    /// Scores every output found, into the results folder.
    pub async fn run(
        self,
        scorer: &Scorer,
        settings: &RunSettings,
        progress: &dyn Progress,
    ) -> Result<RunReport, RunError> {
        store_pending_answers(scorer, &settings.out)?;
        let by_name: BTreeMap<&str, &Arc<Task>> =
            self.tasks.iter().map(|t| (t.name.as_str(), t)).collect();
        let work: Vec<(Arc<Task>, PathBuf, String)> = self
            .outputs
            .found
            .iter()
            .filter_map(|o| {
                Some(((*by_name.get(o.task.as_str())?).clone(), o.path.clone(), o.trial.clone()))
            })
            .collect();
        let staging = Staging::start(self.target)?;
        let views = start_views(&staging.dir, settings.views)?;
        let mut prompts = Vec::new();
        let chunks: Vec<&[(Arc<Task>, PathBuf, String)]> = work.chunks(BATCH).collect();
        let rows =
            judge_chunks(scorer, &settings.prices, chunks.len(), progress, async |i, pass| {
                let batch: Vec<(Arc<Task>, OutputSource, String)> = chunks[i]
                    .iter()
                    .map(|(t, p, trial)| (t.clone(), OutputSource::Path(p.clone()), trial.clone()))
                    .collect();
                let prepared = scorer.prepare_all(batch).await;
                match pass {
                    Pass::First => record(prepared, views.as_ref(), &mut prompts, &staging.dir),
                    Pass::Again => Ok(prepared),
                }
            })
            .await?;
        if let Some(views) = views {
            views
                .finish()
                .map_err(|source| RunError::Write { path: staging.dir.join("views"), source })?;
        }
        let outputs = self.outputs;
        let unmatched = outputs.unmatched.iter().map(|p| p.display().to_string()).collect();
        let unusable = outputs
            .unusable
            .iter()
            .map(|(p, why)| report::Unusable { path: p.display().to_string(), reason: why.clone() })
            .collect();
        let left = Leftovers { missing: self.missing, unmatched, unusable };
        finish(scorer, settings, staging, rows, prompts, left).await
    }
}

/// The outputs shard `shard` scores: the judged outputs (those of tasks
/// with judge rubrics) dealt round the shards in their sorted order, and
/// the outputs only checks score dealt the same way apart, so every shard
/// makes about as many judge calls (one more at most); the same outputs
/// always go to the same shard.
fn shard_of(found: Vec<task::Output>, tasks: &[Arc<Task>], shard: Shard) -> Vec<task::Output> {
    let judged: HashSet<&str> = tasks
        .iter()
        .filter(|t| t.llm_rubrics().next().is_some())
        .map(|t| t.name.as_str())
        .collect();
    let (mut nth_judged, mut nth_checked) = (0u32, 0u32);
    found
        .into_iter()
        .filter(|o| {
            let nth =
                if judged.contains(o.task.as_str()) { &mut nth_judged } else { &mut nth_checked };
            let mine = *nth % shard.of == shard.index;
            *nth += 1;
            mine
        })
        .collect()
}

/// No output matched a task: when task-named files lie one or two levels
/// below (`--outputs scenarios/outputs` for `scenarios/outputs/strong`),
/// the run is refused with the folders that hold them.
fn suggest_outputs(dir: &Path, names: &[String]) -> Result<(), RunError> {
    let mut found: BTreeMap<PathBuf, usize> = BTreeMap::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for entry in entries.flatten().take(10_000) {
            let path = entry.path();
            if path.is_dir() && depth < 2 {
                stack.push((path, depth + 1));
                continue;
            }
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let named = stem.is_some_and(|s| names.contains(&s));
            if named && depth > 0 && task::unusable_reason(&path).is_none() {
                *found.entry(d.clone()).or_default() += 1;
            }
        }
    }
    let Some((suggest, _)) = found.iter().max_by_key(|(d, n)| (**n, std::cmp::Reverse(*d))) else {
        return Ok(());
    };
    let listed: Vec<String> = found.iter().map(|(d, n)| format!("{} ({n})", d.display())).collect();
    Err(RunError::OutputsTooHigh {
        path: dir.to_path_buf(),
        found: listed.join(", "),
        suggest: suggest.clone(),
    })
}

/// Which time a chunk of outputs is prepared: the first (its prompts and
/// views are recorded) or again after a batch run (everything from the
/// caches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    First,
    Again,
}

/// Judges `chunks` chunks of outputs, each prepared by `prepare`. Live,
/// each chunk is prepared and judged in turn (memory stays bounded by the
/// chunk). By batch, every chunk's calls are submitted before any batch is
/// waited on, then the chunks are prepared again and judged from the cache.
async fn judge_chunks(
    scorer: &Scorer,
    prices: &Prices,
    chunks: usize,
    progress: &dyn Progress,
    mut prepare: impl AsyncFnMut(usize, Pass) -> Result<Vec<Prepared>, RunError>,
) -> Result<Vec<TaskResult>, RunError> {
    let mut rows = Vec::new();
    // A dry run estimates in one pass, batch or not: nothing is submitted.
    let (Dispatch::Batch(fallback), None) = (scorer.dispatch(), scorer.dry_run()) else {
        for i in 0..chunks {
            let prepared = prepare(i, Pass::First).await?;
            rows.extend(scorer.judge(prepared, progress).await);
        }
        return Ok(rows);
    };
    let mut plans = Vec::new();
    for i in 0..chunks {
        let prepared = prepare(i, Pass::First).await?;
        plans.extend(scorer.submit_batches(&prepared).await);
    }
    let left = scorer.wait_batches(plans, progress, fallback).await;
    warn_live_fallback(scorer, prices, &left);
    for i in 0..chunks {
        let prepared = prepare(i, Pass::Again).await?;
        rows.extend(scorer.judge_skipping(prepared, progress, &left.skipped).await);
    }
    Ok(rows)
}

/// Says, per judge, how many calls no batch answered go live, and what
/// that costs over the batch price (prompt tokens estimated, output at
/// the cap: an upper bound).
fn warn_live_fallback(scorer: &Scorer, prices: &Prices, left: &super::BatchesLeft) {
    for (judge, &(calls, tokens)) in scorer.judges().iter().zip(&left.live) {
        if calls == 0 {
            continue;
        }
        let output = calls as u64 * u64::from(judge.config.max_output_tokens);
        let model = &judge.config.model;
        let live = prices.cost(model, Billed { input: tokens, output, ..Default::default() });
        let batch = prices.cost(
            model,
            Billed { batch_input: tokens, batch_output: output, ..Default::default() },
        );
        let cost = match (live, batch) {
            (Some(l), Some(b)) => {
                format!(": at most ${l:.2} live instead of ${b:.2} by batch (${:.2} more)", l - b)
            }
            _ => String::new(),
        };
        tracing::warn!(
            "judge '{}': {calls} calls were not answered by batch and go live at the live price{cost}",
            judge.config.name
        );
    }
}

/// Writes the views of a batch and records its prompts.
fn record(
    prepared: Vec<Prepared>,
    views: Option<&report::ViewWriter>,
    prompts: &mut Vec<PromptRecord>,
    dir: &Path,
) -> Result<Vec<Prepared>, RunError> {
    let mut out = Vec::with_capacity(prepared.len());
    for mut item in prepared {
        if let Some(p) = &item.prompt {
            prompts.push(PromptRecord::of(&item.row.task, &item.row.trial, p));
        }
        if let (Some(views), Some(text)) = (views, item.view.take()) {
            views
                .write(super::prepare::view_name(&item.row.task, &item.row.trial), text)
                .map_err(|source| RunError::Write { path: dir.join("views"), source })?;
        }
        out.push(item);
    }
    Ok(out)
}

fn start_views(dir: &Path, views: Views) -> Result<Option<report::ViewWriter>, RunError> {
    match views {
        Views::Write => {
            let views = dir.join("views");
            report::ViewWriter::start(&views)
                .map(Some)
                .map_err(|source| RunError::Write { path: views, source })
        }
        Views::Skip => Ok(None),
    }
}

/// `redjury rejudge`, checked before anything is opened or spent: the
/// earlier run read, its prompts recorded for every judged row, `--out`
/// checked (it must not be, or hold, the run being rejudged).
pub struct RejudgeJob {
    run_dir: PathBuf,
    rows: Vec<TaskResult>,
    old: Summary,
    by_key: BTreeMap<(String, String), PromptRecord>,
    target: Target,
}

impl RejudgeJob {
    /// Reads the run in `run_dir` and checks `out`.
    pub fn plan(run_dir: &Path, out: &Path) -> Result<RejudgeJob, RunError> {
        let same = match (run_dir.canonicalize(), out.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => run_dir == out,
        };
        if same {
            return Err(RunError::SameFolder { path: out.to_path_buf() });
        }
        let target = folder::check(out, &[run_dir])?;
        let (rows, old) = report::load_run(run_dir)?;
        let by_key: BTreeMap<(String, String), PromptRecord> = report::load_prompts(run_dir)?
            .into_iter()
            .map(|p| ((p.task.clone(), p.trial.clone()), p))
            .collect();
        let missing: Vec<String> = rows
            .iter()
            .filter(|r| r.gate.passed && r.rubrics.iter().any(|x| x.kind == RubricKind::Llm))
            .filter(|r| !by_key.contains_key(&(r.task.clone(), r.trial.clone())))
            .map(|r| format!("{} trial {}", r.task, r.trial))
            .collect();
        if !missing.is_empty() {
            return Err(RunError::MissingPrompts {
                path: run_dir.to_path_buf(),
                rows: missing.join(", "),
            });
        }
        Ok(RejudgeJob { run_dir: run_dir.to_path_buf(), rows, old, by_key, target })
    }

    /// Judges the stored prompts again, into the results folder.
    pub async fn run(
        self,
        scorer: &Scorer,
        settings: &RunSettings,
        progress: &dyn Progress,
    ) -> Result<RunReport, RunError> {
        store_pending_answers(scorer, &settings.out)?;
        let staging = Staging::start(self.target)?;
        if settings.views == Views::Write {
            copy_views(&self.run_dir, &staging.dir)?;
        }
        let (run_dir, by_key) = (&self.run_dir, &self.by_key);
        let mut prompts = Vec::new();
        let chunks: Vec<&[TaskResult]> = self.rows.chunks(BATCH).collect();
        let out_rows =
            judge_chunks(scorer, &settings.prices, chunks.len(), progress, async |i, pass| {
                let mut items = Vec::with_capacity(chunks[i].len());
                for row in chunks[i] {
                    let mut row = row.clone();
                    row.reopen_judged();
                    let prompt = match by_key.get(&(row.task.clone(), row.trial.clone())) {
                        Some(reference) if row.gate.passed => {
                            Some(stored_prompt(reference, scorer.cache(), run_dir)?)
                        }
                        _ => None,
                    };
                    if let (Some(p), Pass::First) = (&prompt, pass) {
                        prompts.push(PromptRecord::of(&row.task, &row.trial, p));
                    }
                    items.push(Scorer::reopen(row, prompt));
                }
                Ok(items)
            })
            .await?;
        let old = self.old;
        let left = Leftovers {
            missing: old.missing,
            unmatched: old.unmatched_outputs,
            unusable: old.unusable_outputs,
        };
        finish(scorer, settings, staging, out_rows, prompts, left).await
    }
}

/// The text of a prompt an earlier run recorded, from the cache.
fn stored_prompt(
    record: &PromptRecord,
    cache: &Cache,
    run_dir: &Path,
) -> Result<Prompt, report::ReportError> {
    let cannot = |message: String| report::ReportError::Read {
        path: run_dir.join("prompts.jsonl"),
        message,
    };
    match cache.get_prompt(&record.prompt_hash) {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(cannot(format!(
            "prompt {} ({} trial {}) is not in the cache; pass the --cache the run used",
            record.prompt_hash, record.task, record.trial
        ))),
        Err(e) => Err(cannot(e.to_string())),
    }
}

/// The judges read the same documents: an earlier run's views carry over
/// (and a sharded run's parts' views into the joined folder).
pub(super) fn copy_views(run_dir: &Path, into: &Path) -> Result<(), RunError> {
    let Ok(entries) = std::fs::read_dir(run_dir.join("views")) else { return Ok(()) };
    let to_dir = into.join("views");
    std::fs::create_dir_all(&to_dir)
        .map_err(|source| RunError::Write { path: to_dir.clone(), source })?;
    for e in entries.flatten() {
        let to = to_dir.join(e.file_name());
        std::fs::copy(e.path(), &to).map_err(|source| RunError::Write { path: to, source })?;
    }
    Ok(())
}

/// A run's summary: the figures over `rows` and what the scorer's judges
/// did (requests, tokens, cost, the dry run's estimates). `score`,
/// `rejudge` and the reward service all summarise this way.
pub(crate) fn summarize(
    scorer: &Scorer,
    rows: &[TaskResult],
    left: Leftovers,
    prices: &Prices,
    bootstrap: Bootstrap,
    model: Option<&str>,
) -> Summary {
    let mut summary = Summary::build(rows, left.missing, left.unmatched, bootstrap, model);
    summary.unusable_outputs = left.unusable;
    summary.dry_run = scorer.dry_run().is_some();
    summary.quorum = scorer.quorum();
    summary.template_version = scorer.templates().version.clone();
    summary.notes = scorer.cache().notes();
    summary.notes.extend(scorer.escalation_note());
    let estimates = scorer.estimates();
    let mut panel = CounterSnapshot::default();
    for j in scorer.judges() {
        panel += j.counters.snapshot();
    }
    for j in scorer.judges() {
        let c = j.counters.snapshot();
        let estimate = summary.dry_run.then(|| {
            let mut e = estimates.get(&j.config.name).cloned().unwrap_or_default();
            let billed = match scorer.dispatch() {
                super::Dispatch::Live => Billed {
                    input: e.input_tokens,
                    output: e.max_output_tokens,
                    ..Default::default()
                },
                super::Dispatch::Batch(_) => Billed {
                    batch_input: e.input_tokens,
                    batch_output: e.max_output_tokens,
                    ..Default::default()
                },
            };
            e.max_cost_usd = prices.cost(&j.config.model, billed);
            e
        });
        let s = JudgeSummary {
            provider: j.config.provider.as_str().into(),
            model: j.config.model.clone(),
            api_key_env: j.config.api_key_env.clone().unwrap_or_default(),
            has_key: j.can_call(),
            stopped: j.stopped(),
            counters: c,
            cached_share: (c.input_tokens > 0)
                .then(|| c.cached_tokens as f64 / c.input_tokens as f64),
            cost: prices.cost(&j.config.model, Billed::of(&c)),
            estimate,
            observed_limits: (c.requests > 0).then(|| j.observed_limits()),
            saved_usd: crate::aggregate::saved_by_deciding(prices, &j.config.model, &c, &panel),
        };
        summary.judges.insert(j.config.name.clone(), s);
    }
    summary
}

/// What a run found besides scorable outputs.
#[derive(Default)]
pub(crate) struct Leftovers {
    /// Tasks without an output.
    pub missing: Vec<String>,
    /// Output files that match no task.
    pub unmatched: Vec<String>,
    /// Output files that cannot be used, with the reason.
    pub unusable: Vec<report::Unusable>,
}

async fn finish(
    scorer: &Scorer,
    settings: &RunSettings,
    staging: Staging,
    rows: Vec<TaskResult>,
    prompts: Vec<PromptRecord>,
    left: Leftovers,
) -> Result<RunReport, RunError> {
    let unsettled = scorer.settle_store().await;
    let mut summary = summarize(
        scorer,
        &rows,
        left,
        &settings.prices,
        settings.bootstrap,
        settings.model.as_deref(),
    );
    summary.shard = settings.shard;
    report::write_run(&staging.dir, &rows, &summary, &prompts)
        .map_err(|source| RunError::Write { path: staging.dir.clone(), source })?;
    staging.swap()?;
    let cache = scorer.cache();
    if let Err(e) = cache.checkpoint() {
        tracing::warn!("{e}");
    }
    if unsettled.held > 0 {
        return Err(unstored(scorer, &unsettled, &settings.out));
    }
    if unsettled.journaled > 0 {
        return Err(RunError::Journaled {
            count: unsettled.journaled,
            journal: unsettled.journal,
            reason: unsettled.reason,
            waited: crate::cache::shared_store_wait().as_secs(),
        });
    }
    let end = RunEnd::of(&summary);
    Ok(RunReport { summary, end, out_dir: settings.out.clone() })
}

/// The answers still held in memory, saved in the results folder when it
/// can take them (the next run into it stores them), and the error that
/// says where they are.
fn unstored(scorer: &Scorer, unsettled: &super::Unsettled, out: &Path) -> RunError {
    let cache = scorer.cache();
    let file = out.join(PENDING_ANSWERS);
    let lines = cache.held_lines().join("\n");
    let kept = match std::fs::write(&file, format!("{lines}\n")) {
        Ok(()) => format!(
            "they are saved in {}, and the next run with --out {} stores them in the cache first (nothing to pay again)",
            file.display(),
            out.display()
        ),
        Err(e) => format!(
            "they could not be saved in {} either ({e}): they are held in memory only and are lost when redjury exits, so a rerun pays for those calls again",
            file.display()
        ),
    };
    // Both can happen at once (the store down, then the journal's disk
    // full): the error names every place an answer waits.
    let kept = match unsettled.journaled {
        0 => kept,
        n => format!(
            "{kept}; {n} more are kept in {}, not in the store yet, and the next run with this cache, from this folder, stores them first",
            unsettled.journal.display()
        ),
    };
    RunError::Unstored {
        held: unsettled.held,
        cache: cache.path().to_path_buf(),
        reason: cache.unstored_reason().unwrap_or_default(),
        kept,
    }
}
