//! Results folders: what a run writes, how it reads back, the readable
//! summary, and the comparison of two runs.
//!
//! Owns: the file contracts — `results.jsonl`, `summary.json`,
//! `summary.md`, `rewards.jsonl` (the training contract), `prompts.jsonl`,
//! `views/` — and writing each atomically (a temporary file renamed into
//! place). Must never write a reward for a row that has none.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::aggregate::{self, Bootstrap, Counts, Figures};
use crate::judge::CounterSnapshot;
use crate::prompt::Prompt;
use crate::score::{RubricKind, Status, TaskResult};
use crate::verdict::Verdict;

/// Prices in USD per million tokens, from prices.toml.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Prices {
    #[serde(default)]
    pub models: BTreeMap<String, Price>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub cached_input: f64,
    pub output: f64,
}

impl Prices {
    pub fn load(path: &Path) -> Result<Prices, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read price table {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("price table {}: {}", path.display(), e.to_string().trim_end()))
    }

    /// Cost of usage; `None` when the model has no price.
    pub fn cost(&self, model: &str, input: u64, cached: u64, output: u64) -> Option<f64> {
        let p = self.models.get(model)?;
        let uncached = input.saturating_sub(cached) as f64;
        Some((uncached * p.input + cached as f64 * p.cached_input + output as f64 * p.output) / 1e6)
    }
}

/// What a dry run expects a judge to cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Calls not yet in the cache.
    pub calls: u64,
    pub cached_calls: u64,
    pub input_tokens: u64,
    /// Input tokens in prompt prefixes shared with an earlier call.
    pub shared_prefix_tokens: u64,
    /// Upper bound: every call uses its whole output budget.
    pub max_output_tokens: u64,
    pub max_cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeSummary {
    pub provider: String,
    pub model: String,
    /// The environment variable the key is read from (never the key).
    #[serde(default)]
    pub api_key_env: String,
    pub has_key: bool,
    #[serde(flatten)]
    pub counters: CounterSnapshot,
    /// Share of input tokens the provider served from its prompt cache.
    pub cached_share: Option<f64>,
    /// `None` when prices.toml has no price for the model.
    pub cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<Estimate>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BestAtK {
    pub k: usize,
    pub overall: Option<f64>,
    pub turn_weighted: Option<f64>,
}

/// summary.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub format: String,
    pub version: u32,
    pub dry_run: bool,
    pub counts: Counts,
    #[serde(flatten)]
    pub figures: Figures,
    pub ci95: Option<[f64; 2]>,
    pub bootstrap: Option<Bootstrap>,
    pub best_at_k: BestAtK,
    pub judges: BTreeMap<String, JudgeSummary>,
    pub quorum: usize,
    pub template_version: String,
    /// Tasks with no output file.
    pub missing: Vec<String>,
    /// Output files that match no task.
    pub unmatched_outputs: Vec<String>,
}

impl Summary {
    pub fn build(rows: &[TaskResult], missing: Vec<String>, unmatched: Vec<String>, boot: Bootstrap) -> Summary {
        let figures = aggregate::figures(rows);
        let best = aggregate::best_of_trials(rows);
        let mut trials: BTreeMap<&str, usize> = BTreeMap::new();
        for r in rows {
            *trials.entry(&r.task).or_default() += 1;
        }
        let best_figures = aggregate::figures(&best);
        Summary {
            format: "redjury.summary".into(),
            version: 1,
            dry_run: false,
            counts: aggregate::counts(rows, missing.len()),
            ci95: aggregate::bootstrap_ci(rows, boot),
            bootstrap: Some(boot),
            best_at_k: BestAtK {
                k: trials.values().copied().max().unwrap_or(0),
                overall: best_figures.overall,
                turn_weighted: best_figures.turn_weighted,
            },
            figures,
            judges: BTreeMap::new(),
            quorum: 0,
            template_version: String::new(),
            missing,
            unmatched_outputs: unmatched,
        }
    }
}

/// One line of prompts.jsonl: which prompt the judges read for a task ×
/// trial. The text itself is stored once, content-addressed, in the cache
/// (`rejudge` reads it from there, so it needs no .docx).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PromptRecord {
    pub task: String,
    pub trial: String,
    pub prompt_hash: String,
    pub template_version: String,
    pub rubric_ids: Vec<String>,
}

impl PromptRecord {
    pub fn of(task: &str, trial: &str, p: &Prompt) -> PromptRecord {
        PromptRecord {
            task: task.to_string(),
            trial: trial.to_string(),
            prompt_hash: p.hash.clone(),
            template_version: p.template_version.clone(),
            rubric_ids: p.rubric_ids.clone(),
        }
    }

    /// The prompt's text, from the cache.
    pub fn resolve(&self, cache: &crate::cache::Cache, run_dir: &Path) -> Result<Prompt, ReportError> {
        match cache.get_prompt(&self.prompt_hash) {
            Ok(Some(p)) => Ok(p),
            Ok(None) => Err(ReportError::Read {
                path: run_dir.join("prompts.jsonl"),
                message: format!(
                    "prompt {} ({} trial {}) is not in the cache; pass the --cache the run used",
                    self.prompt_hash, self.task, self.trial
                ),
            }),
            Err(e) => Err(ReportError::Read { path: run_dir.join("prompts.jsonl"), message: e.to_string() }),
        }
    }
}

/// One line of rewards.jsonl — the training contract.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RewardLine {
    pub task: String,
    pub trial: String,
    pub reward: f64,
}

/// Writes view files on a thread of its own, so that disk writes overlap
/// with rendering and judging. The queue is bounded: memory stays flat.
/// (Views are not synced one by one: a rerun rewrites any a crash lost.)
pub struct ViewWriter {
    sender: Option<std::sync::mpsc::SyncSender<(String, String)>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    dir: PathBuf,
}

impl ViewWriter {
    pub fn start(views_dir: &Path) -> std::io::Result<ViewWriter> {
        std::fs::create_dir_all(views_dir)?;
        let (sender, receiver) = std::sync::mpsc::sync_channel::<(String, String)>(256);
        let dir = views_dir.to_path_buf();
        let thread_dir = dir.clone();
        let thread = std::thread::spawn(move || {
            let mut result = Ok(());
            for (name, text) in receiver {
                if result.is_ok() {
                    result = std::fs::write(thread_dir.join(format!("{name}.md")), text);
                }
            }
            result
        });
        Ok(ViewWriter { sender: Some(sender), thread: Some(thread), dir })
    }

    /// Queues a view; `name` without the `.md`.
    pub fn write(&self, name: String, text: String) -> std::io::Result<()> {
        match &self.sender {
            Some(s) => {
                s.send((name, text)).map_err(|_| std::io::Error::other(format!("the view writer for {} stopped", self.dir.display())))
            }
            None => Ok(()),
        }
    }

    /// Waits for every queued view to be written.
    pub fn finish(mut self) -> std::io::Result<()> {
        drop(self.sender.take());
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the view writer thread panicked")),
            None => Ok(()),
        }
    }
}

/// Writes a file under a temporary name, syncs it, and renames it into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("{}.tmp-{}", path.extension().and_then(|e| e.to_str()).unwrap_or(""), std::process::id()));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

fn jsonl<T: Serialize>(items: &[T]) -> Vec<u8> {
    let mut out = Vec::new();
    for item in items {
        // Plain data types: serialisation cannot fail.
        if let Ok(line) = serde_json::to_string(item) {
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
    }
    out
}

/// Writes a run folder.
/// Writes a run folder's files (the views are written as outputs are
/// rendered, by the pipeline).
pub fn write_run(out: &Path, rows: &[TaskResult], summary: &Summary, prompts: &[PromptRecord]) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    write_atomic(&out.join("prompts.jsonl"), &jsonl(prompts))?;
    let rewards: Vec<RewardLine> = rows
        .iter()
        .filter(|r| matches!(r.status, Status::Scored | Status::GateFailed))
        .filter_map(|r| Some(RewardLine { task: r.task.clone(), trial: r.trial.clone(), reward: r.reward? }))
        .collect();
    write_atomic(&out.join("rewards.jsonl"), &jsonl(&rewards))?;
    write_atomic(&out.join("results.jsonl"), &jsonl(rows))?;
    let json = serde_json::to_vec_pretty(summary).map_err(std::io::Error::other)?;
    write_atomic(&out.join("summary.json"), &json)?;
    write_atomic(&out.join("summary.md"), markdown(summary).as_bytes())
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{path}: {message}")]
    Read { path: PathBuf, message: String },
}

/// Reads a run folder back.
pub fn load_run(dir: &Path) -> Result<(Vec<TaskResult>, Summary), ReportError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|e| ReportError::Read { path, message: format!("{e} (is this a redjury run folder?)") })
    };
    let mut rows = Vec::new();
    for (i, line) in read("results.jsonl")?.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        rows.push(
            serde_json::from_str(line)
                .map_err(|e| ReportError::Read { path: dir.join("results.jsonl"), message: format!("line {}: {e}", i + 1) })?,
        );
    }
    let summary = serde_json::from_str(&read("summary.json")?)
        .map_err(|e| ReportError::Read { path: dir.join("summary.json"), message: e.to_string() })?;
    Ok((rows, summary))
}

pub fn load_prompts(dir: &Path) -> Result<Vec<PromptRecord>, ReportError> {
    let path = dir.join("prompts.jsonl");
    let text = std::fs::read_to_string(&path).map_err(|e| ReportError::Read { path: path.clone(), message: e.to_string() })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| ReportError::Read { path: path.clone(), message: format!("line {}: {e}", i + 1) })
        })
        .collect()
}

fn fmt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into())
}

fn table(out: &mut String, title: &str, key: &str, m: &BTreeMap<String, f64>) {
    if m.is_empty() {
        return;
    }
    let _ = write!(out, "\n### {title}\n\n| {key} | reward |\n|---|---|\n");
    for (k, v) in m {
        let _ = writeln!(out, "| {k} | {v:.4} |");
    }
}

/// summary.md: the summary as readable tables.
pub fn markdown(s: &Summary) -> String {
    let mut out = String::from("# redjury run summary\n\n");
    if s.dry_run {
        out.push_str("**Dry run**: no judge was called; judge rubrics are pending. Rewards below cover only rows that needed no judge (gate failures, and tasks made only of checks).\n\n");
    }
    let c = &s.counts;
    let _ = writeln!(
        out,
        "| results | scored | gate failed | incomplete | pending | missing outputs |\n|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} | {} |",
        c.results, c.scored, c.gate_failed, c.incomplete, c.pending, c.missing_outputs
    );
    let ci = s.ci95.map(|[a, b]| format!("[{a:.4}, {b:.4}]")).unwrap_or_else(|| "—".into());
    let boot = s.bootstrap.map(|b| format!(" (seed {}, {} resamples over input groups)", b.seed, b.resamples)).unwrap_or_default();
    let _ = write!(
        out,
        "\n| figure | value |\n|---|---|\n| turn-weighted (headline) | {} |\n| 95% CI{boot} | {ci} |\n| overall (mean over input groups) | {} |\n| mean per task | {} |\n| best@{} turn-weighted | {} |\n",
        fmt(s.figures.turn_weighted),
        fmt(s.figures.overall),
        fmt(s.figures.mean_per_task),
        s.best_at_k.k,
        fmt(s.best_at_k.turn_weighted)
    );
    table(&mut out, "By turn (mean over input groups)", "turn", &s.figures.by_turn);
    table(&mut out, "By side (turn-weighted)", "side", &s.figures.by_side);
    table(&mut out, "By scenario (turn-weighted)", "scenario", &s.figures.by_scenario);
    table(&mut out, "By (scenario, turn) cell", "cell", &s.figures.by_scenario_turn);
    table(&mut out, "By category (pooled; penalties correct when not triggered)", "category", &s.figures.by_category);
    if !s.judges.is_empty() {
        out.push_str("\n### Judges\n\n| judge | model | key | requests | cache hits | retries | failures | input tokens | cached share | output tokens | cost (USD) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (name, j) in &s.judges {
            let k = &j.counters;
            let _ = writeln!(
                out,
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                j.model,
                if j.has_key { "yes" } else { "no" },
                k.requests,
                k.cache_hits,
                k.retries,
                k.failures,
                k.input_tokens,
                j.cached_share.map(|x| format!("{:.0}%", x * 100.0)).unwrap_or_else(|| "—".into()),
                k.output_tokens,
                j.cost.map(|x| format!("{x:.4}")).unwrap_or_else(|| "no price".into())
            );
        }
        if s.judges.values().any(|j| j.estimate.is_some()) {
            out.push_str("\n### Estimates (calls not in the cache)\n\n| judge | calls | already cached | input tokens | of which shared prefixes | output tokens (max) | cost (USD, max) |\n|---|---|---|---|---|---|---|\n");
            for (name, j) in &s.judges {
                if let Some(e) = &j.estimate {
                    let _ = writeln!(
                        out,
                        "| {name} | {} | {} | {} | {} | {} | {} |",
                        e.calls,
                        e.cached_calls,
                        e.input_tokens,
                        e.shared_prefix_tokens,
                        e.max_output_tokens,
                        e.max_cost_usd.map(|x| format!("{x:.2}")).unwrap_or_else(|| "no price".into())
                    );
                }
            }
        }
    }
    if !s.missing.is_empty() {
        let _ = write!(out, "\n### Tasks without an output ({})\n\n{}\n", s.missing.len(), s.missing.join(", "));
    }
    if !s.unmatched_outputs.is_empty() {
        let _ = write!(out, "\n### Output files matching no task ({})\n\n{}\n", s.unmatched_outputs.len(), s.unmatched_outputs.join(", "));
    }
    out
}

/// A paired comparison of two runs over the task × trial rows both scored.
pub fn compare(a_rows: &[TaskResult], b_rows: &[TaskResult], boot: Bootstrap) -> String {
    let key = |r: &TaskResult| (r.task.clone(), r.trial.clone());
    let b_index: BTreeMap<(String, String), &TaskResult> = b_rows.iter().filter(|r| r.counts()).map(|r| (key(r), r)).collect();
    let shared_a: Vec<TaskResult> = a_rows.iter().filter(|r| r.counts() && b_index.contains_key(&key(r))).cloned().collect();
    let shared_b: Vec<TaskResult> = shared_a.iter().filter_map(|r| b_index.get(&key(r)).map(|x| (*x).clone())).collect();
    let fa = aggregate::figures(&shared_a);
    let fb = aggregate::figures(&shared_b);
    let mut out =
        format!("# Paired comparison\n\n{} task × trial rows scored in both runs (A = this run, B = --compare).\n\n", shared_a.len());
    let ci = aggregate::paired_bootstrap_ci(&shared_a, &shared_b, boot);
    let delta = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:+.4}", a - b),
        _ => "—".into(),
    };
    let _ = write!(
        out,
        "| figure | A | B | A − B | 95% CI of A − B |\n|---|---|---|---|---|\n| turn-weighted | {} | {} | {} | {} |\n| overall | {} | {} | {} | |\n",
        fmt(fa.turn_weighted),
        fmt(fb.turn_weighted),
        delta(fa.turn_weighted, fb.turn_weighted),
        ci.map(|[l, h]| format!("[{l:+.4}, {h:+.4}]")).unwrap_or_else(|| "—".into()),
        fmt(fa.overall),
        fmt(fb.overall),
        delta(fa.overall, fb.overall)
    );
    for (title, ma, mb) in [
        ("turn", &fa.by_turn, &fb.by_turn),
        ("side", &fa.by_side, &fb.by_side),
        ("scenario", &fa.by_scenario, &fb.by_scenario),
        ("category", &fa.by_category, &fb.by_category),
    ] {
        let _ = write!(out, "\n### By {title}\n\n| {title} | A | B | A − B |\n|---|---|---|---|\n");
        for k in ma.keys().chain(mb.keys().filter(|k| !ma.contains_key(*k))) {
            let (x, y) = (ma.get(k).copied(), mb.get(k).copied());
            let _ = writeln!(out, "| {k} | {} | {} | {} |", fmt(x), fmt(y), delta(x, y));
        }
    }
    out.push_str(&agreement(a_rows));
    out
}

/// Judge agreement over rubric votes: pairwise percent agreement, Fleiss'
/// kappa over the items every judge voted on, and each judge's departure
/// from the panel verdict.
pub fn agreement(rows: &[TaskResult]) -> String {
    let mut judges: Vec<String> =
        rows.iter().flat_map(|r| r.rubrics.iter().filter(|x| x.kind == RubricKind::Llm).flat_map(|x| x.votes.keys().cloned())).collect();
    judges.sort();
    judges.dedup();
    let mut out = String::from("\n## Judge agreement\n\n");
    if judges.len() < 2 {
        out.push_str("Fewer than two judges voted: nothing to compare.\n");
        return out;
    }
    let items: Vec<(&BTreeMap<String, Option<Verdict>>, Option<Verdict>)> =
        rows.iter().flat_map(|r| r.rubrics.iter().filter(|x| x.kind == RubricKind::Llm).map(|x| (&x.votes, x.verdict))).collect();
    out.push_str("| pair | items both voted | agreement |\n|---|---|---|\n");
    for i in 0..judges.len() {
        for j in i + 1..judges.len() {
            let (mut n, mut same) = (0, 0);
            for (votes, _) in &items {
                if let (Some(Some(x)), Some(Some(y))) = (votes.get(&judges[i]), votes.get(&judges[j])) {
                    n += 1;
                    same += usize::from(x == y);
                }
            }
            let pct = if n > 0 { format!("{:.1}%", 100.0 * same as f64 / n as f64) } else { "—".into() };
            let _ = writeln!(out, "| {} – {} | {n} | {pct} |", judges[i], judges[j]);
        }
    }
    // Fleiss' kappa, two categories, items rated by every judge.
    let m = judges.len() as f64;
    let full: Vec<(f64, f64)> = items
        .iter()
        .filter(|(v, _)| judges.iter().all(|j| matches!(v.get(j), Some(Some(_)))))
        .map(|(v, _)| {
            let pass = judges.iter().filter(|j| matches!(v.get(*j), Some(Some(Verdict::Pass)))).count() as f64;
            (pass, m - pass)
        })
        .collect();
    let kappa = if full.is_empty() {
        None
    } else {
        let n = full.len() as f64;
        let p_bar = full.iter().map(|(p, f)| (p * (p - 1.0) + f * (f - 1.0)) / (m * (m - 1.0))).sum::<f64>() / n;
        let pj_pass = full.iter().map(|(p, _)| p).sum::<f64>() / (n * m);
        let pe = pj_pass * pj_pass + (1.0 - pj_pass) * (1.0 - pj_pass);
        (pe < 1.0).then(|| (p_bar - pe) / (1.0 - pe))
    };
    let _ = writeln!(
        out,
        "\nFleiss' kappa over {} rubric items every judge voted on: {}\n",
        full.len(),
        kappa.map(|k| format!("{k:.3}")).unwrap_or_else(|| "undefined (no items, or no variation)".into())
    );
    out.push_str("| judge | votes | departs from the panel verdict |\n|---|---|---|\n");
    let mut worst: Option<(String, f64)> = None;
    for j in &judges {
        let (mut n, mut differ) = (0, 0);
        for (votes, verdict) in &items {
            if let (Some(Some(v)), Some(p)) = (votes.get(j), verdict) {
                n += 1;
                differ += usize::from(v != p);
            }
        }
        let rate = if n > 0 { differ as f64 / n as f64 } else { 0.0 };
        let _ = writeln!(out, "| {j} | {n} | {:.1}% |", rate * 100.0);
        if n > 0 && worst.as_ref().is_none_or(|(_, w)| rate > *w) {
            worst = Some((j.clone(), rate));
        }
    }
    if let Some((j, rate)) = worst {
        let _ = writeln!(out, "\nThe judge departing most from the panel: **{j}** ({:.1}% of its votes).", rate * 100.0);
    }
    out
}
