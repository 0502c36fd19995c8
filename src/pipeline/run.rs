//! Runs over folders: `score` (task files and output files → a results
//! folder) and `rejudge` (an earlier run's stored prompts → a new one), on
//! the one [`Scorer`].
//!
//! Owns: batches (memory stays bounded by the batch, not the run), the
//! views stream, the summary's judge figures, and replacing the results
//! folder whole. Must never leave a results folder that mixes two runs: a
//! run writes into a fresh folder beside `--out` and swaps it in at the end.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Dispatch, OutputSource, Prepared, Progress, Scorer};
use crate::aggregate::Bootstrap;
use crate::report::{self, JudgeSummary, Prices, PromptRecord, Summary};
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

/// What to do when `--out` already holds something that is not a results
/// folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Replace only an earlier results folder (or an empty one).
    ResultsOnly,
    /// Replace whatever is there (`--force`).
    Anything,
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
    /// What may be replaced at `out`.
    pub replace: Replace,
    /// The evaluated model's name: seeds the reference's CI.
    pub model: Option<String>,
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
        "refusing to replace {path}: it is not empty and not a redjury results folder (no summary.json); choose a new folder, or pass --force"
    )]
    #[allow(missing_docs)]
    Foreign { path: PathBuf },
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
pub const PENDING_ANSWERS: &str = "pending-answers.jsonl";

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

/// The folder a run writes into before it is swapped in as `--out`.
struct Staging {
    out: PathBuf,
    dir: PathBuf,
}

impl Staging {
    fn start(out: &Path, replace: Replace) -> Result<Staging, RunError> {
        let write = |path: &Path, source| RunError::Write { path: path.to_path_buf(), source };
        if replace == Replace::ResultsOnly && out.is_dir() && !out.join("summary.json").exists() {
            let mut entries = std::fs::read_dir(out).map_err(|e| write(out, e))?;
            if entries.next().is_some() {
                return Err(RunError::Foreign { path: out.to_path_buf() });
            }
        }
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "results".into());
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(|e| write(parent, e))?;
        let dir = parent.join(format!(".{name}.partial-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| write(&dir, e))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| write(&dir, e))?;
        Ok(Staging { out: out.to_path_buf(), dir })
    }

    /// Puts the finished folder in place of `--out`, whole.
    fn swap(self) -> Result<(), RunError> {
        let write = |path: &Path, source| RunError::Write { path: path.to_path_buf(), source };
        let old = self.dir.with_file_name(format!(
            ".{}.old-{}",
            self.out.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
            std::process::id()
        ));
        if self.out.exists() {
            std::fs::rename(&self.out, &old).map_err(|e| write(&self.out, e))?;
        }
        std::fs::rename(&self.dir, &self.out).map_err(|e| write(&self.out, e))?;
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(|e| write(&old, e))?;
        }
        Ok(())
    }
}

/// `redjury score`: every output under `outputs_dir` for the tasks under
/// `tasks_dir`.
pub async fn score(
    tasks_dir: &Path,
    outputs_dir: &Path,
    scorer: &Scorer,
    settings: &RunSettings,
    progress: &dyn Progress,
) -> Result<RunReport, RunError> {
    let tasks: Vec<Arc<Task>> = super::load_tasks(tasks_dir)?.into_iter().map(Arc::new).collect();
    store_pending_answers(scorer, &settings.out)?;
    let names: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
    let outputs = task::find_outputs(outputs_dir, &names)?;
    let with_output: HashSet<&str> = outputs.found.iter().map(|o| o.task.as_str()).collect();
    let missing: Vec<String> =
        names.iter().filter(|n| !with_output.contains(n.as_str())).cloned().collect();
    let by_name: BTreeMap<&str, &Arc<Task>> = tasks.iter().map(|t| (t.name.as_str(), t)).collect();
    let work: Vec<(Arc<Task>, PathBuf, String)> = outputs
        .found
        .iter()
        .filter_map(|o| {
            Some(((*by_name.get(o.task.as_str())?).clone(), o.path.clone(), o.trial.clone()))
        })
        .collect();
    let staging = Staging::start(&settings.out, settings.replace)?;
    let views = start_views(&staging.dir, settings.views)?;
    let mut prompts = Vec::new();
    let chunks: Vec<&[(Arc<Task>, PathBuf, String)]> = work.chunks(BATCH).collect();
    let rows = judge_chunks(scorer, &settings.prices, chunks.len(), progress, async |i, pass| {
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
    let unmatched = outputs.unmatched.iter().map(|p| p.display().to_string()).collect();
    let unusable = outputs
        .unusable
        .iter()
        .map(|(p, why)| report::Unusable { path: p.display().to_string(), reason: why.clone() })
        .collect();
    finish(scorer, settings, staging, rows, prompts, Leftovers { missing, unmatched, unusable })
        .await
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
        let live =
            prices.cost(model, report::Billed { input: tokens, output, ..Default::default() });
        let batch = prices.cost(
            model,
            report::Billed { batch_input: tokens, batch_output: output, ..Default::default() },
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

/// `redjury rejudge`: the prompts an earlier run stored, judged again.
pub async fn rejudge(
    run_dir: &Path,
    scorer: &Scorer,
    settings: &RunSettings,
    progress: &dyn Progress,
) -> Result<RunReport, RunError> {
    let same = match (run_dir.canonicalize(), settings.out.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => run_dir == settings.out,
    };
    if same {
        return Err(RunError::SameFolder { path: settings.out.clone() });
    }
    let (rows, old) = report::load_run(run_dir)?;
    store_pending_answers(scorer, &settings.out)?;
    let records = report::load_prompts(run_dir)?;
    let by_key: BTreeMap<(String, String), PromptRecord> =
        records.into_iter().map(|p| ((p.task.clone(), p.trial.clone()), p)).collect();
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
    let staging = Staging::start(&settings.out, settings.replace)?;
    // The judges read the same documents: carry the views over.
    if let (Views::Write, Ok(entries)) = (settings.views, std::fs::read_dir(run_dir.join("views")))
    {
        let to_dir = staging.dir.join("views");
        std::fs::create_dir_all(&to_dir)
            .map_err(|source| RunError::Write { path: to_dir.clone(), source })?;
        for e in entries.flatten() {
            let to = to_dir.join(e.file_name());
            std::fs::copy(e.path(), &to).map_err(|source| RunError::Write { path: to, source })?;
        }
    }
    let mut prompts = Vec::new();
    let chunks: Vec<&[TaskResult]> = rows.chunks(BATCH).collect();
    let out_rows =
        judge_chunks(scorer, &settings.prices, chunks.len(), progress, async |i, pass| {
            let mut items = Vec::with_capacity(chunks[i].len());
            for row in chunks[i] {
                let mut row = row.clone();
                row.reopen_judged();
                let prompt = match by_key.get(&(row.task.clone(), row.trial.clone())) {
                    Some(reference) if row.gate.passed => {
                        Some(reference.resolve(scorer.cache(), run_dir)?)
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
    let unusable = old.unusable_outputs.clone();
    finish(
        scorer,
        settings,
        staging,
        out_rows,
        prompts,
        Leftovers { missing: old.missing, unmatched: old.unmatched_outputs, unusable },
    )
    .await
}

/// A run's summary: the figures over `rows` and what the scorer's judges
/// did (requests, tokens, cost, the dry run's estimates). `score`,
/// `rejudge` and the reward service all summarise this way.
pub fn summarize(
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
    let estimates = scorer.estimates();
    for j in scorer.judges() {
        let c = j.counters.snapshot();
        let estimate = summary.dry_run.then(|| {
            let mut e = estimates.get(&j.config.name).cloned().unwrap_or_default();
            let billed = match scorer.dispatch() {
                super::Dispatch::Live => crate::report::Billed {
                    input: e.input_tokens,
                    output: e.max_output_tokens,
                    ..Default::default()
                },
                super::Dispatch::Batch(_) => crate::report::Billed {
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
            cost: prices.cost(&j.config.model, crate::report::Billed::of(&c)),
            estimate,
            observed_limits: (c.requests > 0).then(|| j.observed_limits()),
        };
        summary.judges.insert(j.config.name.clone(), s);
    }
    summary
}

/// What a run found besides scorable outputs.
#[derive(Default)]
pub struct Leftovers {
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
    let held = scorer.settle_store(super::STORE_WAIT).await;
    let summary = summarize(
        scorer,
        &rows,
        left,
        &settings.prices,
        settings.bootstrap,
        settings.model.as_deref(),
    );
    report::write_run(&staging.dir, &rows, &summary, &prompts)
        .map_err(|source| RunError::Write { path: staging.dir.clone(), source })?;
    staging.swap()?;
    let cache = scorer.cache();
    if let Err(e) = cache.checkpoint() {
        tracing::warn!("{e}");
    }
    if held > 0 {
        return Err(unstored(scorer, held, &settings.out));
    }
    let end = if summary.dry_run {
        RunEnd::DryRun
    } else if summary.counts.incomplete > 0 {
        RunEnd::Incomplete
    } else {
        RunEnd::Complete
    };
    Ok(RunReport { summary, end, out_dir: settings.out.clone() })
}

/// The answers still held in memory, saved in the results folder when it
/// can take them (the next run into it stores them), and the error that
/// says where they are.
fn unstored(scorer: &Scorer, held: usize, out: &Path) -> RunError {
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
    RunError::Unstored {
        held,
        cache: cache.path().to_path_buf(),
        reason: cache.unstored_reason().unwrap_or_default(),
        kept,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("redjury-staging-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp");
        d
    }

    #[test]
    fn a_run_replaces_its_results_folder_whole() {
        let dir = temp("swap");
        let out = dir.join("run");
        std::fs::create_dir_all(out.join("views")).expect("mkdir");
        std::fs::write(out.join("summary.json"), "{}").expect("write");
        std::fs::write(out.join("views/stale.md"), "old").expect("write");
        let staging = Staging::start(&out, Replace::ResultsOnly).expect("starts");
        assert!(out.join("views/stale.md").exists(), "the old results stay until the swap");
        std::fs::write(staging.dir.join("summary.json"), "{\"new\": 1}").expect("write");
        staging.swap().expect("swaps");
        assert_eq!(
            std::fs::read_to_string(out.join("summary.json")).ok().as_deref(),
            Some("{\"new\": 1}")
        );
        assert!(!out.join("views").exists());
        let leftovers: Vec<_> =
            std::fs::read_dir(&dir).expect("dir").flatten().map(|e| e.file_name()).collect();
        assert_eq!(leftovers, ["run"], "no partial or old folder is left behind");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_folder_of_something_else_is_refused_unless_forced() {
        let dir = temp("foreign");
        std::fs::write(dir.join("notes.txt"), "mine").expect("write");
        assert!(matches!(
            Staging::start(&dir, Replace::ResultsOnly),
            Err(RunError::Foreign { .. })
        ));
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).expect("mkdir");
        assert!(Staging::start(&empty, Replace::ResultsOnly).is_ok(), "an empty folder is fine");
        assert!(Staging::start(&dir, Replace::Anything).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
