//! Command-line arguments and the thin glue that calls the library.
//!
//! Owns: argument parsing, exit codes and where output goes. Must never hold
//! logic a library user would need: everything here calls into `redjury`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use redjury::view::{self, ViewKind};

#[derive(Parser)]
#[command(name = "redjury", version, about = "Score contract redlines with a panel of LLM judges")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Render a .docx as the judges' annotated view, accepted/rejected text, or JSON.
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
    /// Print a run's summary tables; with --compare, a paired comparison and judge agreement.
    Report {
        /// A results folder.
        run: PathBuf,
        /// Another results folder to compare against.
        #[arg(long)]
        compare: Option<PathBuf>,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long, default_value_t = 5000)]
        resamples: usize,
    },
    /// Check that a .docx loads and has a tracked change or comment by AUTHOR (exit 0 pass, 1 fail).
    Gate {
        /// The .docx file.
        docx: PathBuf,
        /// The tracked-change author the file must contain (matching: see README).
        #[arg(long)]
        author: String,
    },
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// The judge panel (TOML).
    #[arg(long, default_value = "panel.toml")]
    panel: PathBuf,
    /// Where the results folder goes.
    #[arg(long)]
    out: PathBuf,
    /// Build and store every prompt and estimate cost; call no judge.
    #[arg(long)]
    dry_run: bool,
    /// The prompt and response cache (SQLite).
    #[arg(long, default_value = "results/cache.sqlite")]
    cache: PathBuf,
    /// A folder with system.md and user.md to use instead of the built-in prompts/.
    #[arg(long)]
    prompts: Option<PathBuf>,
    /// Price table (USD per million tokens).
    #[arg(long, default_value = "prices.toml")]
    prices: PathBuf,
    /// Bootstrap seed for the 95% CI.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 5000)]
    resamples: usize,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Skip writing views/ (large runs feeding a trainer: 10,000 views are ~300 MB).
    #[arg(long)]
    no_views: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum View {
    Annotated,
    Accepted,
    Rejected,
    Json,
}

impl From<View> for ViewKind {
    fn from(v: View) -> Self {
        match v {
            View::Annotated => ViewKind::Annotated,
            View::Accepted => ViewKind::Accepted,
            View::Rejected => ViewKind::Rejected,
            View::Json => ViewKind::Json,
        }
    }
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Score { tasks, outputs, common } => {
            let opts = run_options(&common)?;
            let report = runtime()?.block_on(redjury::run::score(&tasks, &outputs, &common.out, &opts))?;
            Ok(finish(&report))
        }
        Command::Rejudge { run, common } => {
            let opts = run_options(&common)?;
            let report = runtime()?.block_on(redjury::run::rejudge(&run, &common.out, &opts))?;
            Ok(finish(&report))
        }
        Command::Report { run, compare, seed, resamples } => {
            let (rows, summary) = redjury::report::load_run(&run)?;
            let mut text = redjury::report::markdown(&summary);
            match compare {
                Some(other) => {
                    let (other_rows, _) = redjury::report::load_run(&other)?;
                    let boot = redjury::aggregate::Bootstrap { seed, resamples };
                    text.push('\n');
                    text.push_str(&redjury::report::compare(&rows, &other_rows, boot));
                }
                None => text.push_str(&redjury::report::agreement(&rows)),
            }
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            Ok(ExitCode::SUCCESS)
        }
        Command::Render { docx, view, output } => render(&docx, view, output.as_deref()),
        Command::Gate { docx, author } => {
            let loaded = redjury::docx::load(&docx);
            let result = redjury::check::gate::check(&loaded, &author);
            if result.passed {
                println!("PASS {}: {}", docx.display(), result.reason);
                Ok(ExitCode::SUCCESS)
            } else {
                println!("FAIL {}: {}", docx.display(), result.reason);
                Ok(ExitCode::from(1))
            }
        }
    }
}

fn render(docx: &Path, view: View, output: Option<&Path>) -> anyhow::Result<ExitCode> {
    let doc = redjury::docx::load(docx).with_context(|| format!("cannot render {}", docx.display()))?;
    for warning in &doc.warnings {
        eprintln!("warning: {}: {warning}", docx.display());
    }
    let title = docx.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let text = view::render(&doc, view.into(), &title);
    match output {
        Some(path) => std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?,
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

fn run_options(a: &RunArgs) -> anyhow::Result<redjury::run::RunOptions> {
    let panel = redjury::judge::config::PanelConfig::load(&a.panel)?;
    let templates = match &a.prompts {
        Some(dir) => redjury::prompt::Templates::from_dir(dir)?,
        None => redjury::prompt::Templates::builtin(),
    };
    let prices = if a.prices.exists() {
        redjury::report::Prices::load(&a.prices).map_err(anyhow::Error::msg)?
    } else {
        eprintln!("note: no price table at {}; costs are not estimated", a.prices.display());
        redjury::report::Prices::default()
    };
    Ok(redjury::run::RunOptions {
        panel,
        cache_path: a.cache.clone(),
        templates,
        prices,
        dry_run: a.dry_run,
        bootstrap: redjury::aggregate::Bootstrap { seed: a.seed, resamples: a.resamples },
        progress: !a.quiet,
        write_views: !a.no_views,
    })
}

fn finish(report: &redjury::run::RunReport) -> ExitCode {
    use redjury::run::RunEnd;
    let s = &report.summary;
    let c = &s.counts;
    let f = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into());
    if report.end == RunEnd::DryRun {
        if s.judges.values().any(|j| j.has_key) {
            println!("dry run (--dry-run): no judge called");
        } else {
            println!("dry run: no judge has an API key (set {}), so none was called", key_envs(s).join(", "));
        }
        for (name, j) in &s.judges {
            if let Some(e) = &j.estimate {
                let cost = e.max_cost_usd.map(|x| format!("≤ ${x:.2}")).unwrap_or_else(|| "no price".into());
                println!("  {name}: {} calls to make ({} cached), ~{} input tokens, {cost}", e.calls, e.cached_calls, e.input_tokens);
            }
        }
    }
    println!(
        "{} results: {} scored, {} gate-failed, {} incomplete, {} pending; {} task(s) without an output",
        c.results, c.scored, c.gate_failed, c.incomplete, c.pending, c.missing_outputs
    );
    let counted = c.scored + c.gate_failed;
    let over =
        if counted < c.results { format!(" over {counted} of {} results (the rest have no reward yet)", c.results) } else { String::new() };
    println!(
        "turn-weighted reward {}{over} (95% CI {}), overall {}",
        f(s.figures.turn_weighted),
        s.ci95.map(|[a, b]| format!("[{a:.4}, {b:.4}]")).unwrap_or_else(|| "—".into()),
        f(s.figures.overall)
    );
    println!("results in {}", report.out_dir.display());
    match report.end {
        RunEnd::Complete | RunEnd::DryRun => ExitCode::SUCCESS,
        RunEnd::Incomplete => ExitCode::from(3),
    }
}

/// The environment variables the panel's judges read their keys from.
fn key_envs(s: &redjury::report::Summary) -> Vec<&str> {
    let mut envs: Vec<&str> = s.judges.values().map(|j| j.api_key_env.as_str()).collect();
    envs.sort();
    envs.dedup();
    envs
}
