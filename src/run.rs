//! The `score` and `rejudge` pipelines: gate → render → prompt → judge →
//! vote → reward → aggregate → results folder.
//!
//! Owns: the order of the stages and the fan-out of judge calls. Must never
//! skip a task silently (missing outputs are listed, judge failures become
//! recorded abstentions) and never pay twice for an answer (every call goes
//! through the cache).

use std::collections::{BTreeMap, HashSet};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::aggregate::Bootstrap;
use crate::cache::Cache;
use crate::check::gate;
use crate::judge::config::PanelConfig;
use crate::judge::verdicts::JudgeVote;
use crate::judge::{CallResult, Judge};
use crate::panel;
use crate::prompt::{Prompt, Templates};
use crate::report::{self, Estimate, JudgeSummary, Prices, PromptRecord, Summary};
use crate::score::{RubricKind, RubricResult, Status, TaskResult};
use crate::task::{self, Task};
use crate::verdict::Verdict;
use crate::{docx, view};

/// Settings shared by `score` and `rejudge`.
pub struct RunOptions {
    pub panel: PanelConfig,
    pub cache_path: PathBuf,
    pub templates: Templates,
    pub prices: Prices,
    /// Build and store prompts, estimate cost, call no judge.
    pub dry_run: bool,
    pub bootstrap: Bootstrap,
    /// Show a progress bar on stderr (only when it is a terminal).
    pub progress: bool,
    /// Write `views/` (the annotated view of every output).
    pub write_views: bool,
}

/// How a run ended, for the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every task × trial has a reward.
    Complete,
    /// Some rows are incomplete (quorum not met); results are written.
    Incomplete,
    /// No judge was called; LLM rubrics are pending.
    DryRun,
}

pub struct RunReport {
    pub summary: Summary,
    pub end: RunEnd,
    pub out_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Task(#[from] task::TaskError),
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
    #[error(transparent)]
    Report(#[from] report::ReportError),
    #[error("cannot write results to {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    Judge(String),
}

/// One task × trial on its way through the pipeline.
struct Item {
    row: TaskResult,
    prompt: Option<Prompt>,
}

/// Outputs prepared and judged together: bounds memory on large runs while
/// keeping every judge's limiter busy.
const BATCH: usize = 1024;

fn skeleton(task: &Task, trial: &str, gate: gate::GateResult) -> TaskResult {
    TaskResult {
        task: task.name.clone(),
        trial: trial.to_string(),
        scenario: task.scenario.clone(),
        turn: task.turn,
        side: task.side,
        group: task.input_group.clone(),
        variant: task.variant.clone(),
        status: Status::Pending,
        gate,
        reward: None,
        earned: None,
        penalty: None,
        total_positive: 0,
        prompt_hash: None,
        rubrics: task
            .rubrics
            .iter()
            .map(|r| RubricResult {
                id: r.id.clone(),
                kind: if r.is_check() { RubricKind::Check } else { RubricKind::Llm },
                weight: r.weight,
                category: r.category.clone(),
                verdict: None,
                votes: BTreeMap::new(),
                justifications: BTreeMap::new(),
                abstentions: BTreeMap::new(),
            })
            .collect(),
    }
}

fn view_name(task: &str, trial: &str) -> String {
    if trial == "1" { task.to_string() } else { format!("{task}__{trial}") }
}

/// Key of a rendered output in the cache: the file's bytes, the author the
/// gate checks, the input it compares with, the view's title and the view
/// format version.
fn render_key(bytes: &[u8], author: &str, title: &str, input_sha: Option<&str>) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(view::annotated::VIEW_VERSION.to_le_bytes());
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update([0]);
    h.update(Sha256::digest(bytes));
    h.update(author.as_bytes());
    h.update([0]);
    h.update(title.as_bytes());
    h.update([0]);
    h.update(input_sha.unwrap_or("").as_bytes());
    crate::hash::hex(&h.finalize())
}

/// Gate, render and prompt one output (CPU only), reusing a cached render
/// of the same bytes; the view goes to the writer at once so that memory
/// does not grow with the run.
fn prepare(
    task: &Task,
    output: &task::Output,
    templates: &Templates,
    cache: &Cache,
    views: Option<&report::ViewWriter>,
) -> Result<Item, RunError> {
    let title = format!("{} ({})", task.name, output.path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
    // An oversized file is never read into memory: docx::load refuses it
    // by its size (the `None` arm below) with the reason.
    let too_large = std::fs::metadata(&output.path).is_ok_and(|m| m.len() > docx::Limits::default().max_file_bytes);
    let bytes = if too_large { Err(std::io::Error::other("too large")) } else { std::fs::read(&output.path) };
    let cached = match &bytes {
        Ok(b) => {
            let key = render_key(b, &task.author, &title, task.input_sha.as_deref());
            let hit = cache.get_render(&key)?.and_then(|(g, v)| Some((serde_json::from_str::<gate::GateResult>(&g).ok()?, v)));
            Some((key, hit))
        }
        Err(_) => None,
    };
    let has_checks = task.rubrics.iter().any(|r| r.is_check());
    // Check verdicts are cached under the render key and the checks'
    // fingerprints (parameters and gold documents).
    let checks_key = match (&cached, has_checks) {
        (Some((key, _)), true) => {
            let prints: Vec<&str> = task.rubrics.iter().filter_map(|r| r.check.as_ref().map(|c| c.fingerprint.as_str())).collect();
            Some(crate::hash::sha256_hex(&format!("{key}\u{1f}{}\u{1f}{}", crate::check::CHECK_VERSION, prints.join("\u{1f}"))))
        }
        _ => None,
    };
    let stored_checks: Option<Vec<(String, Verdict, String)>> = match &checks_key {
        Some(k) => cache.get_checks(k)?.and_then(|j| serde_json::from_str(&j).ok()),
        None => None,
    };
    let mut parsed: Option<docx::Document> = None;
    let (gate, text) = match cached {
        Some((_, Some(hit))) if !has_checks || stored_checks.is_some() => hit,
        Some((key, None)) => {
            let loaded = docx::from_bytes(bytes.unwrap_or_default(), docx::Limits::default());
            let gate = gate::check_against(&loaded, &task.author, task.input_doc.as_deref());
            let text = loaded.as_ref().ok().map(|doc| view::annotated::render(doc, &title));
            let gate_json = serde_json::to_string(&gate).unwrap_or_default();
            cache.put_render(&key, &gate_json, text.as_deref())?;
            parsed = loaded.ok();
            (gate, text)
        }
        Some((_, Some((gate, text)))) => {
            // Cached view and gate; the checks still need the model.
            parsed = docx::from_bytes(bytes.unwrap_or_default(), docx::Limits::default()).ok();
            (gate, text)
        }
        None => (gate::check_against(&docx::load(&output.path), &task.author, task.input_doc.as_deref()), None),
    };
    let mut item = Item { row: skeleton(task, &output.trial, gate), prompt: None };
    if item.row.gate.passed && has_checks {
        let results: Vec<(String, Verdict, String)> = match (stored_checks, &parsed) {
            (Some(stored), _) => stored,
            (None, Some(doc)) => {
                let (ids, checks): (Vec<&str>, Vec<&crate::task::check_spec::PreparedCheck>) =
                    task.rubrics.iter().filter_map(|r| Some((r.id.as_str(), r.check.as_ref()?))).unzip();
                let fresh: Vec<(String, Verdict, String)> =
                    crate::check::evaluate_all(&checks, doc, task.input_doc.as_deref(), &task.author)
                        .into_iter()
                        .zip(ids)
                        .map(|((v, why), id)| (id.to_string(), v, why))
                        .collect();
                if let (Some(k), Ok(json)) = (&checks_key, serde_json::to_string(&fresh)) {
                    cache.put_checks(k, &json)?;
                }
                fresh
            }
            (None, None) => Vec::new(),
        };
        for (id, verdict, reason) in results {
            if let Some(result) = item.row.rubrics.iter_mut().find(|r| r.id == id) {
                result.verdict = Some(verdict);
                result.votes.insert("check".into(), Some(verdict));
                result.justifications.insert("check".into(), reason);
            }
        }
    }
    if let Some(text) = text {
        if item.row.gate.passed && task.llm_rubrics().next().is_some() {
            let prompt = templates.render(task, &text);
            item.row.prompt_hash = Some(prompt.hash.clone());
            item.prompt = Some(prompt);
        }
        if let Some(views) = views {
            views
                .write(view_name(&task.name, &output.trial), text)
                .map_err(|source| RunError::Write { path: PathBuf::from("views"), source })?;
        }
    }
    Ok(item)
}

/// `redjury score`.
pub async fn score(tasks_dir: &Path, outputs_dir: &Path, out_dir: &Path, opts: &RunOptions) -> Result<RunReport, RunError> {
    let tasks = task::load_tasks(tasks_dir)?;
    let names: Vec<String> = tasks.iter().map(|t| t.name.clone()).collect();
    let outputs = task::find_outputs(outputs_dir, &names)?;
    let with_output: HashSet<&str> = outputs.found.iter().map(|o| o.task.as_str()).collect();
    let missing: Vec<String> = names.iter().filter(|n| !with_output.contains(n.as_str())).cloned().collect();
    let by_name: BTreeMap<&str, &Task> = tasks.iter().map(|t| (t.name.as_str(), t)).collect();

    let work: Vec<(&Task, &task::Output)> = outputs.found.iter().filter_map(|o| Some((*by_name.get(o.task.as_str())?, o))).collect();
    let unmatched = outputs.unmatched.iter().map(|p| p.display().to_string()).collect();
    let mut run = Run::start(out_dir, opts, work.len())?;
    let views = match opts.write_views {
        true => Some(
            report::ViewWriter::start(&out_dir.join("views")).map_err(|source| RunError::Write { path: out_dir.join("views"), source })?,
        ),
        false => None,
    };
    for batch in work.chunks(BATCH) {
        let started = std::time::Instant::now();
        // Rendering is CPU work: spread it over the machine's cores.
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).min(batch.len().max(1));
        let chunk = batch.len().div_ceil(threads).max(1);
        let cache = &run.cache;
        let views = views.as_ref();
        let prepared: Vec<Result<Item, RunError>> = std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .chunks(chunk)
                .map(|part| s.spawn(move || part.iter().map(|(t, o)| prepare(t, o, &opts.templates, cache, views)).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
        });
        let items = prepared.into_iter().collect::<Result<Vec<Item>, RunError>>()?;
        tracing::info!("prepared {} outputs in {:?}", items.len(), started.elapsed());
        run.judge(items, opts).await?;
    }
    if let Some(views) = views {
        views.finish().map_err(|source| RunError::Write { path: out_dir.join("views"), source })?;
    }
    run.finish(missing, unmatched, out_dir, opts)
}

/// `redjury rejudge`: the prompts an earlier run stored, judged again.
pub async fn rejudge(run_dir: &Path, out_dir: &Path, opts: &RunOptions) -> Result<RunReport, RunError> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if same(run_dir, out_dir) {
        return Err(RunError::Judge(format!(
            "--out {} is the run being rejudged; write the new results to another folder",
            out_dir.display()
        )));
    }
    let (rows, old) = report::load_run(run_dir)?;
    let prompts = report::load_prompts(run_dir)?;
    let by_key: BTreeMap<(String, String), PromptRecord> = prompts.into_iter().map(|p| ((p.task.clone(), p.trial.clone()), p)).collect();
    let mut run = Run::start(out_dir, opts, rows.len())?;
    let missing_prompts: Vec<String> = rows
        .iter()
        .filter(|r| r.gate.passed && r.rubrics.iter().any(|x| x.kind == RubricKind::Llm))
        .filter(|r| !by_key.contains_key(&(r.task.clone(), r.trial.clone())))
        .map(|r| format!("{} trial {}", r.task, r.trial))
        .collect();
    if !missing_prompts.is_empty() {
        return Err(RunError::Judge(format!(
            "{}/prompts.jsonl has no prompt for {}; rescore those with `redjury score`",
            run_dir.display(),
            missing_prompts.join(", ")
        )));
    }
    // The judges read the same documents: carry the views over.
    if let (true, Ok(entries)) = (opts.write_views, std::fs::read_dir(run_dir.join("views"))) {
        for e in entries.flatten() {
            let to = out_dir.join("views").join(e.file_name());
            std::fs::copy(e.path(), &to).map_err(|source| RunError::Write { path: to, source })?;
        }
    }
    for batch in rows.chunks(BATCH) {
        let mut items = Vec::with_capacity(batch.len());
        for row in batch {
            let mut row = row.clone();
            for r in row.rubrics.iter_mut().filter(|r| r.kind == RubricKind::Llm) {
                r.verdict = None;
                r.votes.clear();
                r.justifications.clear();
                r.abstentions.clear();
            }
            let prompt = match by_key.get(&(row.task.clone(), row.trial.clone())) {
                Some(reference) if row.gate.passed => Some(reference.resolve(&run.cache, run_dir)?),
                _ => None,
            };
            items.push(Item { row, prompt });
        }
        run.judge(items, opts).await?;
    }
    run.finish(old.missing, old.unmatched_outputs, out_dir, opts)
}

/// The state of one run across batches.
struct Run {
    cache: Arc<Cache>,
    judges: Vec<Arc<Judge>>,
    dry: bool,
    rows: Vec<TaskResult>,
    prompts: Vec<PromptRecord>,
    estimates: BTreeMap<String, Estimate>,
    /// Prompt prefixes seen (a dry run's estimate of shareable input).
    prefixes: HashSet<String>,
    bar: Option<indicatif::ProgressBar>,
}

impl Run {
    fn start(out_dir: &Path, opts: &RunOptions, items: usize) -> Result<Run, RunError> {
        let dir = if opts.write_views { out_dir.join("views") } else { out_dir.to_path_buf() };
        std::fs::create_dir_all(&dir).map_err(|source| RunError::Write { path: dir.clone(), source })?;
        let cache = Arc::new(Cache::open(&opts.cache_path)?);
        let judges: Vec<Arc<Judge>> = opts
            .panel
            .judges
            .iter()
            .map(|c| Judge::from_env(c.clone()).map(Arc::new))
            .collect::<Result<_, _>>()
            .map_err(RunError::Judge)?;
        let dry = opts.dry_run || !judges.iter().any(|j| j.has_key());
        let calls = items as u64 * judges.iter().map(|j| u64::from(j.config.repeats)).sum::<u64>();
        let bar = if dry { None } else { progress_bar(opts.progress, calls) };
        Ok(Run { cache, judges, dry, rows: Vec::new(), prompts: Vec::new(), estimates: BTreeMap::new(), prefixes: HashSet::new(), bar })
    }

    /// Judges one batch (or estimates it, in a dry run), votes, settles.
    async fn judge(&mut self, mut items: Vec<Item>, opts: &RunOptions) -> Result<(), RunError> {
        for item in &items {
            if let Some(p) = &item.prompt {
                self.cache.put_prompt(p)?;
                self.prompts.push(PromptRecord::of(&item.row.task, &item.row.trial, p));
            }
        }
        if self.dry {
            for j in &self.judges {
                let e = self.estimates.entry(j.config.name.clone()).or_default();
                for item in &items {
                    let Some(p) = &item.prompt else { continue };
                    for repeat in 0..j.config.repeats {
                        if j.is_cached(p, repeat, &self.cache) {
                            e.cached_calls += 1;
                            continue;
                        }
                        e.calls += 1;
                        e.input_tokens += p.estimated_tokens();
                        if !self.prefixes.insert(format!("{}\u{1f}{}", j.config.name, crate::hash::sha256_hex(&p.user_prefix))) {
                            e.shared_prefix_tokens += p.estimated_prefix_tokens();
                        }
                        e.max_output_tokens += u64::from(j.config.max_output_tokens);
                    }
                }
            }
            for mut item in items {
                item.row.settle(true);
                self.rows.push(item.row);
            }
            return Ok(());
        }

        // Fan out one call per distinct (judge, prompt, repeat): identical
        // outputs (say, trials that produced the same file) share a call
        // instead of paying for it twice. Each judge paces itself.
        let started = std::time::Instant::now();
        let mut set = tokio::task::JoinSet::new();
        let mut wanted: BTreeMap<(usize, String, u32), Vec<usize>> = BTreeMap::new();
        for (ii, item) in items.iter().enumerate() {
            let Some(prompt) = &item.prompt else { continue };
            for (ji, judge) in self.judges.iter().enumerate() {
                for repeat in 0..judge.config.repeats {
                    let waiting = wanted.entry((ji, prompt.hash.clone(), repeat)).or_default();
                    if waiting.is_empty() {
                        let (judge, cache, prompt) = (judge.clone(), self.cache.clone(), prompt.clone());
                        set.spawn(async move { (ji, prompt.hash.clone(), repeat, judge.call(&prompt, repeat, &cache).await) });
                    }
                    waiting.push(ii);
                }
            }
        }
        let mut results: BTreeMap<(usize, usize), Vec<CallResult>> = BTreeMap::new();
        while let Some(joined) = set.join_next().await {
            let (ji, hash, repeat, result) = joined.map_err(|e| RunError::Judge(format!("a judge call crashed: {e}")))?;
            let waiting = wanted.get(&(ji, hash, repeat)).map(Vec::as_slice).unwrap_or(&[]);
            for &ii in waiting {
                results.entry((ii, ji)).or_default().push(result.clone());
            }
            if let Some(bar) = &self.bar {
                bar.inc(waiting.len() as u64);
                let (mut hits, mut retries, mut failures, mut tokens) = (0, 0, 0, 0);
                for j in &self.judges {
                    let c = j.counters.snapshot();
                    hits += c.cache_hits;
                    retries += c.retries;
                    failures += c.failures;
                    tokens += c.input_tokens + c.output_tokens;
                }
                bar.set_message(format!("cache hits {hits} · retries {retries} · failures {failures} · tokens {tokens}"));
            }
        }
        for (ii, mut item) in items.drain(..).enumerate() {
            if item.prompt.is_some() {
                for rubric in item.row.rubrics.iter_mut().filter(|r| r.kind == RubricKind::Llm) {
                    let mut votes = Vec::with_capacity(self.judges.len());
                    for (ji, judge) in self.judges.iter().enumerate() {
                        let name = &judge.config.name;
                        let calls = results.get(&(ii, ji)).map(Vec::as_slice).unwrap_or(&[]);
                        let (vote, justification, abstention) = combine_repeats(calls, &rubric.id);
                        rubric.votes.insert(name.clone(), vote);
                        if let Some(j) = justification {
                            rubric.justifications.insert(name.clone(), j);
                        }
                        if let Some(a) = abstention {
                            rubric.abstentions.insert(name.clone(), a);
                        }
                        votes.push(vote);
                    }
                    rubric.verdict = panel::decide(&votes, opts.panel.quorum);
                }
            }
            item.row.settle(false);
            self.rows.push(item.row);
        }
        tracing::info!("judged a batch in {:?}", started.elapsed());
        Ok(())
    }

    fn finish(self, missing: Vec<String>, unmatched: Vec<String>, out_dir: &Path, opts: &RunOptions) -> Result<RunReport, RunError> {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        let mut summary = Summary::build(&self.rows, missing, unmatched, opts.bootstrap);
        summary.dry_run = self.dry;
        summary.quorum = opts.panel.quorum;
        summary.template_version = opts.templates.version.clone();
        for j in &self.judges {
            let c = j.counters.snapshot();
            let mut s = JudgeSummary {
                provider: j.config.provider.as_str().into(),
                model: j.config.model.clone(),
                api_key_env: j.config.api_key_env.clone(),
                has_key: j.has_key(),
                counters: c,
                cached_share: (c.input_tokens > 0).then(|| c.cached_tokens as f64 / c.input_tokens as f64),
                cost: opts.prices.cost(&j.config.model, c.input_tokens, c.cached_tokens, c.output_tokens),
                estimate: None,
            };
            if self.dry {
                let mut e = self.estimates.get(&j.config.name).cloned().unwrap_or_default();
                e.max_cost_usd = opts.prices.cost(&j.config.model, e.input_tokens, 0, e.max_output_tokens);
                s.estimate = Some(e);
            }
            summary.judges.insert(j.config.name.clone(), s);
        }
        report::write_run(out_dir, &self.rows, &summary, &self.prompts)
            .map_err(|source| RunError::Write { path: out_dir.to_path_buf(), source })?;
        if let Err(e) = self.cache.checkpoint() {
            tracing::warn!("{e}");
        }
        let end = if self.dry {
            RunEnd::DryRun
        } else if summary.counts.incomplete > 0 {
            RunEnd::Incomplete
        } else {
            RunEnd::Complete
        };
        Ok(RunReport { summary, end, out_dir: out_dir.to_path_buf() })
    }
}

/// One judge's vote on one rubric from its repeats: the strict majority of
/// its valid answers (ties FAIL, as for the panel), `None` if none.
fn combine_repeats(calls: &[CallResult], rubric: &str) -> (Option<Verdict>, Option<String>, Option<String>) {
    let mut verdicts = Vec::new();
    let mut justification = None;
    let mut abstention = None;
    for call in calls {
        match call.votes.get(rubric) {
            Some(JudgeVote::Verdict { verdict, justification: j }) => {
                verdicts.push(Some(*verdict));
                justification.get_or_insert_with(|| j.clone());
            }
            Some(JudgeVote::Abstain { reason }) => {
                abstention.get_or_insert_with(|| reason.clone());
            }
            None => {
                abstention.get_or_insert_with(|| "not asked".to_string());
            }
        }
    }
    let vote = panel::decide(&verdicts, 1);
    (vote, justification, if vote.is_none() { abstention } else { None })
}

fn progress_bar(enabled: bool, total: u64) -> Option<indicatif::ProgressBar> {
    if !enabled || !std::io::stderr().is_terminal() || total == 0 {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} judge calls · {msg} · ETA {eta}") {
        bar.set_style(style);
    }
    Some(bar)
}
