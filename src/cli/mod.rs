//! Command-line arguments and the thin glue that calls the library.
//!
//! Owns: argument parsing, where defaults come from, exit codes and where
//! output goes. Must never hold logic a library user would need:
//! everything here calls into `redjury`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use redjury::{
    BatchCancel, CalibrateRequest, HtmlReport, Judging, PlannedCalibration, PlannedRun,
    PlannedService, ReportOutput, ReportRequest, RunInputs, RunRequest, ServeRequest,
};
use redjury::{
    BatchFallback, Bootstrap, Dispatch, FlaggedJudges, Guarantee, JudgeMode, OnIncomplete, Probe,
    RunEnd, ViewKind, Views,
};

mod progress;

#[derive(Parser)]
#[command(name = "redjury", version, about = "Score contract redlines with a panel of LLM judges")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Render a .docx as the judges' annotated view, the reference's view, accepted/rejected text, or JSON.
    Render {
        /// The .docx file (or an .xlsx or PDF output, as the judges see it).
        docx: PathBuf,
        /// Which view to write.
        #[arg(long, value_enum, default_value_t = View::Annotated)]
        view: View,
        /// Write to this file instead of standard output.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Score model outputs: gate → render → judge → vote → reward → results folder.
    /// Exit 0 when every task is scored (or on a dry run), 3 when some are incomplete.
    Score {
        /// Task files: a folder of <task>.json files or Harbor task folders.
        #[arg(long)]
        tasks: PathBuf,
        /// Model outputs: <task>.docx, <task>/contract.docx, <task>/<trial>/contract.docx or Harbor job folders.
        #[arg(long)]
        outputs: PathBuf,
        /// Score part K (from 0) of N of the outputs, balanced by judge calls; `redjury merge` joins the parts' folders.
        #[arg(long, value_name = "K/N")]
        shard: Option<redjury::Shard>,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Judge again from the prompts an earlier run stored (no .docx needed).
    Rejudge {
        /// The earlier run's results folder.
        #[arg(long)]
        run: PathBuf,
        #[command(flatten)]
        common: RunArgs,
    },
    /// Join the results folders of `score --shard K/N` parts into the folder one process scoring everything writes.
    Merge {
        /// The parts' results folders, one per shard.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// Where the joined results folder goes.
        #[arg(long)]
        out: PathBuf,
        /// Price table for the judges' cost (USD per million tokens). Default: ./prices.toml, else the built-in one.
        #[arg(long)]
        prices: Option<PathBuf>,
    },
    /// Print a run's summary tables and judge agreement; with --compare, a paired comparison.
    Report {
        /// A results folder.
        run: PathBuf,
        /// Another results folder to compare against.
        #[arg(long)]
        compare: Option<PathBuf>,
        /// Bootstrap seed of the paired CI (with --compare).
        #[arg(long, requires = "compare")]
        seed: Option<u64>,
        /// Bootstrap resamples of the paired CI (with --compare; at least 100).
        #[arg(long, requires = "compare", value_parser = clap::value_parser!(u64).range(100..))]
        resamples: Option<u64>,
        /// A `redjury calibrate` folder: show how far this run's judges and panel agree with gold.
        #[arg(long)]
        calibration: Option<PathBuf>,
        /// Write one self-contained HTML report (default: report.html in the run folder).
        #[arg(long, num_args = 0..=1, value_name = "FILE")]
        html: Option<Option<PathBuf>>,
        /// Compressed views embedded in the HTML, at most (MiB); the rows that matter most first.
        #[arg(long, default_value_t = 64, requires = "html")]
        html_views_mb: usize,
    },
    /// Measure each judge and the panel against gold labels (accuracy, κ, macro-F1 with CIs), choose a panel, probe biases.
    Calibrate(CalibrateArgs),
    /// List the provider batches recorded in a cache (from `score --batch`), or cancel them.
    Batches {
        /// The cache the runs used.
        #[arg(long)]
        cache: PathBuf,
        /// The panel the runs used (for the keys and endpoints cancelling needs). Default: as for `score`.
        #[arg(long)]
        panel: Option<PathBuf>,
        /// Cancel this batch (repeatable); what it answered before is collected by the next run.
        #[arg(long)]
        cancel: Vec<String>,
        /// Cancel every batch not yet collected.
        #[arg(long, conflicts_with = "cancel")]
        cancel_all: bool,
    },
    /// Work on a cache: copy it into another (SQLite ↔ PostgreSQL).
    Cache {
        #[command(subcommand)]
        action: CacheAction,
    },
    /// Serve rewards over HTTP for RL trainers (POST /v1/score, /v1/score/batch, /openrlhf; see docs/serve.md).
    Serve(ServeArgs),
    /// Check that a .docx loads and has a tracked change or comment by AUTHOR (exit 0 pass, 1 fail).
    Gate {
        /// The .docx file.
        docx: PathBuf,
        /// The tracked-change author the file must contain (matching: see README).
        #[arg(long)]
        author: String,
        /// The task's input document: count only what the output adds to it (as `score` does for turn 2+); for an .xlsx output, the template it is filled in from; for a PDF, the PDF it was made from.
        #[arg(long)]
        input: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum CacheAction {
    /// Copy every row of one cache into another (a SQLite file or a postgres:// URL each); run again to resume.
    Copy {
        /// The cache to copy from.
        from: PathBuf,
        /// The cache to copy into (created when missing).
        to: PathBuf,
    },
}

#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// Task files, as for `score`.
    #[arg(long)]
    tasks: PathBuf,
    /// The calibration set: a folder with verdicts/<task>.json (and the outputs; see README).
    #[arg(long)]
    gold: PathBuf,
    /// A folder holding outputs by name: <DIR>/<output>/<task>.docx (repeatable).
    #[arg(long)]
    outputs: Vec<PathBuf>,
    /// Where calibration.json and calibration.md go.
    #[arg(long)]
    out: PathBuf,
    #[command(flatten)]
    judging: JudgingArgs,
    /// Send calls not in the cache through the providers' batch APIs.
    #[arg(long)]
    batch: bool,
    /// A probe to run (repeatable): order, repeat[=N], null, gold, injection, view.
    #[arg(long = "probe")]
    probes: Vec<Probe>,
    /// Recommend the cheapest panel within this much κ of the best.
    #[arg(long, default_value_t = 0.02)]
    within: f64,
    /// Recommend only panels that decide at least this share of the labelled items (0 to 1).
    #[arg(long, default_value_t = 0.95, value_parser = share)]
    min_coverage: f64,
    /// Let the recommendation name a judge a probe flagged (by default such panels are ranked, never recommended).
    #[arg(long)]
    allow_flagged: bool,
    /// Fit a cascade (vote mode "escalate") whose verdicts agree with gold on at least this share of the rubrics it decides (with --risk); writes escalate-panel.toml.
    #[arg(long, requires = "risk", value_parser = above_half)]
    target_agreement: Option<f64>,
    /// The chance the cascade misses --target-agreement on fresh items (over the draw of the calibration set).
    #[arg(long, requires = "target_agreement", value_parser = chance)]
    risk: Option<f64>,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Bootstrap resamples (over tasks).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(100..))]
    resamples: u64,
    /// Print nothing but errors.
    #[arg(long)]
    quiet: bool,
}

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    judging: JudgingArgs,
    /// Where the results folder goes; an earlier results folder there is replaced whole when the run ends (files redjury did not write in it are kept).
    #[arg(long)]
    out: PathBuf,
    /// Build and store every prompt and estimate cost; call no judge.
    #[arg(long)]
    dry_run: bool,
    /// Bootstrap seed for the 95% CI over input groups.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Bootstrap resamples (at least 100).
    #[arg(long, default_value_t = Bootstrap::default().resamples as u64, value_parser = clap::value_parser!(u64).range(100..))]
    resamples: u64,
    /// The evaluated model's name (seeds the reference-method CI).
    #[arg(long)]
    model: Option<String>,
    /// Print nothing but errors; no progress bar.
    #[arg(long)]
    quiet: bool,
    /// Skip writing views/ (large runs feeding a trainer: 10,000 views are ~300 MB).
    #[arg(long)]
    no_views: bool,
    /// Send calls not in the cache through each provider's batch API (half price; results within 24 h; rerun to resume).
    #[arg(long)]
    batch: bool,
    /// What becomes of calls a batch did not answer (errored, expired): sent live, or left to make the row incomplete.
    #[arg(long, value_enum, default_value_t = Fallback::Live, requires = "batch")]
    batch_fallback: Fallback,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Fallback {
    Live,
    Incomplete,
}

/// Who judges and how: shared by `score`, `rejudge` and `serve`.
#[derive(clap::Args)]
pub struct JudgingArgs {
    /// The judge panel (TOML). Default: ./panel.toml, else panel.toml beside the tasks folder (for the commands that take --tasks), else the built-in panel.
    #[arg(long)]
    panel: Option<PathBuf>,
    /// The prompt and response cache (SQLite). Default: cache.sqlite in the folder that holds --out (or the current directory).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// A folder with system.md and user.md to use instead of the built-in prompts/.
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// Price table (USD per million tokens). Default: as for --panel.
    #[arg(long)]
    prices: Option<PathBuf>,
}

impl JudgingArgs {
    fn judging(&self) -> Judging {
        Judging {
            panel: self.panel.clone(),
            cache: self.cache.clone(),
            prompts: self.prompts.clone(),
            prices: self.prices.clone(),
        }
    }
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Task files: a folder of <task>.json files or Harbor task folders.
    #[arg(long)]
    tasks: PathBuf,
    #[command(flatten)]
    judging: JudgingArgs,
    /// Address to listen on; anything but loopback needs a token (--token-env).
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: std::net::SocketAddr,
    /// Append every answered row to this results folder (`redjury report` reads it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A folder requests may name .docx files in (repeatable); without it, documents must be sent as base64.
    #[arg(long = "allow-path")]
    allow_path: Vec<PathBuf>,
    /// Environment variable holding the bearer token clients must send.
    #[arg(long, default_value = "REDJURY_TOKEN")]
    token_env: String,
    /// Outputs accepted and not yet answered, at most; more get 429 with Retry-After.
    #[arg(long, default_value_t = 256)]
    queue: usize,
    /// Seconds a request waits for its rows before 503 with Retry-After (the work goes on).
    #[arg(long, default_value_t = 170)]
    deadline: u64,
    /// Largest request body in MiB.
    #[arg(long, default_value_t = 64)]
    max_body_mb: usize,
    /// Reward for a row the judges could not complete: error (503, default), null, or a number.
    #[arg(long, default_value = "error")]
    on_incomplete: OnIncomplete,
    /// Seconds shutdown (SIGTERM, Ctrl-C) waits for accepted work.
    #[arg(long, default_value_t = 60)]
    grace: u64,
    /// With --out: seal results.jsonl as results.N.jsonl when it passes this many MiB (each output is logged once; repeats are counted).
    #[arg(long, default_value_t = 256, requires = "out", value_parser = clap::value_parser!(u64).range(1..))]
    log_segment_mb: u64,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum View {
    Annotated,
    /// RedlineBench's view: change markup and comments, no authors or labels.
    Reference,
    Accepted,
    Rejected,
    Json,
}

impl From<View> for ViewKind {
    fn from(v: View) -> Self {
        match v {
            View::Annotated => ViewKind::Annotated,
            View::Reference => ViewKind::Reference,
            View::Accepted => ViewKind::Accepted,
            View::Rejected => ViewKind::Rejected,
            View::Json => ViewKind::Json,
        }
    }
}

/// Runs one command: arguments into the library's requests, its text to
/// stdout (stderr for warnings), its ending into an exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Score { tasks, outputs, shard, common } => {
            scoring(&RunInputs::Score { tasks, outputs }, shard, common)
        }
        Command::Rejudge { run, common } => scoring(&RunInputs::Rejudge { run }, None, common),
        Command::Merge { shards, out, prices } => {
            let merged = redjury::merge(&redjury::MergeRequest { shards, out, prices })?;
            say(&redjury::outcome(&merged.summary, &merged.out_dir));
            Ok(ExitCode::SUCCESS)
        }
        Command::Report { run, compare, seed, resamples, calibration, html, html_views_mb } => {
            let request = ReportRequest {
                run,
                compare,
                bootstrap: Bootstrap {
                    seed: seed.unwrap_or(0),
                    resamples: resamples.map_or(Bootstrap::default().resamples, |r| r as usize),
                },
                calibration,
                html: html.map(|file| HtmlReport {
                    file,
                    views_budget: html_views_mb.saturating_mul(1 << 20),
                }),
            };
            match redjury::report(&request)? {
                ReportOutput::Text(text) => say(&text),
                ReportOutput::Html(file) => say(&format!("report in {}\n", file.display())),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => serve(args),
        Command::Calibrate(args) => calibrate(args),
        Command::Batches { cache, panel, cancel, cancel_all } => {
            let which = if cancel_all { BatchCancel::All } else { BatchCancel::Ids(cancel) };
            batches(&cache, panel.as_deref(), which)
        }
        Command::Cache { action: CacheAction::Copy { from, to } } => {
            let report = redjury::copy_cache(&from, &to)?;
            say(&report.text());
            Ok(ExitCode::SUCCESS)
        }
        Command::Render { docx, view, output } => {
            let (text, warnings) =
                redjury::render_file(&docx, view.into(), &redjury::isolated_reader()?)?;
            for w in warnings {
                eprintln!("warning: {w}");
            }
            match output {
                Some(path) => std::fs::write(&path, text)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                None => say(&text),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Gate { docx, author, input } => {
            let reader = redjury::isolated_reader()?;
            let result = redjury::gate_file(&docx, &author, input.as_deref(), &reader)?;
            let verdict = if result.passed { "PASS" } else { "FAIL" };
            say(&format!("{verdict} {}: {}\n", docx.display(), result.reason));
            Ok(if result.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
        }
    }
}

fn calibrate(a: CalibrateArgs) -> anyhow::Result<ExitCode> {
    let planned = PlannedCalibration::plan(CalibrateRequest {
        tasks: a.tasks,
        gold: a.gold,
        outputs: a.outputs,
        out: a.out,
        judging: a.judging.judging(),
        dispatch: if a.batch { Dispatch::Batch(BatchFallback::Live) } else { Dispatch::Live },
        probes: a.probes,
        within: a.within,
        min_coverage: a.min_coverage,
        flagged_judges: if a.allow_flagged {
            FlaggedJudges::Allowed
        } else {
            FlaggedJudges::Excluded
        },
        cascade: a
            .target_agreement
            .zip(a.risk)
            .map(|(target_agreement, risk)| Guarantee { target_agreement, risk }),
        bootstrap: Bootstrap { seed: a.seed, resamples: a.resamples as usize },
        reader: redjury::isolated_reader()?,
    })?;
    if !a.quiet {
        say(&planned.preamble());
    }
    let done = runtime()?.block_on(async {
        let bar = progress::Bar::new(!a.quiet);
        let done = planned.run(&bar).await;
        bar.finish();
        done
    })?;
    for failed in done.warnings() {
        eprintln!("warning: {failed}");
    }
    if !a.quiet {
        say(&done.text());
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists the batches a cache records, or cancels some (exit 1 when a
/// cancel was refused).
fn batches(cache: &Path, panel: Option<&Path>, which: BatchCancel) -> anyhow::Result<ExitCode> {
    if which == BatchCancel::Ids(Vec::new()) {
        say(&redjury::batch_table(cache)?);
        return Ok(ExitCode::SUCCESS);
    }
    let outcomes = runtime()?.block_on(redjury::cancel_batches(cache, panel, which))?;
    if outcomes.is_empty() {
        say(&redjury::batch_table(cache)?);
    }
    let mut code = ExitCode::SUCCESS;
    for (id, outcome) in outcomes {
        match outcome {
            Ok(()) => {
                say(&format!("cancel requested: {id} (the next run collects what it answered)\n"))
            }
            Err(e) => {
                eprintln!("error: {e}");
                code = ExitCode::from(1);
            }
        }
    }
    Ok(code)
}

/// `score` and `rejudge`.
fn scoring(
    inputs: &RunInputs,
    shard: Option<redjury::Shard>,
    a: RunArgs,
) -> anyhow::Result<ExitCode> {
    let quiet = a.quiet;
    let planned = PlannedRun::plan(
        inputs,
        RunRequest {
            judging: a.judging.judging(),
            out: a.out,
            mode: if a.dry_run { JudgeMode::DryRun } else { JudgeMode::Live },
            dispatch: match (a.batch, a.batch_fallback) {
                (false, _) => Dispatch::Live,
                (true, Fallback::Live) => Dispatch::Batch(BatchFallback::Live),
                (true, Fallback::Incomplete) => Dispatch::Batch(BatchFallback::Incomplete),
            },
            bootstrap: Bootstrap { seed: a.seed, resamples: a.resamples as usize },
            views: if a.no_views { Views::Skip } else { Views::Write },
            model: a.model,
            shard,
            reader: redjury::isolated_reader()?,
        },
    )?;
    if !quiet {
        say(&planned.preamble());
    }
    let report = runtime()?.block_on(async {
        let bar = progress::Bar::new(!quiet);
        let report = planned.run(&bar).await;
        bar.finish();
        report
    })?;
    if !quiet {
        say(&redjury::outcome(&report.summary, &report.out_dir));
    }
    Ok(match report.end {
        RunEnd::Complete | RunEnd::DryRun => ExitCode::SUCCESS,
        RunEnd::Incomplete => ExitCode::from(3),
    })
}

fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let planned = PlannedService::plan(ServeRequest {
        tasks: a.tasks,
        judging: a.judging.judging(),
        bind: a.bind,
        out: a.out,
        allow_paths: a.allow_path,
        token_env: a.token_env,
        queue: a.queue,
        deadline: Duration::from_secs(a.deadline),
        max_body: a.max_body_mb.saturating_mul(1 << 20),
        on_incomplete: a.on_incomplete,
        grace: Duration::from_secs(a.grace),
        log_segment_bytes: a.log_segment_mb.saturating_mul(1 << 20),
        reader: redjury::isolated_reader()?,
    })?;
    say(&planned.preamble());
    runtime()?.block_on(async move {
        let bound = planned.bind().await?;
        say(&format!("listening on http://{}\n", bound.local_addr()?));
        let end = bound.run(shutdown_signal()).await?;
        if end.unstored > 0 {
            eprintln!(
                "error: {} judge answers received could not be stored in the cache or its journal: they are lost when this process exits",
                end.unstored
            );
            return Ok(ExitCode::from(1));
        }
        if end.journaled > 0 {
            eprintln!(
                "error: {} judge answers are kept in {}, not in the store (it stayed unreachable): the next process on this store, from this folder, stores them first",
                end.journaled,
                end.journal.display()
            );
            return Ok(ExitCode::from(1));
        }
        if end.unfinished > 0 {
            eprintln!(
                "stopped with {} outputs unfinished after the grace period; their answers so far are in the cache",
                end.unfinished
            );
            return Ok(ExitCode::from(1));
        }
        say("stopped\n");
        anyhow::Ok(ExitCode::SUCCESS)
    })
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// A share, 0 to 1 (`--min-coverage`).
/// A target agreement: above a coin's 0.5, below certainty.
fn above_half(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.5 && v < 1.0 => Ok(v),
        _ => Err(format!("{s:?} is not a share above 0.5 and below 1")),
    }
}

/// A risk: above 0 (a bound that holds surely needs every item), below 1.
fn chance(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!("{s:?} is not a probability above 0 and below 1")),
    }
}

fn share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a share between 0 and 1")),
    }
}

/// Writes to stdout and flushes (a line a supervisor waits for must not
/// sit in a buffer). A closed pipe (`| head`) is not an error worth
/// reporting.
fn say(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
