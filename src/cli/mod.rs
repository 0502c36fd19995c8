//! Command-line arguments and the thin glue that calls the library.
//!
//! Owns: argument parsing, where defaults come from, exit codes and where
//! output goes. Must never hold logic a library user would need:
//! everything here calls into `redjury`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use redjury::aggregate::Bootstrap;
use redjury::pipeline::run::{
    RejudgeJob, RunEnd, RunError, RunReport, RunSettings, ScoreJob, Views,
};
use redjury::pipeline::{BatchFallback, Dispatch, JudgeMode, Scorer, ScorerConfig};
use redjury::view::{self, ViewKind};

mod defaults;
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
        /// The .docx file (or an .xlsx output: its sheets as the judges see them).
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
    Calibrate {
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
        probes: Vec<redjury::calibrate::Probe>,
        /// Recommend the cheapest panel within this much κ of the best.
        #[arg(long, default_value_t = 0.02)]
        within: f64,
        /// Bootstrap seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Bootstrap resamples (over tasks).
        #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(100..))]
        resamples: u64,
        /// Print nothing but errors.
        #[arg(long)]
        quiet: bool,
    },
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
    /// Serve rewards over HTTP for RL trainers (POST /v1/score, /v1/score/batch, /openrlhf; see docs/serve.md).
    Serve(ServeArgs),
    /// Check that a .docx loads and has a tracked change or comment by AUTHOR (exit 0 pass, 1 fail).
    Gate {
        /// The .docx file.
        docx: PathBuf,
        /// The tracked-change author the file must contain (matching: see README).
        #[arg(long)]
        author: String,
        /// The task's input document: count only what the output adds to it (as `score` does for turn 2+); for an .xlsx output, the template it is filled in from.
        #[arg(long)]
        input: Option<PathBuf>,
    },
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
    #[arg(long, default_value_t = 5000, value_parser = clap::value_parser!(u64).range(100..))]
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
    fn templates(&self) -> anyhow::Result<redjury::prompt::Templates> {
        Ok(match &self.prompts {
            Some(dir) => redjury::prompt::Templates::from_dir(dir)?,
            None => redjury::prompt::Templates::builtin(),
        })
    }

    fn resolve(&self, out: &Path, tasks: Option<&Path>) -> anyhow::Result<defaults::Found> {
        defaults::resolve(
            self.panel.as_deref(),
            self.prices.as_deref(),
            self.cache.as_deref(),
            out,
            tasks,
        )
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
    on_incomplete: redjury::serve::OnIncomplete,
    /// Seconds shutdown (SIGTERM, Ctrl-C) waits for accepted work.
    #[arg(long, default_value_t = 60)]
    grace: u64,
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

/// An error with the exit code it maps to (2 = the run was refused for
/// how it was set up).
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Score { tasks, outputs, common } => {
            // Everything asked is checked before the cache is opened.
            let job = ScoreJob::plan(&tasks, &outputs, &common.out).map_err(refused)?;
            let setup = setup(&common, Some(&tasks))?;
            tell_kept(job.kept(), common.quiet);
            let report = runtime()?.block_on(async {
                let scorer = setup.scorer()?;
                let bar = progress::Bar::new(!common.quiet);
                let r = job.run(&scorer, &setup.settings, &bar).await;
                bar.finish();
                anyhow::Ok(r.map_err(failed)?)
            })?;
            Ok(finish(&report, common.quiet))
        }
        Command::Rejudge { run, common } => {
            let job = RejudgeJob::plan(&run, &common.out).map_err(refused)?;
            let setup = setup(&common, None)?;
            let report = runtime()?.block_on(async {
                let scorer = setup.scorer()?;
                let bar = progress::Bar::new(!common.quiet);
                let r = job.run(&scorer, &setup.settings, &bar).await;
                bar.finish();
                anyhow::Ok(r.map_err(failed)?)
            })?;
            Ok(finish(&report, common.quiet))
        }
        Command::Report { run, compare, seed, resamples, calibration, html, html_views_mb } => {
            report(
                &run,
                compare.as_deref(),
                seed,
                resamples,
                calibration.as_deref(),
                html,
                html_views_mb,
            )
        }
        Command::Serve(args) => serve(args),
        Command::Calibrate {
            tasks,
            gold,
            outputs,
            out,
            judging,
            batch,
            probes,
            within,
            seed,
            resamples,
            quiet,
        } => {
            let found = judging.resolve(&out, Some(&tasks))?;
            if !quiet {
                print_defaults(&found);
            }
            let config = ScorerConfig {
                panel: found.panel,
                templates: judging.templates()?,
                cache_path: found.cache,
                mode: JudgeMode::Live,
                dispatch: if batch { Dispatch::Batch(BatchFallback::Live) } else { Dispatch::Live },
            };
            let settings = redjury::calibrate::CalibrateSettings {
                probes,
                within,
                prices: found.prices,
                resamples: resamples as usize,
                seed,
            };
            let tasks: Vec<std::sync::Arc<redjury::Task>> = redjury::pipeline::load_tasks(&tasks)
                .map_err(|e| Refused(e.to_string()))?
                .into_iter()
                .map(std::sync::Arc::new)
                .collect();
            let set = redjury::calibrate::gold::load(&gold, &outputs, &tasks)
                .map_err(|e| Refused(e.to_string()))?;
            let c = runtime()?.block_on(async {
                let scorer = Setup::refuse_quorum(Scorer::new(config))?;
                let bar = progress::Bar::new(!quiet);
                let c = redjury::calibrate::run(&scorer, &set, &settings, &bar).await;
                bar.finish();
                let held = scorer.settle_store(redjury::pipeline::STORE_WAIT).await;
                if held > 0 {
                    anyhow::bail!(
                        "{held} judge answers received could not be stored in {} or its journal ({}): they are lost when redjury exits",
                        scorer.cache().path().display(),
                        scorer.cache().unstored_reason().unwrap_or_default()
                    );
                }
                anyhow::Ok(c?)
            })?;
            redjury::calibrate::report::write(&out, &c)
                .with_context(|| format!("cannot write {}", out.display()))?;
            for failed in &c.gate_failed {
                eprintln!("warning: {failed}");
            }
            if let (Some(why), false) = (&c.judges_skipped, quiet) {
                println!(
                    "judges skipped: {why}; {} of {} check verdicts agree with gold",
                    c.checks.1, c.checks.0
                );
            } else if !quiet {
                print!("{}", redjury::calibrate::report::agreement_table(&c));
                if let Some(r) = &c.recommended {
                    println!("recommended panel: {} (quorum {})", r.judges.join(", "), r.quorum);
                }
                println!("calibration in {}", out.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Batches { cache, panel, cancel, cancel_all } => {
            batches(&cache, panel.as_deref(), cancel, cancel_all)
        }
        Command::Render { docx, view, output } => render(&docx, view, output.as_deref()),
        Command::Gate { docx, author, input } => gate(&docx, &author, input.as_deref()),
    }
}

/// Which panel, prices and cache a command uses: every command that judges
/// says so first.
fn print_defaults(found: &defaults::Found) {
    println!("panel: {}", found.panel_from);
    println!("prices: {}", found.prices_from);
    println!("cache: {}", found.cache.display());
}

/// A problem found before any work (the tasks, the outputs, `--out`):
/// the run is refused (exit 2).
fn refused(e: RunError) -> anyhow::Error {
    anyhow::Error::new(Refused(e.to_string()))
}

/// A problem met while the run worked: exit 1, except an earlier run's
/// answers the cache still cannot take, found before anything was sent.
fn failed(e: RunError) -> anyhow::Error {
    match e {
        RunError::PendingAnswers { .. } => refused(e),
        other => anyhow::Error::new(other),
    }
}

/// Says which files of an earlier run's folder redjury did not write and
/// keeps.
fn tell_kept(kept: &[PathBuf], quiet: bool) {
    if !quiet && !kept.is_empty() {
        let names: Vec<String> = kept
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        println!(
            "keeping in {} what no run wrote there: {}",
            kept.first()
                .and_then(|p| p.parent())
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            names.join(", ")
        );
    }
}

/// What `score` and `rejudge` are built from.
struct Setup {
    config: ScorerConfig,
    settings: RunSettings,
}

impl Setup {
    fn scorer(&self) -> anyhow::Result<Scorer> {
        Setup::refuse_quorum(Scorer::new(self.config.clone()))
    }

    /// A quorum that cannot be met, or a cache that cannot be used (a
    /// newer redjury's, not a cache at all), is a refusal before any work
    /// (exit 2), not a failure.
    fn refuse_quorum(
        built: Result<Scorer, redjury::pipeline::ScorerError>,
    ) -> anyhow::Result<Scorer> {
        built.map_err(|e| match e {
            redjury::pipeline::ScorerError::QuorumUnreachable { .. }
            | redjury::pipeline::ScorerError::Cache(_) => {
                anyhow::Error::new(Refused(e.to_string()))
            }
            other => anyhow::Error::new(other),
        })
    }
}

fn setup(a: &RunArgs, tasks: Option<&Path>) -> anyhow::Result<Setup> {
    let found = a.judging.resolve(&a.out, tasks)?;
    if !a.quiet {
        print_defaults(&found);
    }
    let templates = a.judging.templates()?;
    let mode = if a.dry_run { JudgeMode::DryRun } else { JudgeMode::Live };
    let settings = RunSettings {
        out: a.out.clone(),
        prices: found.prices,
        bootstrap: Bootstrap { seed: a.seed, resamples: a.resamples as usize },
        views: if a.no_views { Views::Skip } else { Views::Write },
        model: a.model.clone(),
    };
    Ok(Setup {
        config: ScorerConfig {
            panel: found.panel,
            templates,
            cache_path: found.cache,
            mode,
            dispatch: match (a.batch, a.batch_fallback) {
                (false, _) => Dispatch::Live,
                (true, Fallback::Live) => Dispatch::Batch(BatchFallback::Live),
                (true, Fallback::Incomplete) => Dispatch::Batch(BatchFallback::Incomplete),
            },
        },
        settings,
    })
}

fn report(
    run: &Path,
    compare: Option<&Path>,
    seed: Option<u64>,
    resamples: Option<u64>,
    calibration: Option<&Path>,
    html: Option<Option<PathBuf>>,
    html_views_mb: usize,
) -> anyhow::Result<ExitCode> {
    let (rows, summary) = redjury::report::load_run(run)?;
    let boot = Bootstrap { seed: seed.unwrap_or(0), resamples: resamples.unwrap_or(5000) as usize };
    let comparison = match compare {
        Some(other) => {
            let (other_rows, _) = redjury::report::load_run(other)?;
            Some(redjury::aggregate::compare::compare(&rows, &other_rows, boot))
        }
        None => None,
    };
    let agreement = redjury::aggregate::agreement::agreement(&rows);
    let calibration = match calibration {
        Some(dir) => Some(redjury::calibrate::report::load(dir)?),
        None => None,
    };
    let mut text = redjury::report::markdown::summary(&summary);
    if let Some(c) = &comparison {
        text.push('\n');
        text.push_str(&redjury::report::markdown::comparison(c));
    }
    text.push_str(&redjury::report::markdown::agreement(&agreement));
    if let Some(c) = &calibration {
        text.push_str(&redjury::calibrate::report::for_run(c, &summary));
    }
    let Some(html) = html else {
        let _ = std::io::stdout().lock().write_all(text.as_bytes());
        return Ok(ExitCode::SUCCESS);
    };
    let file = html.unwrap_or_else(|| run.join("report.html"));
    let trust = calibration.as_ref().map(redjury::calibrate::report::trust);
    let views_dir = run.join("views");
    let page = redjury::report::html::Page {
        dir: run,
        summary: &summary,
        rows: &rows,
        agreement: &agreement,
        trust: trust.as_deref(),
        against: comparison
            .as_ref()
            .zip(compare)
            .map(|(c, dir)| redjury::report::html::Against { dir, comparison: c }),
        views: redjury::report::html::Views {
            dir: views_dir.is_dir().then_some(views_dir.as_path()),
            budget: html_views_mb.saturating_mul(1 << 20),
        },
    };
    std::fs::write(&file, redjury::report::html::render(&page))
        .with_context(|| format!("cannot write {}", file.display()))?;
    println!("report in {}", file.display());
    Ok(ExitCode::SUCCESS)
}

fn batches(
    cache_path: &Path,
    panel: Option<&Path>,
    mut cancel: Vec<String>,
    cancel_all: bool,
) -> anyhow::Result<ExitCode> {
    if !cache_path.is_file() {
        anyhow::bail!("no cache at {}", cache_path.display());
    }
    let cache = redjury::cache::Cache::open(cache_path)?;
    let recorded = cache.batches()?;
    if cancel_all {
        cancel = recorded
            .iter()
            .filter(|b| b.state == redjury::cache::BatchState::Submitted)
            .map(|b| b.id.clone())
            .collect();
    }
    if cancel.is_empty() {
        print!("{}", batch_table(&recorded));
        return Ok(ExitCode::SUCCESS);
    }
    let found = defaults::resolve(panel, None, Some(cache_path), Path::new("out"), None)?;
    let judges: Vec<std::sync::Arc<redjury::judge::Judge>> = found
        .panel
        .judges
        .iter()
        .map(|c| redjury::judge::Judge::from_env(c.clone()).map(std::sync::Arc::new))
        .collect::<Result<_, _>>()?;
    let mut failed = false;
    runtime()?.block_on(async {
        for id in &cancel {
            match redjury::judge::batch::cancel(&cache, &judges, id).await {
                Ok(()) => {
                    println!("cancel requested: {id} (the next run collects what it answered)")
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    failed = true;
                }
            }
        }
    });
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// The recorded batches as a table.
fn batch_table(recorded: &[redjury::cache::BatchRecord]) -> String {
    if recorded.is_empty() {
        return "no batches recorded in this cache\n".into();
    }
    let mut out = String::from("id\tjudge\tprovider\tstate\tcalls\tsubmitted (UTC)\tnote\n");
    for b in recorded {
        let state = match b.state {
            redjury::cache::BatchState::Intent => "submitting",
            redjury::cache::BatchState::Submitted => "submitted",
            redjury::cache::BatchState::Collected => "collected",
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{state}\t{}\t{}\t{}\n",
            b.id,
            b.judge,
            b.provider,
            b.items,
            redjury::report::utc(b.created_at),
            b.note.as_deref().unwrap_or("")
        ));
    }
    out
}

fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let out_for_cache = a.out.clone().unwrap_or_else(|| PathBuf::from("served"));
    let found = a.judging.resolve(&out_for_cache, Some(&a.tasks))?;
    print_defaults(&found);
    let token = std::env::var(&a.token_env).ok().filter(|t| !t.is_empty());
    redjury::serve::check_bind(a.bind, token.as_deref(), &a.token_env)
        .map_err(|e| Refused(e.to_string()))?;
    let tasks = redjury::pipeline::load_tasks(&a.tasks).map_err(|e| Refused(e.to_string()))?;
    let templates = a.judging.templates()?;
    // The reward service answers while callers wait: never by batch.
    let config = ScorerConfig {
        panel: found.panel,
        templates,
        cache_path: found.cache,
        mode: JudgeMode::Live,
        dispatch: Dispatch::Live,
    };
    let options = redjury::serve::ServeOptions {
        tasks_dir: a.tasks.clone(),
        allow_paths: a.allow_path,
        token,
        queue: a.queue,
        deadline: std::time::Duration::from_secs(a.deadline),
        max_body: a.max_body_mb.saturating_mul(1 << 20),
        on_incomplete: a.on_incomplete,
        grace: std::time::Duration::from_secs(a.grace),
        out: a.out,
        prices: found.prices,
    };
    runtime()?.block_on(async move {
        let scorer = Setup::refuse_quorum(Scorer::new(config))?;
        let service = redjury::serve::Service::new(scorer, tasks, options).map_err(|e| match e {
            redjury::serve::ServeError::NoJudges { .. } => anyhow::Error::new(Refused(e.to_string())),
            other => anyhow::Error::new(other),
        })?;
        let listener = tokio::net::TcpListener::bind(a.bind)
            .await
            .with_context(|| format!("cannot listen on {}", a.bind))?;
        println!("listening on http://{}", listener.local_addr()?);
        let _ = std::io::stdout().flush();
        let end = service.run(listener, shutdown_signal()).await?;
        if end.unstored > 0 {
            eprintln!(
                "error: {} judge answers received could not be stored in the cache or its journal: they are lost when this process exits",
                end.unstored
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
        println!("stopped");
        Ok(ExitCode::SUCCESS)
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

fn gate(docx: &Path, author: &str, input: Option<&Path>) -> anyhow::Result<ExitCode> {
    let cannot = |p: &Path| format!("cannot read the input {}", p.display());
    let is_workbook = redjury::docx::read_file(docx, &Default::default())
        .is_ok_and(|bytes| redjury::xlsx::is_xlsx(&bytes));
    let result = if is_workbook {
        // A spreadsheet's input is the template it is filled in from.
        let template = match input {
            Some(p) => Some(redjury::xlsx::load(p).with_context(|| cannot(p))?),
            None => None,
        };
        redjury::check::gate::check_workbook(&redjury::xlsx::load(docx), template.as_ref())
    } else {
        let input_doc = match input {
            Some(p) => Some(redjury::docx::load(p).with_context(|| cannot(p))?),
            None => None,
        };
        redjury::check::gate::check_against(&redjury::docx::load(docx), author, input_doc.as_ref())
    };
    let verdict = if result.passed { "PASS" } else { "FAIL" };
    println!("{verdict} {}: {}", docx.display(), result.reason);
    Ok(if result.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn render(docx: &Path, view: View, output: Option<&Path>) -> anyhow::Result<ExitCode> {
    let title = docx.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let cannot = || format!("cannot render {}", docx.display());
    let bytes = redjury::docx::read_file(docx, &Default::default()).with_context(cannot)?;
    let text = if redjury::xlsx::is_xlsx(&bytes) {
        let book = redjury::xlsx::from_bytes(bytes, Default::default()).with_context(cannot)?;
        view::render_workbook(&book, view.into(), &title)
    } else {
        let doc = redjury::docx::from_bytes(bytes, Default::default()).with_context(cannot)?;
        for warning in &doc.warnings {
            eprintln!("warning: {}: {warning}", docx.display());
        }
        view::render(&doc, view.into(), &title)
    };
    match output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (`| head`) is not an error worth reporting.
            let _ = stdout.write_all(text.as_bytes());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

fn finish(report: &RunReport, quiet: bool) -> ExitCode {
    let code = match report.end {
        RunEnd::Complete | RunEnd::DryRun => ExitCode::SUCCESS,
        RunEnd::Incomplete => ExitCode::from(3),
    };
    if !quiet {
        print!("{}", outcome(report));
    }
    code
}

/// What a run prints on stdout: what happened, the headline, what it
/// leaves out and the top reasons, where the results are.
fn outcome(report: &RunReport) -> String {
    use redjury::report::markdown::plural;
    let s = &report.summary;
    let c = &s.counts;
    let f = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into());
    let mut out = String::new();
    if s.dry_run {
        if s.judges.values().any(|j| j.has_key) {
            out.push_str("dry run (--dry-run): no judge called\n");
        } else {
            let envs: Vec<&str> = s
                .judges
                .values()
                .map(|j| j.api_key_env.as_str())
                .filter(|e| !e.is_empty())
                .collect();
            out.push_str(&format!(
                "dry run: no judge has an API key (set {}), so none was called\n",
                envs.join(", ")
            ));
        }
        for (name, j) in &s.judges {
            if let Some(e) = &j.estimate {
                let cost = e
                    .max_cost_usd
                    .map(|x| format!("≤ ${x:.2} (estimate)"))
                    .unwrap_or_else(|| "no price".into());
                out.push_str(&format!(
                    "  {name}: {} to make ({} cached), ~{} input tokens, {cost}\n",
                    plural(e.calls as usize, "call", "calls"),
                    e.cached_calls,
                    e.input_tokens
                ));
            }
        }
    }
    out.push_str(&format!(
        "{}: {} scored, {} gate-failed, {} incomplete, {} pending; {} without an output\n",
        plural(c.results, "result", "results"),
        c.scored,
        c.gate_failed,
        c.incomplete,
        c.pending,
        plural(c.missing_outputs, "task", "tasks")
    ));
    let counted = s.counted();
    let over = if counted < c.results {
        format!(
            " — over {counted} of {}; the rest have no reward yet",
            plural(c.results, "result", "results")
        )
    } else {
        String::new()
    };
    out.push_str(&format!(
        "turn-weighted reward {} (95% CI {}), overall {}{over}\n",
        f(s.figures.turn_weighted),
        s.ci95.map(|[a, b]| format!("[{a:.4}, {b:.4}]")).unwrap_or_else(|| "—".into()),
        f(s.figures.overall)
    ));
    for (what, groups) in
        [("incomplete", &s.problems.incomplete), ("gate-failed", &s.problems.gate_failed)]
    {
        let mut top: Vec<(&String, &Vec<String>)> = groups.iter().collect();
        top.sort_by_key(|(_, rows)| std::cmp::Reverse(rows.len()));
        for (reason, rows) in top.into_iter().take(3) {
            out.push_str(&format!("  {what}: {} — {reason}\n", plural(rows.len(), "row", "rows")));
        }
    }
    for u in s.unusable_outputs.iter().take(3) {
        out.push_str(&format!("  not used: {}: {}\n", u.path, u.reason));
    }
    if !s.unmatched_outputs.is_empty() {
        let shown: Vec<&str> = s.unmatched_outputs.iter().take(3).map(String::as_str).collect();
        let more = s.unmatched_outputs.len() - shown.len();
        out.push_str(&format!(
            "  {} matching no task: {}{}\n",
            plural(s.unmatched_outputs.len(), "output", "outputs"),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more (summary.md lists them)")
            } else {
                String::new()
            }
        ));
    }
    for note in &s.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out.push_str(&format!("results in {}\n", report.out_dir.display()));
    out
}
