//! The one scoring pipeline: read → gate → render → check → prompt →
//! judge → vote → reward. `score`, `rejudge`, `serve` and `calibrate` all
//! run on [`Scorer`]; none has a copy of these stages.
//!
//! Owns: the order of the stages, the fan-out of judge calls, the dry run's
//! estimates and the refusal to spend when the quorum cannot be met. Must
//! never skip a task silently (missing outputs are listed, judge failures
//! become recorded abstentions) and never pay twice for an answer (every
//! call goes through the cache and the judges' de-duplication).

mod estimate;
pub(crate) mod folder;
mod judging;
mod merge;
pub(crate) mod prepare;
pub(crate) mod run;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) use judging::BatchesLeft;
pub use judging::{BatchFallback, Dispatch, Progress, Silent};
pub(crate) use merge::merge;
pub use prepare::OutputSource;
pub(crate) use prepare::Prepared;
#[cfg(test)]
pub(crate) use prepare::skeleton;

use crate::cache::{Cache, CacheError};
use crate::isolated::Reader;
use crate::judge::batch::{self, Unanswered};
use crate::judge::config::{Guarantee, PanelConfig, VoteMode};
use crate::judge::{Judge, JudgeError};
use crate::prompt::{Prompt, Templates};
use crate::report::Estimate;
use crate::score::TaskResult;
use crate::task::Task;

/// Loads and validates the tasks under `dir` as every command does: the
/// task files (`task::read_task_files`), then the section names their checks
/// use, against each task's input.
pub fn load_tasks(dir: &std::path::Path) -> Result<Vec<Task>, crate::task::TaskError> {
    let tasks = crate::task::read_task_files(dir)?;
    let problems: Vec<crate::task::TaskError> = tasks
        .iter()
        .filter_map(|t| {
            let p = crate::check::section_name_problems(t);
            (!p.is_empty()).then(|| crate::task::TaskError::Invalid {
                path: t.source.clone(),
                message: p.join("; "),
            })
        })
        .collect();
    match problems.len() {
        0 => Ok(tasks),
        1 => Err(problems.into_iter().next().unwrap_or_else(|| unreachable!("one problem"))),
        _ => Err(crate::task::TaskError::Several(problems)),
    }
}

/// How long the end of a run waits for room to store the answers the
/// cache could not take (a full disk).
pub const STORE_WAIT: Duration = Duration::from_secs(30);

/// The answers a run received that are not in its store at the end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unsettled {
    /// Kept nowhere but in memory: lost when the process exits.
    pub held: usize,
    /// Kept only in the journal of a shared store, where the other
    /// processes do not see them (a local store's journal is read by every
    /// process that opens the file, so it is not counted).
    pub journaled: usize,
    /// The journal.
    pub journal: std::path::PathBuf,
    /// The store's (and the journal's) last error.
    pub reason: String,
}

impl Unsettled {
    /// Stores what it can now, then counts what is left.
    fn now(cache: &crate::cache::Cache, shared: bool) -> Unsettled {
        let mut reason = String::new();
        if shared
            && cache.access() == crate::cache::Access::ReadWrite
            && let Err(e) = cache.flush_journal()
        {
            reason = e.message;
        }
        // The journal was just tried (on a shared store): once per pass,
        // each try may wait out the statement timeout.
        let held = if shared { cache.retry_unstored() } else { cache.settle() };
        if let Some(why) = cache.unstored_reason() {
            reason = why;
        }
        let journaled = if shared { cache.journal_lines() } else { 0 };
        Unsettled { held, journaled, journal: cache.journal_path().to_path_buf(), reason }
    }

    /// Whether every answer is stored.
    pub fn is_empty(&self) -> bool {
        self.held == 0 && self.journaled == 0
    }
}

/// Whether judges are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeMode {
    /// Call every judge that has a key (or needs none).
    Live,
    /// Build and store prompts, estimate cost, call no judge.
    DryRun,
}

/// Why no judge is called in a dry run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DryRunCause {
    /// `--dry-run` was asked for.
    Asked,
    /// No judge has a key: a dry run by default, as documented.
    NoKeys,
}

/// Why a scorer cannot be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScorerError {
    /// The cache cannot be opened.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A judge's HTTP client cannot be built.
    #[error(transparent)]
    Judge(#[from] JudgeError),
    /// Fewer judges can be called than the quorum needs: every call would
    /// be paid for and no rubric could get a verdict.
    #[error(
        "only {callable} of {total} judges have an API key, fewer than the quorum of {quorum}: no rubric could get a verdict, so no judge is called. Set {missing}, or lower [vote] quorum in the panel file (or pass --dry-run)"
    )]
    #[allow(missing_docs)]
    QuorumUnreachable { callable: usize, total: usize, quorum: usize, missing: String },
}

/// What a scorer is built from.
#[derive(Clone)]
pub struct ScorerConfig {
    /// The judges and the quorum.
    pub panel: PanelConfig,
    /// The prompt templates.
    pub templates: Templates,
    /// The cache file.
    pub cache_path: PathBuf,
    /// Whether judges are called.
    pub mode: JudgeMode,
    /// How calls not in the cache are sent.
    pub dispatch: Dispatch,
    /// Where outputs are read: in this process, or in bounded children
    /// (what the binary and `serve` use; see [`crate::isolated_reader`]).
    pub reader: Reader,
}

/// The scoring pipeline, built once and shared: every call to it shares
/// the judges' rate limits, the cache and the de-duplication of identical
/// calls. Safe to use from many tasks at once.
pub struct Scorer {
    judges: Vec<Arc<Judge>>,
    quorum: usize,
    templates: Templates,
    cache: Arc<Cache>,
    dry_run: Option<DryRunCause>,
    dispatch: Dispatch,
    voting: VoteMode,
    /// What an escalating panel's thresholds were fitted for.
    guarantee: Option<Guarantee>,
    estimates: Mutex<estimate::Estimates>,
    reader: Reader,
}

impl Scorer {
    /// Builds the judges (keys from the environment) and opens the cache.
    /// A live scorer whose callable judges cannot reach the quorum is
    /// refused before anything is spent; one with no callable judge at all
    /// becomes a dry run.
    pub fn new(config: ScorerConfig) -> Result<Scorer, ScorerError> {
        let cache = Arc::new(Cache::open(&config.cache_path)?);
        let judges: Vec<Arc<Judge>> = config
            .panel
            .judges
            .iter()
            .map(|c| Judge::from_env(c.clone()).map(Arc::new))
            .collect::<Result<_, _>>()?;
        let mut scorer =
            Scorer::with_judges(judges, config.panel.quorum, config.templates, cache, config.mode)?;
        scorer.guarantee = config.panel.guarantee;
        Ok(scorer.dispatching(config.dispatch).voting(config.panel.mode).reading(config.reader))
    }

    /// What a run in vote mode "escalate" promises, for its summary.
    pub(crate) fn escalation_note(&self) -> Option<String> {
        (self.voting == VoteMode::Escalate).then(|| match self.guarantee {
            Some(g) => format!(
                "vote mode \"escalate\": a rubric takes the vote of the first judge whose repeats agree on it at least as much as its threshold; fitted for agreement with gold on at least {} of the rubrics decided, with probability at least {}, on items drawn like the calibration set; a rubric no judge was sure of abstains",
                g.target_agreement,
                1.0 - g.risk
            ),
            None => "vote mode \"escalate\": a rubric takes the vote of the first judge whose repeats agree on it at least as much as its threshold (the panel states no guarantee); a rubric no judge was sure of abstains".into(),
        })
    }

    /// The same scorer, reading outputs with `reader`.
    pub fn reading(mut self, reader: Reader) -> Scorer {
        self.reader = reader;
        self
    }

    /// Where outputs are read.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    /// The same scorer, asking its judges as `mode` says.
    pub fn voting(mut self, mode: VoteMode) -> Scorer {
        self.voting = mode;
        self
    }

    /// How the judges are asked.
    pub fn vote_mode(&self) -> VoteMode {
        self.voting
    }

    /// The same scorer, sending calls not in the cache as `dispatch` says.
    pub fn dispatching(mut self, dispatch: Dispatch) -> Scorer {
        self.dispatch = dispatch;
        self
    }

    /// How calls not in the cache are sent.
    pub fn dispatch(&self) -> Dispatch {
        self.dispatch
    }

    /// A scorer over judges built by the caller (tests, other key sources).
    pub fn with_judges(
        judges: Vec<Arc<Judge>>,
        quorum: usize,
        templates: Templates,
        cache: Arc<Cache>,
        mode: JudgeMode,
    ) -> Result<Scorer, ScorerError> {
        let callable = judges.iter().filter(|j| j.can_call()).count();
        let dry_run = match mode {
            JudgeMode::DryRun => Some(DryRunCause::Asked),
            JudgeMode::Live if callable == 0 => Some(DryRunCause::NoKeys),
            JudgeMode::Live if callable < quorum => {
                let missing: Vec<&str> = judges.iter().filter_map(|j| j.missing_key()).collect();
                return Err(ScorerError::QuorumUnreachable {
                    callable,
                    total: judges.len(),
                    quorum,
                    missing: missing.join(", "),
                });
            }
            JudgeMode::Live => None,
        };
        Ok(Scorer {
            judges,
            quorum,
            templates,
            cache,
            dry_run,
            dispatch: Dispatch::Live,
            voting: VoteMode::All,
            guarantee: None,
            estimates: Mutex::new(estimate::Estimates::default()),
            reader: Reader::InProcess,
        })
    }

    /// Why judges are not called, if they are not.
    pub fn dry_run(&self) -> Option<DryRunCause> {
        self.dry_run
    }

    /// The judges, in panel order.
    pub fn judges(&self) -> &[Arc<Judge>] {
        &self.judges
    }

    /// The quorum of valid votes a rubric needs.
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// The prompt templates.
    pub fn templates(&self) -> &Templates {
        &self.templates
    }

    /// The cache every call goes through.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// Scores one output of `task` as `trial`.
    pub async fn score(&self, task: Arc<Task>, output: OutputSource, trial: &str) -> TaskResult {
        let mut rows = self.score_batch(vec![(task, output, trial.to_string())], &Silent).await;
        rows.pop().unwrap_or_else(|| unreachable!("one row per output"))
    }

    /// Scores many outputs together: the CPU steps spread over the
    /// machine's cores, then every judge call at once under the limits.
    /// Rows come back in the order of `outputs`.
    pub async fn score_batch(
        &self,
        outputs: Vec<(Arc<Task>, OutputSource, String)>,
        progress: &dyn Progress,
    ) -> Vec<TaskResult> {
        let prepared = self.prepare_all(outputs).await;
        self.judge(prepared, progress).await
    }

    /// The CPU steps for many outputs, on blocking threads.
    pub async fn prepare_all(
        &self,
        outputs: Vec<(Arc<Task>, OutputSource, String)>,
    ) -> Vec<Prepared> {
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let chunk = outputs.len().div_ceil(threads).max(1);
        let mut parts: Vec<Vec<(Arc<Task>, OutputSource, String)>> = Vec::new();
        let mut outputs = outputs.into_iter().peekable();
        while outputs.peek().is_some() {
            parts.push(outputs.by_ref().take(chunk).collect());
        }
        let mut handles = Vec::new();
        for part in parts {
            let (templates, cache) = (self.templates.clone(), self.cache.clone());
            let reader = self.reader.clone();
            handles.push(tokio::task::spawn_blocking(move || {
                part.into_iter()
                    .map(|(task, source, trial)| {
                        prepare::prepare(&task, source, &trial, &templates, &cache, &reader)
                    })
                    .collect()
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            // prepare() catches panics itself; a join error cannot lose rows silently.
            let part: Vec<Prepared> =
                h.await.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            out.extend(part);
        }
        out
    }

    /// Judges prepared outputs (or estimates them in a dry run), votes and
    /// settles every row.
    pub async fn judge(&self, items: Vec<Prepared>, progress: &dyn Progress) -> Vec<TaskResult> {
        if self.dry_run.is_some() {
            self.store_prompts(&items).await;
            return self.estimate(items);
        }
        let left = match self.dispatch {
            Dispatch::Live => BatchesLeft::default(),
            Dispatch::Batch(fallback) => {
                let plans = self.submit_batches(&items).await;
                self.wait_batches(plans, progress, fallback).await
            }
        };
        self.judge_skipping(items, progress, &left.skipped).await
    }

    /// Stores every prompt of `items` before any judge is asked about it:
    /// `rejudge` reads them back by hash, and a batch sent again (split,
    /// refused for its tokens) is rebuilt from them.
    async fn store_prompts(&self, items: &[Prepared]) {
        for item in items {
            if let Some(p) = &item.prompt {
                let (cache, p) = (self.cache.clone(), p.clone());
                if let Err(e) = self.cache.blocking(move |_| cache.put_prompt(&p)).await {
                    tracing::warn!("{e}; rejudge will not find this prompt");
                }
            }
        }
    }

    /// A dry run's rows: each prompt's calls added to the estimates, no
    /// judge called, judged rubrics left pending.
    fn estimate(&self, items: Vec<Prepared>) -> Vec<TaskResult> {
        let mut estimates = self.estimates.lock().unwrap_or_else(|p| p.into_inner());
        for item in &items {
            if let Some(p) = &item.prompt {
                estimates.add(&self.judges, p, &self.cache);
            }
        }
        items
            .into_iter()
            .map(|i| {
                let mut row = i.row;
                row.settle_unjudged();
                row
            })
            .collect()
    }

    /// Submits the calls of `items` not in the cache as batches, without
    /// waiting: a run submits all its batches before it waits on any.
    pub async fn submit_batches(&self, items: &[Prepared]) -> Vec<batch::Plan<'_>> {
        // A dry run submits nothing, whoever asks.
        if self.dry_run.is_some() {
            return Vec::new();
        }
        self.store_prompts(items).await;
        // In "decided" mode only the first wave's calls are known before
        // any answer: the later judges' narrowed calls go live.
        let batched = match self.voting {
            VoteMode::All => self.judges.len(),
            VoteMode::Decided => crate::panel::first_wave(self.judges.len(), self.quorum),
            VoteMode::Escalate => 1.min(self.judges.len()),
        };
        judging::submit(items, &self.judges[..batched], &self.cache).await
    }

    /// Waits for submitted batches; per judge (in panel order), the calls
    /// to leave unanswered, as `fallback` says, and those that go live.
    pub async fn wait_batches(
        &self,
        plans: Vec<batch::Plan<'_>>,
        progress: &dyn Progress,
        fallback: BatchFallback,
    ) -> BatchesLeft {
        judging::wait(plans, &self.judges, &self.cache, progress, fallback).await
    }

    /// Judges prepared outputs live (answers the batches stored come from
    /// the cache); calls in `skipped` abstain with their reason.
    pub async fn judge_skipping(
        &self,
        items: Vec<Prepared>,
        progress: &dyn Progress,
        skipped: &[Unanswered],
    ) -> Vec<TaskResult> {
        self.store_prompts(&items).await;
        // A dry run calls no judge, whoever asks: it estimates.
        if self.dry_run.is_some() {
            return self.estimate(items);
        }
        let panel = judging::Panel { judges: &self.judges, quorum: self.quorum, mode: self.voting };
        judging::judge(items, &panel, &self.cache, progress, skipped).await
    }

    /// Judges a stored prompt for an existing row (`rejudge`).
    pub fn reopen(row: TaskResult, prompt: Option<Prompt>) -> Prepared {
        Prepared { row, prompt, view: None }
    }

    /// Stores the answers waiting in the journal or in memory, retrying a
    /// while (a full disk freed, a shared store back): [`STORE_WAIT`] for a
    /// local file, [`crate::cache::shared_store_wait`] for a shared store,
    /// where it also waits for the calls still storing their journaled
    /// answers under their leases. Returns what is still not stored.
    pub async fn settle_store(&self) -> Unsettled {
        let shared = self.cache.shared();
        // A store that cannot be written will not make room.
        let wait = match (self.cache.access(), shared) {
            (crate::cache::Access::ReadOnly, _) => Duration::ZERO,
            (crate::cache::Access::ReadWrite, false) => STORE_WAIT,
            (crate::cache::Access::ReadWrite, true) => crate::cache::shared_store_wait(),
        };
        let deadline = Instant::now() + wait;
        let mut told = false;
        loop {
            let left = self.cache.blocking(move |c| Unsettled::now(c, shared)).await;
            let waiting = shared && self.cache.settling() > 0;
            if (left.is_empty() && !waiting) || Instant::now() >= deadline {
                return left;
            }
            if !told && !left.is_empty() {
                tracing::warn!(
                    "{} judge answers received are not in the store yet ({}); waiting up to {} s for it",
                    left.held + left.journaled,
                    left.reason,
                    wait.as_secs()
                );
                told = true;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// The dry run's estimate per judge so far.
    pub fn estimates(&self) -> BTreeMap<String, Estimate> {
        self.estimates.lock().unwrap_or_else(|p| p.into_inner()).per_judge.clone()
    }
}
