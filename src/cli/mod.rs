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
use redjury::pipeline::run::{Replace, RunEnd, RunReport, RunSettings, Views};
use redjury::pipeline::{JudgeMode, Scorer, ScorerConfig};
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
        /// The .docx file.
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
    },
    /// Check that a .docx loads and has a tracked change or comment by AUTHOR (exit 0 pass, 1 fail).
    Gate {
        /// The .docx file.
        docx: PathBuf,
        /// The tracked-change author the file must contain (matching: see README).
        #[arg(long)]
        author: String,
        /// The task's input document: count only what the output adds to it (as `score` does for turn 2+).
        #[arg(long)]
        input: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The judge panel (TOML). Default: ./panel.toml, else panel.toml beside the tasks folder, else the built-in panel.
    #[arg(long)]
    panel: Option<PathBuf>,
    /// Where the results folder goes; an earlier results folder there is replaced whole when the run ends.
    #[arg(long)]
    out: PathBuf,
    /// Replace --out even when it is not a results folder.
    #[arg(long)]
    force: bool,
    /// Build and store every prompt and estimate cost; call no judge.
    #[arg(long)]
    dry_run: bool,
    /// The prompt and response cache (SQLite). Default: cache.sqlite in the folder that holds --out.
    #[arg(long)]
    cache: Option<PathBuf>,
    /// A folder with system.md and user.md to use instead of the built-in prompts/.
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// Price table (USD per million tokens). Default: as for --panel.
    #[arg(long)]
    prices: Option<PathBuf>,
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
            let setup = setup(&common, Some(&tasks))?;
            let report = runtime()?.block_on(async {
                let scorer = setup.scorer()?;
                let bar = progress::Bar::new(!common.quiet);
                let r =
                    redjury::pipeline::run::score(&tasks, &outputs, &scorer, &setup.settings, &bar)
                        .await;
                bar.finish();
                anyhow::Ok(r?)
            })?;
            Ok(finish(&report, common.quiet))
        }
        Command::Rejudge { run, common } => {
            let setup = setup(&common, None)?;
            let report = runtime()?.block_on(async {
                let scorer = setup.scorer()?;
                let bar = progress::Bar::new(!common.quiet);
                let r = redjury::pipeline::run::rejudge(&run, &scorer, &setup.settings, &bar).await;
                bar.finish();
                anyhow::Ok(r?)
            })?;
            Ok(finish(&report, common.quiet))
        }
        Command::Report { run, compare, seed, resamples } => {
            let (rows, summary) = redjury::report::load_run(&run)?;
            let mut text = redjury::report::markdown::summary(&summary);
            if let Some(other) = compare {
                let (other_rows, _) = redjury::report::load_run(&other)?;
                let boot = Bootstrap {
                    seed: seed.unwrap_or(0),
                    resamples: resamples.unwrap_or(5000) as usize,
                };
                text.push('\n');
                text.push_str(&redjury::report::markdown::comparison(
                    &redjury::aggregate::compare::compare(&rows, &other_rows, boot),
                ));
            }
            text.push_str(&redjury::report::markdown::agreement(
                &redjury::aggregate::agreement::agreement(&rows),
            ));
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(ExitCode::SUCCESS)
        }
        Command::Render { docx, view, output } => render(&docx, view, output.as_deref()),
        Command::Gate { docx, author, input } => gate(&docx, &author, input.as_deref()),
    }
}

/// What `score` and `rejudge` are built from.
struct Setup {
    config: ScorerConfig,
    settings: RunSettings,
}

impl Setup {
    fn scorer(&self) -> anyhow::Result<Scorer> {
        Scorer::new(self.config.clone()).map_err(|e| match e {
            redjury::pipeline::ScorerError::QuorumUnreachable { .. } => {
                anyhow::Error::new(Refused(e.to_string()))
            }
            other => anyhow::Error::new(other),
        })
    }
}

fn setup(a: &RunArgs, tasks: Option<&Path>) -> anyhow::Result<Setup> {
    let found = defaults::resolve(
        a.panel.as_deref(),
        a.prices.as_deref(),
        a.cache.as_deref(),
        &a.out,
        tasks,
    )?;
    if !a.quiet {
        println!("panel: {}", found.panel_from);
        println!("prices: {}", found.prices_from);
        println!("cache: {}", found.cache.display());
    }
    let templates = match &a.prompts {
        Some(dir) => redjury::prompt::Templates::from_dir(dir)?,
        None => redjury::prompt::Templates::builtin(),
    };
    let mode = if a.dry_run { JudgeMode::DryRun } else { JudgeMode::Live };
    let settings = RunSettings {
        out: a.out.clone(),
        prices: found.prices,
        bootstrap: Bootstrap { seed: a.seed, resamples: a.resamples as usize },
        views: if a.no_views { Views::Skip } else { Views::Write },
        replace: if a.force { Replace::Anything } else { Replace::ResultsOnly },
        model: a.model.clone(),
    };
    Ok(Setup {
        config: ScorerConfig { panel: found.panel, templates, cache_path: found.cache, mode },
        settings,
    })
}

fn gate(docx: &Path, author: &str, input: Option<&Path>) -> anyhow::Result<ExitCode> {
    let input_doc = match input {
        Some(p) => Some(
            redjury::docx::load(p)
                .with_context(|| format!("cannot read the input {}", p.display()))?,
        ),
        None => None,
    };
    let loaded = redjury::docx::load(docx);
    let result = redjury::check::gate::check_against(&loaded, author, input_doc.as_ref());
    let verdict = if result.passed { "PASS" } else { "FAIL" };
    println!("{verdict} {}: {}", docx.display(), result.reason);
    Ok(if result.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn render(docx: &Path, view: View, output: Option<&Path>) -> anyhow::Result<ExitCode> {
    let doc =
        redjury::docx::load(docx).with_context(|| format!("cannot render {}", docx.display()))?;
    for warning in &doc.warnings {
        eprintln!("warning: {}: {warning}", docx.display());
    }
    let title = docx.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let text = view::render(&doc, view.into(), &title);
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
    out.push_str(&format!("results in {}\n", report.out_dir.display()));
    out
}
