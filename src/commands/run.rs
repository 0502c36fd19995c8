//! `score`, `rejudge` and `calibrate`: planned (everything asked checked,
//! nothing opened or spent), then run on the one `Scorer`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::aggregate::Bootstrap;
use crate::calibrate::{self, CalibrateSettings, Calibration, FlaggedJudges, Probe};
use crate::commands::{CommandError, Found, Judging, built};
use crate::isolated::Reader;
use crate::judge::config::{Guarantee, VoteMode};
use crate::pipeline::run::{RejudgeJob, RunError, RunReport, RunSettings, ScoreJob, Views};
use crate::pipeline::{Dispatch, JudgeMode, Progress, Scorer, ScorerConfig, load_tasks};
use crate::report::Shard;
use crate::task::Task;

/// What a run reads: outputs to score, or an earlier run to judge again.
#[derive(Debug, Clone)]
pub enum RunInputs {
    /// `redjury score`: the task files and the outputs.
    Score {
        /// The tasks folder.
        tasks: PathBuf,
        /// The outputs folder.
        outputs: PathBuf,
    },
    /// `redjury rejudge`: an earlier results folder (its stored prompts).
    Rejudge {
        /// The earlier results folder.
        run: PathBuf,
    },
}

/// How `score` and `rejudge` run, besides their inputs.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// Who judges.
    pub judging: Judging,
    /// The results folder.
    pub out: PathBuf,
    /// Live, or a dry run that calls no judge.
    pub mode: JudgeMode,
    /// Live calls, or the providers' batch APIs.
    pub dispatch: Dispatch,
    /// The group bootstrap.
    pub bootstrap: Bootstrap,
    /// Whether views are written.
    pub views: Views,
    /// The evaluated model's name (seeds the reference's CI).
    pub model: Option<String>,
    /// The part of the outputs this process scores (`score --shard K/N`).
    pub shard: Option<Shard>,
    /// Where outputs are read (the binary: in bounded children).
    pub reader: Reader,
}

enum Job {
    Score(ScoreJob),
    Rejudge(Box<RejudgeJob>),
}

/// A run checked and ready: nothing opened or spent yet.
pub struct PlannedRun {
    job: Job,
    found: Found,
    config: ScorerConfig,
    settings: RunSettings,
}

impl PlannedRun {
    /// Checks everything asked — the tasks, the outputs or the earlier
    /// run, `--out`, the panel, prices and prompts — before the cache is
    /// opened. Every error is a refusal.
    pub fn plan(inputs: &RunInputs, request: RunRequest) -> Result<PlannedRun, CommandError> {
        let (job, tasks) = match inputs {
            RunInputs::Score { tasks, outputs } => (
                Job::Score(
                    ScoreJob::plan(tasks, outputs, &request.out, request.shard).map_err(refused)?,
                ),
                Some(tasks.as_path()),
            ),
            RunInputs::Rejudge { run } => (
                Job::Rejudge(Box::new(RejudgeJob::plan(run, &request.out).map_err(refused)?)),
                None,
            ),
        };
        let found = request.judging.resolve(&request.out, tasks)?;
        let config = ScorerConfig {
            panel: found.panel.clone(),
            templates: request.judging.templates()?,
            cache_path: found.cache.clone(),
            mode: request.mode,
            dispatch: request.dispatch,
            reader: request.reader.clone(),
        };
        let settings = RunSettings {
            out: request.out,
            prices: found.prices.clone(),
            bootstrap: request.bootstrap,
            views: request.views,
            model: request.model,
            shard: request.shard,
        };
        Ok(PlannedRun { job, found, config, settings })
    }

    /// What the run says before it starts: the panel, prices and cache it
    /// uses, and the files of an earlier run's folder it keeps because
    /// redjury did not write them.
    pub fn preamble(&self) -> String {
        let mut text = self.found.describe();
        let kept = match &self.job {
            Job::Score(job) => job.kept(),
            Job::Rejudge(_) => &[],
        };
        if let Some(dir) = kept.first().and_then(|p| p.parent()) {
            let names: Vec<String> = kept
                .iter()
                .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect();
            text.push_str(&format!(
                "keeping in {} what no run wrote there: {}\n",
                dir.display(),
                names.join(", ")
            ));
        }
        text
    }

    /// Opens the cache, builds the judges and runs.
    pub async fn run(self, progress: &dyn Progress) -> Result<RunReport, CommandError> {
        let scorer = built(Scorer::new(self.config))?;
        let report = match self.job {
            Job::Score(job) => job.run(&scorer, &self.settings, progress).await,
            Job::Rejudge(job) => job.run(&scorer, &self.settings, progress).await,
        };
        report.map_err(|e| match e {
            // An earlier run's answers the cache still cannot take, found
            // before anything was sent.
            RunError::PendingAnswers { .. } => refused(e),
            other => CommandError::failed(other),
        })
    }
}

fn refused(e: RunError) -> CommandError {
    CommandError::refused(e)
}

/// What `redjury calibrate` is asked.
#[derive(Debug, Clone)]
pub struct CalibrateRequest {
    /// The tasks folder.
    pub tasks: PathBuf,
    /// The calibration set (`verdicts/<task>.json`, and outputs).
    pub gold: PathBuf,
    /// Folders holding outputs by name.
    pub outputs: Vec<PathBuf>,
    /// Where calibration.json and calibration.md go.
    pub out: PathBuf,
    /// Who judges.
    pub judging: Judging,
    /// Live calls, or the providers' batch APIs.
    pub dispatch: Dispatch,
    /// Where outputs are read (the binary: in bounded children).
    pub reader: Reader,
    /// The probes to run.
    pub probes: Vec<Probe>,
    /// Recommend the cheapest panel within this much κ of the best.
    pub within: f64,
    /// Recommend only panels deciding at least this share of the items.
    pub min_coverage: f64,
    /// Whether a panel with a judge a probe flagged may be recommended.
    pub flagged_judges: FlaggedJudges,
    /// Fit a cascade (vote mode "escalate") for this agreement and risk.
    pub cascade: Option<Guarantee>,
    /// The bootstrap over tasks.
    pub bootstrap: Bootstrap,
}

/// A calibration checked and ready.
pub struct PlannedCalibration {
    found: Found,
    config: ScorerConfig,
    settings: CalibrateSettings,
    set: calibrate::gold::GoldSet,
    out: PathBuf,
}

/// A calibration written, and what to say about it.
pub struct CalibrationDone {
    /// The figures.
    pub calibration: Calibration,
    /// The folder it was written to.
    pub out: PathBuf,
}

impl PlannedCalibration {
    /// Loads the tasks and the calibration set and resolves the panel;
    /// every error is a refusal.
    pub fn plan(request: CalibrateRequest) -> Result<PlannedCalibration, CommandError> {
        let found = request.judging.resolve(&request.out, Some(&request.tasks))?;
        // Every judge votes on every item: calibration simulates the vote
        // modes on those votes, whatever mode the panel file runs in.
        let mut panel = found.panel.clone();
        panel.mode = VoteMode::All;
        let config = ScorerConfig {
            panel,
            templates: request.judging.templates()?,
            cache_path: found.cache.clone(),
            mode: JudgeMode::Live,
            dispatch: request.dispatch,
            reader: request.reader.clone(),
        };
        let settings = CalibrateSettings {
            probes: request.probes,
            within: request.within,
            min_coverage: request.min_coverage,
            flagged_judges: request.flagged_judges,
            cascade: request.cascade,
            prices: found.prices.clone(),
            resamples: request.bootstrap.resamples,
            seed: request.bootstrap.seed,
        };
        let tasks: Vec<Arc<Task>> = load_tasks(&request.tasks)
            .map_err(CommandError::refused)?
            .into_iter()
            .map(Arc::new)
            .collect();
        let set = calibrate::gold::load(&request.gold, &request.outputs, &tasks)
            .map_err(CommandError::refused)?;
        Ok(PlannedCalibration { found, config, settings, set, out: request.out })
    }

    /// The panel, prices and cache it uses.
    pub fn preamble(&self) -> String {
        self.found.describe()
    }

    /// Judges the set, writes calibration.json and .md. Answers received
    /// but not stored (a full disk) fail it: they would be lost.
    pub async fn run(self, progress: &dyn Progress) -> Result<CalibrationDone, CommandError> {
        let scorer = built(Scorer::new(self.config))?;
        let calibrated = calibrate::run(&scorer, &self.set, &self.settings, progress).await;
        let left = scorer.settle_store().await;
        if left.held > 0 {
            return Err(CommandError::failed(format!(
                "{} judge answers received could not be stored in {} or its journal ({}): they are lost when redjury exits",
                left.held,
                scorer.cache().path().display(),
                left.reason
            )));
        }
        if left.journaled > 0 {
            return Err(CommandError::failed(format!(
                "{} judge answers are kept in {}, not in the store ({}): the next run with this cache, from this folder, stores them first",
                left.journaled,
                left.journal.display(),
                left.reason
            )));
        }
        let calibration = calibrated.map_err(CommandError::failed)?;
        write_calibration(&self.out, &calibration, &self.found.panel_text)?;
        Ok(CalibrationDone { calibration, out: self.out })
    }
}

impl CalibrationDone {
    /// What `calibrate` says when it is done: the agreement table and the
    /// recommended panel, or why the judges were skipped.
    pub fn text(&self) -> String {
        let c = &self.calibration;
        if let Some(why) = &c.judges_skipped {
            return format!(
                "judges skipped: {why}; {} of {} check verdicts agree with gold\n",
                c.checks.1, c.checks.0
            );
        }
        let mut text = calibrate::report::agreement_table(c);
        match &c.recommended {
            Some(r) => text.push_str(&format!(
                "recommended panel: {} (quorum {}{})\n",
                r.judges.join(", "),
                r.quorum,
                if r.mode == crate::judge::config::VoteMode::Decided {
                    ", vote mode \"decided\" in this order"
                } else {
                    ""
                }
            )),
            None if !c.flagged_by.is_empty() && c.flagged_judges == FlaggedJudges::Excluded => {
                text.push_str(&format!(
                    "no panel recommended: none without a judge a probe flagged decides {:.0}% of the labelled items (--min-coverage, --allow-flagged)\n",
                    c.min_coverage * 100.0
                ))
            }
            None => text.push_str(&format!(
                "no panel recommended: none decides {:.0}% of the labelled items (--min-coverage)\n",
                c.min_coverage * 100.0
            )),
        }
        if let Some(k) = &c.cascade {
            text.push_str(&match k.trusts_a_judge() {
                true => format!(
                    "cascade: decides {:.1}% of the items, agreement {} on them; its panel: {}\n",
                    k.coverage * 100.0,
                    k.agreement.map_or("—".into(), |a| format!("{:.1}%", a * 100.0)),
                    self.out.join(calibrate::cascade::PANEL_FILE).display()
                ),
                false => {
                    let stale = self.out.join(calibrate::cascade::PANEL_FILE);
                    let earlier = if stale.exists() {
                        format!(" ({} is from an earlier calibration)", stale.display())
                    } else {
                        String::new()
                    };
                    format!(
                        "cascade: no judge meets --target-agreement on this set; no panel written{earlier}\n"
                    )
                }
            });
        }
        text.push_str(&format!("calibration in {}\n", self.out.display()));
        text
    }

    /// Warnings for the error stream: labelled outputs that failed the
    /// gate and are left out of every figure.
    pub fn warnings(&self) -> &[String] {
        &self.calibration.gate_failed
    }
}

/// calibration.json and .md, and a fitted cascade's panel file.
fn write_calibration(out: &Path, c: &Calibration, panel: &str) -> Result<(), CommandError> {
    let failed = |e| CommandError::failed(e).context(format!("cannot write {}", out.display()));
    calibrate::report::write(out, c).map_err(failed)?;
    if let Some(text) = c.cascade.as_ref().and_then(|k| calibrate::cascade::panel_file(panel, k)) {
        let path = out.join(calibrate::cascade::PANEL_FILE);
        crate::report::write_atomic(&path, text.as_bytes()).map_err(failed)?;
    }
    Ok(())
}
