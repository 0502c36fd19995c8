//! Results folders: what a run writes, how it reads back, the readable
//! summary, and the comparison of two runs.
//!
//! Owns: the file contracts — `results.jsonl`, `summary.json`,
//! `summary.md`, `rewards.jsonl` (the training contract), `prompts.jsonl`,
//! `views/` — and writing each atomically (a temporary file renamed into
//! place). Must never write a reward for a row that has none.

pub(crate) mod html;
pub(crate) mod markdown;
mod summary;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) use summary::{Estimate, JudgeSummary, Unusable};
pub use summary::{Shard, Summary};

use crate::prompt::Prompt;
use crate::score::{Status, TaskResult};

/// One line of prompts.jsonl: which prompt the judges read for a task ×
/// trial. The text itself is stored once, content-addressed, in the cache
/// (`rejudge` reads it from there, so it needs no .docx).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PromptRecord {
    /// The task.
    pub task: String,
    /// The trial.
    pub trial: String,
    /// The prompt's hash (its text is in the cache).
    pub prompt_hash: String,
    /// The templates' version.
    pub template_version: String,
    /// The rubrics it asks about.
    pub rubric_ids: Vec<String>,
}

impl PromptRecord {
    /// The record of one row's prompt.
    pub(crate) fn of(task: &str, trial: &str, p: &Prompt) -> PromptRecord {
        PromptRecord {
            task: task.to_string(),
            trial: trial.to_string(),
            prompt_hash: p.hash.clone(),
            template_version: p.template_version.clone(),
            rubric_ids: p.rubric_ids.clone(),
        }
    }
}

/// One line of rewards.jsonl — the training contract.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct RewardLine {
    /// The task.
    pub task: String,
    /// The trial.
    pub trial: String,
    /// The reward, unrounded, in [0, 1].
    pub reward: f64,
}

/// Writes view files on a thread of its own, so that disk writes overlap
/// with rendering and judging. The queue is bounded: memory stays flat.
/// (Views are not synced one by one: a rerun rewrites any a crash lost.)
pub(crate) struct ViewWriter {
    sender: Option<std::sync::mpsc::SyncSender<(String, String)>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    dir: PathBuf,
}

impl ViewWriter {
    /// Starts the writer thread for a views folder.
    pub(crate) fn start(views_dir: &Path) -> std::io::Result<ViewWriter> {
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
    pub(crate) fn write(&self, name: String, text: String) -> std::io::Result<()> {
        match &self.sender {
            Some(s) => s.send((name, text)).map_err(|_| {
                std::io::Error::other(format!("the view writer for {} stopped", self.dir.display()))
            }),
            None => Ok(()),
        }
    }

    /// Waits for every queued view to be written.
    pub(crate) fn finish(mut self) -> std::io::Result<()> {
        drop(self.sender.take());
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the view writer thread panicked")),
            None => Ok(()),
        }
    }
}

/// Writes a file under a temporary name, syncs it, and renames it into place.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!(
        "{}.tmp-{}",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
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

/// Writes a run folder's files (the views are written as outputs are
/// rendered, by the pipeline).
pub(crate) fn write_run(
    out: &Path,
    rows: &[TaskResult],
    summary: &Summary,
    prompts: &[PromptRecord],
) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    write_atomic(&out.join("prompts.jsonl"), &jsonl(prompts))?;
    let rewards: Vec<RewardLine> = rows
        .iter()
        .filter(|r| r.counts())
        .filter_map(|r| {
            Some(RewardLine { task: r.task.clone(), trial: r.trial.clone(), reward: r.reward? })
        })
        .collect();
    write_atomic(&out.join("rewards.jsonl"), &jsonl(&rewards))?;
    write_atomic(&out.join("results.jsonl"), &jsonl(rows))?;
    write_summary(out, summary)
}

/// Writes `summary.json` and `summary.md`.
pub fn write_summary(out: &Path, summary: &Summary) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(summary).map_err(std::io::Error::other)?;
    write_atomic(&out.join("summary.json"), &json)?;
    write_atomic(&out.join("summary.md"), markdown::summary(summary).as_bytes())
}

/// A results folder that grows one row at a time (the reward service's):
/// each row is appended to `results.jsonl`, `rewards.jsonl` and
/// `prompts.jsonl` and flushed before the next, so a killed process keeps
/// every row it answered.
///
/// A row already logged for the same output (task, trial and the
/// document's digest) with the same outcome is not written again — a
/// trainer asking again is counted as a repeat — and `results.jsonl` is
/// sealed as `results.N.jsonl` when it passes the segment size; readers
/// take the segments in order, then `results.jsonl`.
pub(crate) struct ResultsLog {
    dir: PathBuf,
    state: std::sync::Mutex<LogState>,
    segment_bytes: u64,
    repeats: std::sync::atomic::AtomicU64,
}

struct LogState {
    files: [std::fs::File; 3],
    /// Bytes in the open `results.jsonl`.
    results_bytes: u64,
    /// The outcome last logged per output (its key: a digest of task,
    /// trial and document), bounded: when full it starts again, and a row
    /// logged twice is the same row to every reader (the last per trial).
    logged: HashMap<[u8; 16], [u8; 16]>,
}

/// Outputs remembered as logged, at most (about 40 MB).
const MAX_LOGGED: usize = 1_000_000;

impl ResultsLog {
    /// Opens (or creates) the folder, appending to what is there;
    /// `results.jsonl` is sealed into a segment past `segment_bytes`.
    pub(crate) fn open(dir: &Path, segment_bytes: u64) -> std::io::Result<ResultsLog> {
        std::fs::create_dir_all(dir)?;
        let open =
            |name: &str| std::fs::OpenOptions::new().create(true).append(true).open(dir.join(name));
        let files = [open("results.jsonl")?, open("rewards.jsonl")?, open("prompts.jsonl")?];
        let results_bytes = files[0].metadata()?.len();
        Ok(ResultsLog {
            dir: dir.to_path_buf(),
            state: std::sync::Mutex::new(LogState { files, results_bytes, logged: HashMap::new() }),
            segment_bytes: segment_bytes.max(1),
            repeats: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Appends one row of the output whose bytes hash to `document` (and
    /// its reward and prompt record, when it has them), unless the same
    /// output's row was logged with the same outcome: that is a repeat.
    pub(crate) fn append(
        &self,
        row: &TaskResult,
        prompt: Option<&PromptRecord>,
        document: &str,
    ) -> std::io::Result<()> {
        let key = digest16(&[row.task.as_bytes(), row.trial.as_bytes(), document.as_bytes()]);
        let outcome = outcome_of(row);
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.logged.get(&key) == Some(&outcome) {
            self.repeats.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Ok(());
        }
        let line = jsonl(std::slice::from_ref(row));
        if state.results_bytes > 0 && state.results_bytes + line.len() as u64 > self.segment_bytes {
            self.seal(&mut state)?;
        }
        let [results, rewards, prompts] = &mut state.files;
        results.write_all(&line)?;
        if let (true, Some(reward)) = (row.counts(), row.reward) {
            let line = RewardLine { task: row.task.clone(), trial: row.trial.clone(), reward };
            rewards.write_all(&jsonl(&[line]))?;
        }
        if let Some(p) = prompt {
            prompts.write_all(&jsonl(std::slice::from_ref(p)))?;
        }
        state.results_bytes += line.len() as u64;
        if state.logged.len() >= MAX_LOGGED {
            state.logged.clear();
        }
        state.logged.insert(key, outcome);
        Ok(())
    }

    /// Renames `results.jsonl` to the next free `results.N.jsonl` and starts
    /// a new one.
    fn seal(&self, state: &mut LogState) -> std::io::Result<()> {
        let n = segments(&self.dir)?.last().map_or(1, |(n, _)| n + 1);
        let sealed = self.dir.join(format!("results.{n}.jsonl"));
        if sealed.exists() {
            return Err(std::io::Error::other(format!("{} exists", sealed.display())));
        }
        state.files[0].sync_all()?;
        std::fs::rename(self.dir.join("results.jsonl"), &sealed)?;
        state.files[0] = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("results.jsonl"))?;
        state.results_bytes = 0;
        Ok(())
    }

    /// Requests answered with a row already logged.
    pub(crate) fn repeats(&self) -> u64 {
        self.repeats.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The folder.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The first 16 bytes of the SHA-256 of `parts`, each length-prefixed.
fn digest16(parts: &[&[u8]]) -> [u8; 16] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    let full = h.finalize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&full[..16]);
    out
}

/// What a row says, for telling a repeat from a new outcome (an
/// incomplete row completed later is logged again).
fn outcome_of(row: &TaskResult) -> [u8; 16] {
    let reward = row.reward.map(f64::to_bits).unwrap_or(u64::MAX).to_le_bytes();
    let prompt = row.prompt_hash.as_deref().unwrap_or("");
    digest16(&[row.status.as_str().as_bytes(), &reward, prompt.as_bytes()])
}

/// The sealed segments `results.N.jsonl` of a folder, in order.
fn segments(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let Some(n) = name
            .to_str()
            .and_then(|n| n.strip_prefix("results."))
            .and_then(|n| n.strip_suffix(".jsonl"))
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        out.push((n, entry.path()));
    }
    out.sort();
    Ok(out)
}

#[derive(Debug, thiserror::Error)]
/// Why a results folder could not be read.
#[non_exhaustive]
pub enum ReportError {
    #[error("{path}: {message}")]
    #[allow(missing_docs)]
    Read { path: PathBuf, message: String },
}

/// Reads a run folder back.
pub fn load_run(dir: &Path) -> Result<(Vec<TaskResult>, Summary), ReportError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|e| ReportError::Read {
            path,
            message: format!("{e} (is this a redjury run folder?)"),
        })
    };
    let mut rows = Vec::new();
    let sealed = segments(dir).map_err(|e| ReportError::Read {
        path: dir.to_path_buf(),
        message: format!("{e} (is this a redjury run folder?)"),
    })?;
    for (_, path) in &sealed {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        rows.extend(read_rows(dir, &name, &read(&name)?)?);
    }
    rows.extend(read_rows(dir, "results.jsonl", &read("results.jsonl")?)?);
    let rows = latest_per_trial(rows);
    // A folder the reward service is still appending to may hold rows its
    // last summary does not count: the rows are the record.
    let summary = match std::fs::read_to_string(dir.join("summary.json")) {
        Ok(text) => {
            let written: Summary = serde_json::from_str(&text).map_err(|e| ReportError::Read {
                path: dir.join("summary.json"),
                message: e.to_string(),
            })?;
            up_to_date(written, &rows)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let boot = crate::aggregate::Bootstrap::default();
            Summary::build(&rows, Vec::new(), Vec::new(), boot, None)
        }
        Err(e) => {
            return Err(ReportError::Read {
                path: dir.join("summary.json"),
                message: e.to_string(),
            });
        }
    };
    Ok((rows, summary))
}

/// The rows of one results file, each checked.
fn read_rows(dir: &Path, name: &str, text: &str) -> Result<Vec<TaskResult>, ReportError> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        match serde_json::from_str::<TaskResult>(line) {
            Ok(row) => {
                row_is_sound(&row).map_err(|message| ReportError::Read {
                    path: dir.join(name),
                    message: format!("line {}: {message}", i + 1),
                })?;
                rows.push(row);
            }
            // A process killed mid-write leaves its last row unfinished
            // (no newline): that row was never answered, so it is skipped.
            Err(_) if !text.ends_with('\n') && text.lines().count() == i + 1 => {
                tracing::warn!("{}: skipping an unfinished last line", dir.display());
            }
            Err(e) => {
                return Err(ReportError::Read {
                    path: dir.join(name),
                    message: format!("line {}: {e}", i + 1),
                });
            }
        }
    }
    Ok(rows)
}

/// What a row read back must hold: plain task and trial names (they become
/// file names and are shown as they are), and a reward that agrees with
/// its status — in 0..=1 when scored, 0 when the gate failed, none when
/// incomplete or pending.
fn row_is_sound(row: &TaskResult) -> Result<(), String> {
    crate::task::check_plain_name("task", &row.task)?;
    crate::task::check_plain_name("trial", &row.trial)?;
    let bad = match (row.status, row.reward) {
        (Status::Scored, Some(r)) if (0.0..=1.0).contains(&r) => None,
        (Status::GateFailed, Some(0.0)) => None,
        (Status::Incomplete | Status::Pending, None) => None,
        (status, reward) => Some((status, reward)),
    };
    match bad {
        None => Ok(()),
        Some((status, reward)) => Err(format!(
            "row {} trial {} is {} with reward {}: a scored row's reward is in 0..1, a gate failure's is 0, and an incomplete or pending row has none",
            row.task,
            row.trial,
            status.as_str(),
            reward.map(|r| r.to_string()).unwrap_or_else(|| "null".into())
        )),
    }
}

/// A summary that counts other rows than results.jsonl holds (written
/// before rows were appended, or edited) has its figures rebuilt from the
/// rows, and says so; its judges' figures are kept.
fn up_to_date(written: Summary, rows: &[TaskResult]) -> Summary {
    let counted = crate::aggregate::counts(rows, written.counts.missing_outputs);
    if counted == written.counts {
        return written;
    }
    let boot = written.bootstrap.unwrap_or_default();
    let model = written.ci95_reference.as_ref().and_then(|r| r.model.clone());
    let mut fresh = Summary::build(
        rows,
        written.missing.clone(),
        written.unmatched_outputs.clone(),
        boot,
        model.as_deref(),
    );
    fresh.notes = written.notes.clone();
    fresh.notes.push(format!(
        "summary.json counted {} results and results.jsonl holds {}: the figures were rebuilt from the rows",
        written.counts.results, counted.results
    ));
    Summary {
        dry_run: written.dry_run,
        judges: written.judges,
        quorum: written.quorum,
        template_version: written.template_version,
        unusable_outputs: written.unusable_outputs,
        ..fresh
    }
}

/// The last row of each task × trial, in the order of those last rows: a
/// reward service asked twice for one trial (a retry after a timeout)
/// appends it twice, and the later answer is the one that counts.
fn latest_per_trial(rows: Vec<TaskResult>) -> Vec<TaskResult> {
    let mut last = std::collections::HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        last.insert((r.task.clone(), r.trial.clone()), i);
    }
    rows.into_iter()
        .enumerate()
        .filter(|(i, r)| last.get(&(r.task.clone(), r.trial.clone())) == Some(i))
        .map(|(_, r)| r)
        .collect()
}

/// Unix seconds as a UTC time, "2026-12-01 09:30:00".
pub(crate) fn utc(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = crate::calendar::civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Reads a run's prompts.jsonl.
pub(crate) fn load_prompts(dir: &Path) -> Result<Vec<PromptRecord>, ReportError> {
    let path = dir.join("prompts.jsonl");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ReportError::Read { path: path.clone(), message: e.to_string() })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| ReportError::Read {
                path: path.clone(),
                message: format!("line {}: {e}", i + 1),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_times() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(utc(1_796_083_199), "2026-11-30 23:59:59");
    }
    use crate::aggregate::Bootstrap;
    use crate::check::gate::GateResult;
    use crate::score::Status;
    use crate::task::Side;

    fn row(task: &str, status: Status, reward: Option<f64>) -> TaskResult {
        TaskResult {
            task: task.into(),
            trial: "1".into(),
            scenario: "1".into(),
            turn: 1,
            side: Side::A,
            group: "s1-t1-g01".into(),
            variant: Some("a".into()),
            status,
            gate: GateResult {
                passed: status != Status::GateFailed,
                reason: "why".into(),
                revisions: 0,
                comments: 0,
                untracked: 0,
            },
            reward,
            earned: None,
            penalty: None,
            total_positive: 5,
            prompt_hash: None,
            reason: (status == Status::Incomplete)
                .then(|| "quorum not met — j: no API key".to_string()),
            rubrics: vec![],
            edits: None,
            expert: None,
        }
    }

    #[test]
    fn a_run_folder_round_trips_and_rewards_hold_only_counted_rows() {
        let dir = std::env::temp_dir().join(format!("redjury-report-{}", std::process::id()));
        let rows = vec![
            row("redline-s1-t1-g01a", Status::Scored, Some(0.123456789)),
            row("redline-s1-t1-g01b", Status::GateFailed, Some(0.0)),
            row("redline-s1-t1-g01c", Status::Incomplete, None),
        ];
        let summary =
            Summary::build(&rows, vec![], vec![], Bootstrap { seed: 0, resamples: 100 }, None);
        write_run(&dir, &rows, &summary, &[]).expect("writes");
        let (back, back_summary) = load_run(&dir).expect("reads");
        assert_eq!(back, rows);
        assert_eq!(back_summary, summary);
        let rewards = std::fs::read_to_string(dir.join("rewards.jsonl")).expect("rewards");
        assert_eq!(
            rewards,
            "{\"task\":\"redline-s1-t1-g01a\",\"trial\":\"1\",\"reward\":0.123456789}\n{\"task\":\"redline-s1-t1-g01b\",\"trial\":\"1\",\"reward\":0.0}\n",
            "unrounded, and never a reward for an incomplete row"
        );
        let md = std::fs::read_to_string(dir.join("summary.md")).expect("summary.md");
        assert!(
            md.contains(
                "> **Headline over 2 of 3 results.** 1 incomplete, 1 gate-failed (scored 0)."
            ),
            "{md}"
        );
        assert!(
            md.contains("- 1 row — quorum not met — j: no API key\n  redline-s1-t1-g01c"),
            "{md}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_banner_over_a_complete_run() {
        let rows = vec![row("redline-s1-t1-g01a", Status::Scored, Some(1.0))];
        let summary =
            Summary::build(&rows, vec![], vec![], Bootstrap { seed: 0, resamples: 100 }, None);
        assert_eq!(markdown::banner(&summary), None);
        assert!(!markdown::summary(&summary).contains("What the figures leave out"));
    }
}
