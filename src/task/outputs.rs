//! Finding the model outputs to score, in every layout we accept.
//!
//! Owns: output discovery. Must never drop an output silently: a file that
//! looks like an output but matches no task is returned as unmatched.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::TaskError;

/// One output file to score: a trial of a task.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Output {
    /// The task's name.
    pub task: String,
    /// The trial ("1" unless the layout names one).
    pub trial: String,
    /// The file.
    pub path: PathBuf,
}

/// What output discovery found.
#[derive(Debug, Default)]
pub struct Outputs {
    /// Outputs matched to a task.
    pub found: Vec<Output>,
    /// Output-looking files whose task is not among the tasks loaded.
    pub unmatched: Vec<PathBuf>,
    /// Files named after a task that cannot be scored, with the reason
    /// (a legacy .doc, a PDF, …).
    pub unusable: Vec<(PathBuf, String)>,
}

/// Why a file named like an output cannot be scored; `None` for a .docx,
/// an .xlsx or a PDF (each task says which it expects, and the gate fails
/// an output of another kind with that reason).
pub(crate) fn unusable_reason(path: &Path) -> Option<String> {
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
    match ext.as_str() {
        // A spreadsheet output (a term sheet filled from an agreement).
        "docx" | "xlsx" | "pdf" => None,
        "doc" => Some("a legacy Word 97-2003 .doc: open it in Word and save it as .docx".into()),
        "docm" | "dotx" | "dotm" => {
            Some(format!("a Word .{ext} file: save it as a Word Document (.docx)"))
        }
        "odt" | "fodt" => {
            Some("an OpenDocument text: save it as Word (.docx) with changes still tracked".into())
        }
        "rtf" => Some("an RTF file: save it as .docx".into()),
        "" => Some("no file extension: outputs must be .docx files".into()),
        other => Some(format!("not a .docx (.{other}): outputs must be Word .docx files")),
    }
}

/// `name` minus its extension when the rest is a known task.
fn task_stem<'a>(name: &'a str, known: &HashSet<&str>) -> Option<&'a str> {
    let (stem, _) = name.rsplit_once('.')?;
    known.contains(stem).then_some(stem)
}

/// Finds outputs under `dir` for the given task names, in every layout we
/// accept: `<task>.docx`, `<task>/contract.docx`,
/// `<task>/<trial>/contract.docx`, and Harbor job folders whose trials hold
/// `artifacts/contract.docx` or `artifacts/app/contract.docx`.
pub fn find_outputs(dir: &Path, task_names: &[String]) -> Result<Outputs, TaskError> {
    if !dir.exists() {
        return Err(TaskError::no_folder("--outputs", dir));
    }
    let known: HashSet<&str> = task_names.iter().map(String::as_str).collect();
    let mut out = Outputs::default();
    let read = |d: &Path| -> Result<Vec<PathBuf>, TaskError> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map_err(|source| TaskError::Io { path: d.to_path_buf(), source })?
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        Ok(v)
    };
    let mut harbor_roots = vec![dir.to_path_buf()];
    // A Harbor jobs folder holds job folders, each holding trial folders.
    for p in read(dir)? {
        if p.is_dir() && !known.contains(file_name(&p).as_str()) && !is_trial(&p) {
            harbor_roots.push(p);
        }
    }
    for p in read(dir)? {
        let name = file_name(&p);
        if p.is_file() {
            match (task_stem(&name, &known), unusable_reason(&p)) {
                (Some(task), None) => {
                    out.found.push(Output { task: task.to_string(), trial: "1".into(), path: p })
                }
                (Some(_), Some(why)) => out.unusable.push((p, why)),
                (None, None) => out.unmatched.push(p),
                (None, Some(_)) => {}
            }
        } else if p.is_dir() && known.contains(name.as_str()) {
            contracts_in(&p, &name, "1", &mut out)?;
            for trial in read(&p)? {
                if trial.is_dir() {
                    contracts_in(&trial, &name, &file_name(&trial), &mut out)?;
                }
            }
        }
    }
    for root in harbor_roots {
        for trial in read(&root)? {
            if !is_trial(&trial) {
                continue;
            }
            let artifact = [
                "artifacts/contract.docx",
                "artifacts/app/contract.docx",
                "artifacts/contract.xlsx",
                "artifacts/app/contract.xlsx",
                "artifacts/contract.pdf",
                "artifacts/app/contract.pdf",
            ]
            .iter()
            .map(|a| trial.join(a))
            .find(|a| a.is_file());
            let Some(artifact) = artifact else {
                continue;
            };
            match harbor_task_name(&trial) {
                Some(task) if known.contains(task.as_str()) => {
                    out.found.push(Output { task, trial: file_name(&trial), path: artifact });
                }
                _ => out.unmatched.push(artifact),
            }
        }
    }
    out.found.sort();
    out.found.dedup_by(|a, b| a.path == b.path);
    // Two files for one task × trial would give rewards.jsonl two lines
    // with one key: refuse rather than pick one.
    for pair in out.found.windows(2) {
        if pair[0].task == pair[1].task && pair[0].trial == pair[1].trial {
            return Err(TaskError::Invalid {
                path: pair[1].path.clone(),
                message: format!(
                    "a second output for task {} trial {} (the first is {}); keep one, or put trials in <task>/<trial>/contract.docx",
                    pair[0].task,
                    pair[0].trial,
                    pair[0].path.display()
                ),
            });
        }
    }
    Ok(out)
}

/// A `contract.docx` in `dir` is an output; a `contract.<other>` is
/// listed as unusable.
fn contracts_in(dir: &Path, task: &str, trial: &str, out: &mut Outputs) -> Result<(), TaskError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|source| TaskError::Io { path: dir.to_path_buf(), source })?;
    let mut contracts: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_stem().is_some_and(|s| s == "contract"))
        .collect();
    contracts.sort();
    for path in contracts {
        match unusable_reason(&path) {
            None => {
                out.found.push(Output { task: task.to_string(), trial: trial.to_string(), path })
            }
            Some(why) => out.unusable.push((path, why)),
        }
    }
    Ok(())
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// A Harbor trial folder has an `artifacts/` folder beside its config.
fn is_trial(p: &Path) -> bool {
    p.join("artifacts").is_dir()
}

/// The task a Harbor trial ran: `result.json` `task_name`, else
/// `config.json` `task.name` / the last segment of `task.path`, else the
/// folder name before `__`.
fn harbor_task_name(trial: &Path) -> Option<String> {
    let read_json = |f: &str| -> Option<serde_json::Value> {
        serde_json::from_str(&std::fs::read_to_string(trial.join(f)).ok()?).ok()
    };
    if let Some(name) =
        read_json("result.json").and_then(|v| v.get("task_name")?.as_str().map(str::to_string))
    {
        return Some(name);
    }
    if let Some(cfg) = read_json("config.json") {
        if let Some(name) = cfg.pointer("/task/name").and_then(|v| v.as_str()) {
            return Some(name.to_string());
        }
        if let Some(path) = cfg.pointer("/task/path").and_then(|v| v.as_str()) {
            let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or(path);
            return Some(last.to_string());
        }
    }
    file_name(trial).rsplit_once("__").map(|(task, _)| task.to_string())
}
