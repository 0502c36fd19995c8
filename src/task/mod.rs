//! Tasks and outputs on disk: rubric files in the reference task schema,
//! Harbor task folders, and the model outputs to score.
//!
//! Owns: validation of task files (with errors naming the file and the
//! problem) and the discovery of every output layout we accept. Must never
//! drop a task or an output silently: what cannot be matched is reported.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub(crate) mod check_spec;
mod file;
mod outputs;
pub(crate) mod reference;

pub(crate) use outputs::unusable_reason;
pub use outputs::{Output, Outputs, find_outputs};

/// Why tasks or outputs could not be read. The variants' fields are the
/// parts of their message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum TaskError {
    /// A file or folder cannot be read.
    #[error("cannot read {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// A task file (or an output) is not valid; the message lists every problem.
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
    /// The folder named for tasks (or outputs) does not exist.
    #[error("{what} {path}: no such folder (paths are relative to the current folder, {here})")]
    #[allow(missing_docs)]
    NoFolder { what: &'static str, path: PathBuf, here: String },
    /// The folder holds no task.
    #[error(
        "{dir}: no task files found (expected rubrics/<task>.json files or Harbor task folders with tests/rubrics.json)"
    )]
    Empty { dir: PathBuf },
    /// Two files define the same task name.
    #[error("task {name} is defined twice: {first} and {second}")]
    Duplicate { name: String, first: PathBuf, second: PathBuf },
    /// Several task files are invalid: each is listed.
    #[error("{} task files are invalid:\n{}", .0.len(), .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Several(Vec<TaskError>),
}

impl TaskError {
    /// `path`, named by the flag `what`, is not there.
    pub fn no_folder(what: &'static str, path: &Path) -> TaskError {
        let here = std::env::current_dir().map(|d| d.display().to_string()).unwrap_or_default();
        TaskError::NoFolder { what, path: path.to_path_buf(), here }
    }
}

/// Which side a task represents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Side {
    /// The side the reference calls A (in its scenarios, the vendor).
    A,
    /// The side the reference calls B.
    B,
}

impl Side {
    /// "A" or "B".
    pub fn as_str(self) -> &'static str {
        match self {
            Side::A => "A",
            Side::B => "B",
        }
    }
}

/// One attorney-written criterion.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rubric {
    /// The rubric's id, unique in its task.
    pub id: String,
    /// The PASS/FAIL condition.
    pub criteria: String,
    /// The attorney's rationale: context for the judge, not graded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub justification: String,
    /// The rubric dimension, as written ("Legal correctness").
    pub category: String,
    /// −10..=10, non-zero; negative = penalty for an undesirable edit.
    pub weight: i32,
    /// If this item is not met, the reward is 0 (`"required": true`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// A deterministic check (`"kind": "check"`); `None` = a judge item.
    #[serde(skip)]
    pub check: Option<check_spec::PreparedCheck>,
}

impl Rubric {
    /// A judge item.
    pub fn llm(id: &str, criteria: &str, category: &str, weight: i32) -> Rubric {
        Rubric {
            id: id.to_string(),
            criteria: criteria.to_string(),
            justification: String::new(),
            category: category.to_string(),
            weight,
            required: false,
            check: None,
        }
    }

    /// Whether a deterministic check grades this item (not a judge).
    pub fn is_check(&self) -> bool {
        self.check.is_some()
    }
}

/// The kind of file a task's output is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// A Word .docx with tracked changes and comments (the default).
    #[default]
    Redline,
    /// An .xlsx workbook (a term sheet, a checklist): the task says so with
    /// `"output": "xlsx"`, an `output_template` or an `xlsx_cells` check.
    Workbook,
    /// A PDF (a Bates production, an exhibit binder): the task says so
    /// with `"output": "pdf"` or a check that reads a PDF.
    Pdf,
}

impl OutputKind {
    /// The kind in a reader's words, for gate reasons.
    pub fn describe(self) -> &'static str {
        match self {
            OutputKind::Redline => "a .docx redline",
            OutputKind::Workbook => "an .xlsx workbook",
            OutputKind::Pdf => "a PDF",
        }
    }

    /// The kind a file's name promises (`.docx`, `.xlsx`, `.pdf`, any
    /// case), when it names one.
    pub fn named_by(path: &Path) -> Option<OutputKind> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "docx" => Some(OutputKind::Redline),
            "xlsx" => Some(OutputKind::Workbook),
            "pdf" => Some(OutputKind::Pdf),
            _ => None,
        }
    }

    /// The kind a file's bytes are, by their signature.
    pub(crate) fn of_content(bytes: &[u8]) -> OutputKind {
        if crate::pdf::is_pdf(bytes) {
            OutputKind::Pdf
        } else if crate::xlsx::is_xlsx(bytes) {
            OutputKind::Workbook
        } else {
            OutputKind::Redline
        }
    }
}

/// A file a task names (`"input"`, `"output_template"`, `"gold_docx"`),
/// relative to the task file's folder `base`: its path, and how to name it
/// in an error — the path as written and where it resolved, so that a task
/// folder copied elsewhere says which relative path broke and why.
pub(crate) fn named_file(written: &str, base: &Path) -> (PathBuf, String) {
    let joined = base.join(written);
    let mut resolved = PathBuf::new();
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                resolved.pop();
            }
            std::path::Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    let shown = if Path::new(written).is_absolute() {
        format!("{written:?}")
    } else {
        format!(
            "{written:?} is {}, resolved from the task file's folder {}",
            resolved.display(),
            base.display()
        )
    };
    (resolved, shown)
}

/// The reason a named file could not be read, without repeating its path.
pub(crate) fn unreadable(e: &crate::docx::DocxError) -> String {
    match e {
        crate::docx::DocxError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// Checks that a task or trial name read from a file or a request is a
/// plain name, one that may become part of a file name (`views/<name>.md`)
/// and be shown as it is: 1 to 200 characters, no path separator, not `.`
/// or `..`, no control character and no bidirectional formatting character
/// (which can make one id look like another). `Err` says what is wrong.
pub(crate) fn check_plain_name(what: &str, name: &str) -> Result<(), String> {
    let bidi = |c: char| matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let why = if name.is_empty() || name.chars().count() > 200 {
        "must be 1 to 200 characters"
    } else if name.contains(['/', '\\']) || name == "." || name == ".." {
        "must not be or hold a path (no /, \\, . or ..)"
    } else if name.chars().any(|c| c.is_control() || bidi(c)) {
        "must not hold control or bidirectional formatting characters"
    } else {
        return Ok(());
    };
    Err(format!("{what} {name:?} {why}"))
}

/// A task: one output to score against one rubric set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Task {
    /// The task name (`redline-s1-t2-g01a`).
    pub name: String,
    /// Scenario key, normalised: "s1" and 1 both read as "1".
    pub scenario: String,
    /// The scenario's name, when the task gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_label: Option<String>,
    /// The side this task's output represents.
    pub side: Side,
    /// The negotiation turn (`level`).
    pub turn: u32,
    /// `s{S}-t{T}-g{NN}`: tasks sharing it have identical model input.
    pub input_group: String,
    /// The rubric-set variant within the group (a, b, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The party this side acts for.
    pub represented_party: String,
    /// The other party.
    pub counterparty: String,
    /// The tracked-change author the output must use.
    pub author: String,
    /// The rubric items, judge items and checks alike.
    pub rubrics: Vec<Rubric>,
    /// Where the task was read from.
    #[serde(skip)]
    pub source: PathBuf,
    /// The task's input document (`"input"`, relative to the task file; a
    /// Harbor task's environment/app/contract.docx), when known.
    #[serde(skip)]
    pub input: Option<PathBuf>,
    /// The input, parsed (for the gate and the scope check).
    #[serde(skip)]
    pub input_doc: Option<std::sync::Arc<crate::docx::Document>>,
    /// The input when it is a PDF (an exhibit to stamp), parsed: an
    /// output whose pages all equal it fails the gate.
    #[serde(skip)]
    pub input_pdf: Option<std::sync::Arc<crate::pdf::Pdf>>,
    /// The edits of the task's expert redline (`"expert"`, or a Harbor
    /// task's tests/attorney_redlines.docx), every author's, for the
    /// surgicalness and verbosity baselines.
    pub expert: Option<std::sync::Arc<crate::docx::Edits>>,
    /// SHA-256 of the input's bytes (part of the render cache key: the gate
    /// depends on the input).
    #[serde(skip)]
    pub input_sha: Option<String>,
    /// The spreadsheet an .xlsx output is filled in from
    /// (`"output_template"`): returned unchanged, it fails the gate.
    #[serde(skip)]
    pub output_template: Option<std::sync::Arc<crate::xlsx::Workbook>>,
    /// What kind of file the output must be: an output of another kind
    /// fails the gate, whatever its name.
    #[serde(default)]
    pub output: OutputKind,
    /// The reference benchmark's rules this task breaks, each a sentence
    /// (it still loads; [`read_task_files`] warns once per rule).
    #[serde(skip)]
    pub reference_breaks: Vec<String>,
    /// False when the task says it knowingly leaves the reference schema
    /// (`"reference": false`): its breaks are not warned about.
    #[serde(skip)]
    pub follows_reference: bool,
}

impl Task {
    /// A task whose scenario, turn, input group and variant are read from
    /// its name (`redline-s{S}-t{T}-g{NN}{v}`; another name gives scenario
    /// "1", turn 1 and the name as its group). Parties default to "Side A"
    /// and "Side B"; set the public fields for anything else.
    pub fn named(name: &str, side: Side, author: &str, rubrics: Vec<Rubric>) -> Task {
        let parsed = parse_task_name(name);
        let (us, them) = match side {
            Side::A => ("Side A", "Side B"),
            Side::B => ("Side B", "Side A"),
        };
        Task {
            name: name.to_string(),
            scenario: parsed.as_ref().map(|p| p.scenario.clone()).unwrap_or_else(|| "1".into()),
            scenario_label: None,
            side,
            turn: parsed.as_ref().map(|p| p.turn).unwrap_or(1),
            input_group: parsed
                .as_ref()
                .map(|p| p.group.clone())
                .unwrap_or_else(|| name.to_string()),
            variant: parsed.and_then(|p| p.variant),
            represented_party: us.into(),
            counterparty: them.into(),
            author: author.to_string(),
            rubrics,
            source: PathBuf::new(),
            input: None,
            input_doc: None,
            input_pdf: None,
            expert: None,
            input_sha: None,
            output_template: None,
            output: OutputKind::Redline,
            reference_breaks: Vec::new(),
            follows_reference: true,
        }
    }

    /// The judge items (everything but checks).
    pub fn llm_rubrics(&self) -> impl Iterator<Item = &Rubric> {
        self.rubrics.iter().filter(|r| !r.is_check())
    }
}

/// The parts of a task name `redline-s{S}-t{T}-g{NN}{variant}`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TaskName {
    /// The scenario number.
    pub scenario: String,
    /// The turn.
    pub turn: u32,
    /// `s{S}-t{T}-g{NN}`.
    pub group: String,
    /// The variant letter(s), if any.
    pub variant: Option<String>,
}

/// Parses `redline-s{S}-t{T}-g{NN}{variant}`; `None` for other names.
pub(crate) fn parse_task_name(name: &str) -> Option<TaskName> {
    let rest = name.strip_prefix("redline-s")?;
    let (scenario, rest) = rest.split_once("-t")?;
    let (turn, rest) = rest.split_once("-g")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let variant = &rest[digits.len()..];
    if scenario.is_empty() || !scenario.chars().all(|c| c.is_ascii_digit()) || digits.is_empty() {
        return None;
    }
    if !variant.chars().all(|c| c.is_ascii_lowercase()) {
        return None;
    }
    Some(TaskName {
        scenario: scenario.to_string(),
        turn: turn.parse().ok()?,
        group: format!("s{scenario}-t{turn}-g{digits}"),
        variant: (!variant.is_empty()).then(|| variant.to_string()),
    })
}

/// Metadata a Harbor `task.toml` may carry under `[metadata]`.
#[derive(Default, Deserialize)]
struct HarborToml {
    #[serde(default)]
    metadata: BTreeMap<String, toml::Value>,
}

/// Validates a task sent as a JSON object (as a task file would hold it),
/// exactly as a task file is validated; `name` is its name and relative
/// paths in it (`input`, `gold_docx`) start from `base`.
pub fn task_from_json(
    value: serde_json::Value,
    name: &str,
    base: &Path,
) -> Result<Task, TaskError> {
    let shown = PathBuf::from(format!("inline task {name}"));
    let none = file::Defaults::default();
    file::from_value(value, file::Origin { shown: &shown, base }, name, &BTreeMap::new(), none)
}

/// Gives `task` its input document from bytes (a request body), parsed
/// and checked as an input file named in a task is. A task that already
/// has an input is refused: two inputs would make the gate ambiguous.
pub(crate) fn attach_input(task: &mut Task, bytes: Vec<u8>) -> Result<(), TaskError> {
    let invalid = |message| TaskError::Invalid { path: task.source.clone(), message };
    if task.input_doc.is_some() {
        return Err(invalid(format!("task {} already has an input document", task.name)));
    }
    let (doc, sha) = file::parse_input(bytes, "document").map_err(invalid)?;
    task.input_doc = Some(doc);
    task.input_sha = Some(sha);
    Ok(())
}

/// Reads and validates one task file. `name` is the task's name (file stem
/// or Harbor folder); `meta` fills fields the JSON leaves out.
pub(crate) fn load_task(
    path: &Path,
    name: &str,
    meta: &BTreeMap<String, toml::Value>,
) -> Result<Task, TaskError> {
    file::load(path, name, meta, file::Defaults::default())
}

/// Loads every task under `dir`: `<dir>/<task>.json` files and Harbor task
/// folders (`<dir>/<task>/tests/rubrics.json` with an optional `task.toml`).
/// A single task file may be given instead of a folder. Every invalid file
/// is reported, not only the first.
pub(crate) fn read_task_files(dir: &Path) -> Result<Vec<Task>, TaskError> {
    let mut tasks: Vec<Task> = Vec::new();
    let mut errors: Vec<TaskError> = Vec::new();
    if dir.is_file() {
        let name = dir.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        tasks.push(load_task(dir, &name, &BTreeMap::new())?);
        warn_about_reference_rules(&tasks);
        warn_about_category_spellings(&tasks);
        return Ok(tasks);
    }
    if !dir.exists() {
        return Err(TaskError::no_folder("--tasks", dir));
    }
    let entries = std::fs::read_dir(dir)
        .map_err(|source| TaskError::Io { path: dir.to_path_buf(), source })?;
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        match load_entry(&path) {
            Ok(Some(task)) => match tasks.iter().find(|t| t.name == task.name) {
                Some(first) => errors.push(TaskError::Duplicate {
                    name: task.name.clone(),
                    first: first.source.clone(),
                    second: task.source,
                }),
                None => tasks.push(task),
            },
            Ok(None) => {}
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 if tasks.is_empty() => Err(TaskError::Empty { dir: dir.to_path_buf() }),
        0 => {
            warn_about_reference_rules(&tasks);
            warn_about_category_spellings(&tasks);
            Ok(tasks)
        }
        1 => Err(errors.remove(0)),
        _ => Err(TaskError::Several(errors)),
    }
}

/// One warning per reference rule broken, naming the tasks that break it:
/// a folder of tasks made for redjury's own checks (scenario 4 of the
/// bundled example) says so once, not once per file.
fn warn_about_reference_rules(tasks: &[Task]) {
    let mut by_rule: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for t in tasks.iter().filter(|t| t.follows_reference) {
        for rule in &t.reference_breaks {
            by_rule.entry(rule.as_str()).or_default().push(t.name.as_str());
        }
    }
    for (rule, names) in by_rule {
        let shown: Vec<&str> = names.iter().take(4).copied().collect();
        let more =
            if names.len() > 4 { format!(" and {} more", names.len() - 4) } else { String::new() };
        tracing::warn!(
            "{rule}: {} ({}{more}); the reference's readers would drop or reject {}, redjury accepts {}",
            if names.len() == 1 { "1 task".to_string() } else { format!("{} tasks", names.len()) },
            shown.join(", "),
            if names.len() == 1 { "it" } else { "them" },
            if names.len() == 1 { "it" } else { "them" },
        );
    }
}

/// One entry of a tasks folder: a task file, a Harbor task folder, or
/// something else (`None`).
fn load_entry(path: &Path) -> Result<Option<Task>, TaskError> {
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if path.is_file() && name.ends_with(".json") {
        let stem = name.trim_end_matches(".json");
        return load_task(path, stem, &BTreeMap::new()).map(Some);
    }
    let rubrics = path.join("tests/rubrics.json");
    if !path.is_dir() || !rubrics.is_file() {
        return Ok(None);
    }
    let meta = match std::fs::read_to_string(path.join("task.toml")) {
        Ok(text) => {
            toml::from_str::<HarborToml>(&text)
                .map_err(|e| file::invalid(&path.join("task.toml"), e.to_string()))?
                .metadata
        }
        Err(_) => BTreeMap::new(),
    };
    let input = Some(path.join("environment/app/contract.docx")).filter(|p| p.is_file());
    let expert = Some(path.join("tests/attorney_redlines.docx")).filter(|p| p.is_file());
    file::load(&rubrics, &name, &meta, file::Defaults { input, expert }).map(Some)
}

/// Categories are keyed as written (as the reference keys them); two
/// spellings that differ only in case become two categories, so say so.
fn warn_about_category_spellings(tasks: &[Task]) {
    for spellings in case_only_spellings(tasks) {
        let quoted: Vec<String> = spellings.iter().map(|s| format!("{s:?}")).collect();
        tracing::warn!(
            "categories {} differ only in letter case: they are counted as separate categories, as the reference counts them",
            quoted.join(" and ")
        );
    }
}

/// Category names that differ only in letter case, each group in the
/// order first seen.
fn case_only_spellings(tasks: &[Task]) -> Vec<Vec<&str>> {
    let mut seen: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for r in tasks.iter().flat_map(|t| &t.rubrics) {
        let spellings = seen.entry(r.category.to_lowercase()).or_default();
        if !spellings.contains(&r.category.as_str()) {
            spellings.push(&r.category);
        }
    }
    seen.into_values().filter(|s| s.len() > 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_differing_only_in_case_are_found_within_one_task_too() {
        let rubric = |id: &str, category: &str| Rubric::llm(id, "criteria", category, 1);
        let mut one = Task::named(
            "redline-s1-t1-g01a",
            Side::A,
            "A",
            vec![rubric("r1", "Legal correctness")],
        );
        assert!(case_only_spellings(std::slice::from_ref(&one)).is_empty());
        one.rubrics.push(rubric("r2", "legal correctness"));
        one.rubrics.push(rubric("r3", "Commercial context"));
        assert_eq!(
            case_only_spellings(std::slice::from_ref(&one)),
            [vec!["Legal correctness", "legal correctness"]]
        );
    }

    #[test]
    fn task_names() {
        assert_eq!(
            parse_task_name("redline-s1-t2-g01a"),
            Some(TaskName {
                scenario: "1".into(),
                turn: 2,
                group: "s1-t2-g01".into(),
                variant: Some("a".into())
            })
        );
        assert_eq!(parse_task_name("redline-s3-t4-g1").map(|n| n.variant), Some(None));
        assert_eq!(parse_task_name("contract-7"), None);
        assert_eq!(parse_task_name("redline-s1-t2-g01a-x"), None);
    }

    #[test]
    fn scenario_ids_normalise() {
        use file::normalise_scenario;
        assert_eq!(normalise_scenario(&serde_json::json!(1)).as_deref(), Some("1"));
        assert_eq!(normalise_scenario(&serde_json::json!("s1")).as_deref(), Some("1"));
        assert_eq!(normalise_scenario(&serde_json::json!("saas")).as_deref(), Some("saas"));
    }
}
