//! One task file: the reference task schema (`rubrics/<task>.json`, a
//! Harbor task's `tests/rubrics.json`), read and validated into a [`Task`].
//!
//! Owns: the on-disk schema and its validation. Must never accept a task
//! whose reward would be undefined (no positive weight) or whose rubric ids
//! collide, and every error names the file and the problem.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use super::check_spec::PreparedCheck;
use super::{Rubric, Side, Task, TaskError, TaskName, parse_task_name};

/// The on-disk schema. Unknown keys are refused (with the nearest known
/// key as a hint) before this is read, so a typo never passes unseen.
#[derive(Deserialize)]
struct TaskFile {
    #[serde(default)]
    task_id: Option<serde_json::Value>,
    #[serde(default)]
    scenario_id: Option<serde_json::Value>,
    #[serde(default)]
    scenario_label: Option<String>,
    #[serde(default)]
    side: Option<String>,
    #[serde(default)]
    level: Option<serde_json::Value>,
    #[serde(default)]
    input_group: Option<String>,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    represented_party: Option<String>,
    #[serde(default)]
    counterparty: Option<String>,
    #[serde(default)]
    author: Option<String>,
    #[serde(default)]
    input: Option<String>,
    #[serde(default)]
    output_template: Option<String>,
    #[serde(default)]
    expert: Option<String>,
    #[serde(default)]
    output: Option<String>,
    #[serde(default)]
    reference: Option<bool>,
    rubrics: Vec<RubricFile>,
}

/// The keys a task file may hold: the reference schema's, `input`,
/// `output`, `output_template`, `expert`, `reference` and `$schema`.
const TASK_KEYS: &[&str] = &[
    "task_id",
    "scenario_id",
    "scenario_label",
    "side",
    "level",
    "input_group",
    "variant",
    "represented_party",
    "counterparty",
    "author",
    "rubrics",
    "input",
    "output",
    "output_template",
    "expert",
    "reference",
    "$schema",
];

/// The keys a rubric may hold: the reference schema's and redjury's
/// `kind`, `check` and `required`.
const RUBRIC_KEYS: &[&str] =
    &["id", "criteria", "justification", "category", "weight", "kind", "check", "required"];

#[derive(Deserialize)]
struct RubricFile {
    id: serde_json::Value,
    criteria: String,
    #[serde(default)]
    justification: Option<String>,
    #[serde(default)]
    category: Option<String>,
    weight: serde_json::Value,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    check: Option<serde_json::Value>,
    #[serde(default)]
    required: Option<bool>,
}

/// Metadata from a Harbor `task.toml` `[metadata]` table, filling fields
/// the JSON leaves out.
pub(super) type Meta = BTreeMap<String, toml::Value>;

pub(super) fn invalid(path: &Path, message: impl Into<String>) -> TaskError {
    TaskError::Invalid { path: path.to_path_buf(), message: message.into() }
}

/// Where a field's value may come from, in order: the JSON, the Harbor
/// metadata, the task name.
struct Sources<'a> {
    file: &'a TaskFile,
    meta: &'a Meta,
    name: Option<TaskName>,
}

impl Sources<'_> {
    fn meta(&self, key: &str) -> Option<String> {
        self.meta.get(key).and_then(|v| match v {
            toml::Value::String(s) => Some(s.clone()),
            toml::Value::Integer(i) => Some(i.to_string()),
            _ => None,
        })
    }

    fn scenario(&self) -> Result<String, String> {
        self.file
            .scenario_id
            .as_ref()
            .and_then(normalise_scenario)
            .or_else(|| {
                let m = self.meta("scenario_id").or_else(|| self.meta("scenario"))?;
                normalise_scenario(&serde_json::Value::String(m))
            })
            .or_else(|| self.name.as_ref().map(|p| p.scenario.clone()))
            .ok_or_else(|| "missing scenario_id".into())
    }

    fn side(&self) -> Result<Side, String> {
        match self.file.side.clone().or_else(|| self.meta("side")).as_deref().map(str::trim) {
            Some("A") | Some("a") => Ok(Side::A),
            Some("B") | Some("b") => Ok(Side::B),
            Some(other) => Err(format!("unknown side {other:?} (expected \"A\" or \"B\")")),
            None => Err("missing side (\"A\" or \"B\")".into()),
        }
    }

    fn turn(&self) -> Result<u32, String> {
        match &self.file.level {
            Some(serde_json::Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
            _ => self.meta("level").or_else(|| self.meta("turn")).and_then(|s| s.parse().ok()),
        }
        .or_else(|| self.name.as_ref().map(|p| p.turn))
        .ok_or_else(|| "missing or invalid level (the negotiation turn, an integer)".into())
    }

    fn input_group(&self) -> Result<String, String> {
        self.file
            .input_group
            .clone()
            .or_else(|| self.meta("input_group"))
            .or_else(|| self.name.as_ref().map(|p| p.group.clone()))
            .ok_or_else(|| "missing input_group (s{S}-t{T}-g{NN})".into())
    }

    fn required(&self, json: &Option<String>, field: &str) -> Result<String, String> {
        json.clone()
            .or_else(|| self.meta(field))
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| format!("missing {field}"))
    }
}

/// Every problem of one file, reported together.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    /// The value, or `None` with its problem noted.
    fn take<T>(&mut self, r: Result<T, String>) -> Option<T> {
        r.map_err(|e| self.0.push(e)).ok()
    }
    fn push(&mut self, p: String) {
        self.0.push(p);
    }
}

/// The files a Harbor task ships where a task file would name them.
#[derive(Default)]
pub(super) struct Defaults {
    /// environment/app/contract.docx.
    pub input: Option<PathBuf>,
    /// tests/attorney_redlines.docx.
    pub expert: Option<PathBuf>,
}

/// Reads and validates one task file. `name` is the task's name (file stem
/// or Harbor folder); `defaults` are the files a Harbor task ships.
/// Every problem of the file is reported at once.
pub(super) fn load(
    path: &Path,
    name: &str,
    meta: &Meta,
    defaults: Defaults,
) -> Result<Task, TaskError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| TaskError::Io { path: path.to_path_buf(), source })?;
    // Windows editors save UTF-8 with a byte-order mark; JSON has none.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| invalid(path, format!("not JSON: {e}")))?;
    let base = path.parent().unwrap_or(Path::new("."));
    from_value(value, Origin { shown: path, base }, name, meta, defaults)
}

/// Where a task came from: what errors name, and the folder its relative
/// paths (`input`, `gold_docx`) start from.
#[derive(Clone, Copy)]
pub(super) struct Origin<'a> {
    pub shown: &'a Path,
    pub base: &'a Path,
}

/// Validates a task given as JSON (a file's, or one sent inline).
pub(super) fn from_value(
    value: serde_json::Value,
    origin: Origin<'_>,
    name: &str,
    meta: &Meta,
    defaults: Defaults,
) -> Result<Task, TaskError> {
    let default_input = defaults.input;
    let path = origin.shown;
    let mut problems = Problems::default();
    unknown_keys(&value, &mut problems);
    let file: TaskFile = match serde_json::from_value(value) {
        Ok(f) => f,
        Err(e) => {
            problems.push(format!("not a task file: {e}"));
            return Err(invalid(path, problems.0.join("; ")));
        }
    };
    let src = Sources { file: &file, meta, name: parse_task_name(name) };
    let scenario = problems.take(src.scenario());
    let side = problems.take(src.side());
    let turn = problems.take(src.turn());
    let input_group = problems.take(src.input_group());
    let represented_party =
        problems.take(src.required(&file.represented_party, "represented_party"));
    let counterparty = problems.take(src.required(&file.counterparty, "counterparty"));
    let author = problems.take(src.required(&file.author, "author"));
    agrees_with_name(name, &src, turn, input_group.as_deref(), &mut problems);
    let rubrics = rubrics(origin.base, &file.rubrics, &mut problems);
    let input = file
        .input
        .as_deref()
        .map(|i| {
            let (path, shown) = super::named_file(i, origin.base);
            (path, format!("\"input\": {shown}"))
        })
        .or_else(|| default_input.map(|p| (p.clone(), format!("input {}", p.display()))));
    let loaded = match &input {
        Some((p, shown)) => {
            problems.take(load_input(p, shown)).map(|(input, sha)| (input, Some(sha)))
        }
        None => Some((Input::default(), None)),
    };
    let input = input.map(|(p, _)| p);
    let template = match file.output_template.as_deref() {
        Some(t) => {
            let (p, shown) = super::named_file(t, origin.base);
            let shown = format!("\"output_template\": {shown}");
            problems.take(load_template(&p, &shown)).map(Some)
        }
        None => Some(None),
    };
    let output = problems.take(output_kind(&file, &rubrics));
    let expert = match file.expert.as_deref() {
        Some(e) => {
            let (p, shown) = super::named_file(e, origin.base);
            Some((p, format!("\"expert\": {shown}")))
        }
        None => defaults.expert.map(|p| (p.clone(), format!("expert {}", p.display()))),
    };
    let expert = match expert {
        Some((p, shown)) => problems.take(load_expert(&p, &shown)).map(Some),
        None => Some(None),
    };
    let (
        Some(scenario),
        Some(side),
        Some(turn),
        Some(input_group),
        Some(represented_party),
        Some(counterparty),
        Some(author),
        Some((Input { doc: input_doc, pdf: input_pdf }, input_sha)),
        Some(output_template),
        Some(output),
        Some(expert),
    ) = (
        scenario,
        side,
        turn,
        input_group,
        represented_party,
        counterparty,
        author,
        loaded,
        template,
        output,
        expert,
    )
    else {
        return Err(invalid(path, problems.0.join("; ")));
    };
    if !problems.0.is_empty() {
        return Err(invalid(path, problems.0.join("; ")));
    }
    let variant = file
        .variant
        .clone()
        .or_else(|| src.meta("variant"))
        .or_else(|| src.name.as_ref().and_then(|p| p.variant.clone()));
    let task = Task {
        name: name.to_string(),
        scenario,
        scenario_label: file.scenario_label.clone().or_else(|| src.meta("scenario_label")),
        side,
        turn,
        input_group,
        variant,
        represented_party,
        counterparty,
        author,
        rubrics,
        source: path.to_path_buf(),
        input,
        input_doc,
        input_pdf,
        expert,
        input_sha,
        output_template,
        output,
        reference_breaks: Vec::new(),
        follows_reference: file.reference.unwrap_or(true),
    };
    let breaks =
        super::reference::broken_rules(&task, &file.task_id, &file.scenario_id, &file.level);
    Ok(Task { reference_breaks: breaks, ..task })
}

/// The kind of file the output must be: `"output"` when given, else a
/// workbook when the task names a template or checks cells, else a
/// redline.
fn output_kind(file: &TaskFile, rubrics: &[Rubric]) -> Result<super::OutputKind, String> {
    use super::OutputKind;
    let checks_cells = rubrics.iter().any(|r| {
        r.check
            .as_ref()
            .is_some_and(|c| matches!(c.spec, super::check_spec::CheckSpec::XlsxCells(_)))
    });
    let reads_pdf = rubrics.iter().any(|r| r.check.as_ref().is_some_and(|c| c.spec.reads_pdf()));
    let inferred = if file.output_template.is_some() || checks_cells {
        OutputKind::Workbook
    } else if reads_pdf {
        OutputKind::Pdf
    } else {
        OutputKind::Redline
    };
    match file.output.as_deref().map(str::trim) {
        None => Ok(inferred),
        Some("pdf") if inferred == OutputKind::Redline || inferred == OutputKind::Pdf => {
            Ok(OutputKind::Pdf)
        }
        Some("pdf") => Err("\"output\": \"pdf\" contradicts the task's output_template or xlsx_cells checks, which need an .xlsx output".into()),
        Some("xlsx") if reads_pdf => Err("\"output\": \"xlsx\" contradicts the task's PDF checks".into()),
        Some("xlsx") => Ok(OutputKind::Workbook),
        Some("docx") if inferred == OutputKind::Pdf => {
            Err("\"output\": \"docx\" contradicts the task's PDF checks, which need a PDF output".into())
        }
        Some("docx") if inferred == OutputKind::Workbook => Err(
            "\"output\": \"docx\" contradicts the task's output_template or xlsx_cells checks, which need an .xlsx output"
                .into(),
        ),
        Some("docx") => Ok(OutputKind::Redline),
        Some(other) => Err(format!("\"output\": \"{other}\" is not a kind of output; use \"docx\", \"xlsx\" or \"pdf\"")),
    }
}

/// The task name's scenario, turn and group must agree with the file; a
/// string `task_id` must be the name.
fn agrees_with_name(
    name: &str,
    src: &Sources<'_>,
    turn: Option<u32>,
    group: Option<&str>,
    problems: &mut Problems,
) {
    if let Some(p) = &src.name {
        if let Some(group) = group.filter(|g| *g != p.group) {
            problems.push(format!(
                "task name {name} implies input_group {} but the file says {group}",
                p.group
            ));
        }
        if let Some(turn) = turn.filter(|t| *t != p.turn) {
            problems.push(format!(
                "task name {name} implies turn {} but the file says level {turn}",
                p.turn
            ));
        }
    }
    if let Some(serde_json::Value::String(id)) = &src.file.task_id
        && id != name
    {
        problems.push(format!(
            "task_id {id:?} contradicts the task's name {name:?} (the file or folder name)"
        ));
    }
}

/// Keys neither the reference schema nor redjury knows, with the nearest
/// known key as a hint.
fn unknown_keys(value: &serde_json::Value, problems: &mut Problems) {
    let Some(map) = value.as_object() else { return };
    for key in map.keys().filter(|k| !TASK_KEYS.contains(&k.as_str())) {
        problems.push(format!("unknown key {key:?}{}", hint(key, TASK_KEYS)));
    }
    let rubrics = map.get("rubrics").and_then(|r| r.as_array()).into_iter().flatten();
    for (i, r) in rubrics.enumerate() {
        let Some(r) = r.as_object() else { continue };
        let id = r.get("id").map(|v| v.to_string()).unwrap_or_else(|| format!("#{}", i + 1));
        for key in r.keys().filter(|k| !RUBRIC_KEYS.contains(&k.as_str())) {
            problems.push(format!("rubric {id}: unknown key {key:?}{}", hint(key, RUBRIC_KEYS)));
        }
    }
}

/// " (did you mean \"category\"?)" when a known key is within two edits.
fn hint(key: &str, known: &[&str]) -> String {
    let near = known.iter().map(|k| (edit_distance(key, k), k)).filter(|(d, _)| *d <= 2).min();
    near.map(|(_, k)| format!(" (did you mean {k:?}?)")).unwrap_or_default()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            prev = here;
        }
    }
    row[b.len()]
}

/// Validates the rubric list, noting every problem; `base` resolves gold
/// documents.
fn rubrics(base: &Path, items: &[RubricFile], problems: &mut Problems) -> Vec<Rubric> {
    if items.is_empty() {
        problems.push("no rubrics".into());
    }
    let mut rubrics = Vec::with_capacity(items.len());
    let mut seen = HashSet::new();
    for (i, r) in items.iter().enumerate() {
        let Some(rubric) = problems.take(rubric(base, i, r)) else { continue };
        if !seen.insert(rubric.id.clone()) {
            problems.push(format!("duplicate rubric id {:?}", rubric.id));
        }
        rubrics.push(rubric);
    }
    if !items.is_empty() && rubrics.len() == items.len() && !rubrics.iter().any(|r| r.weight > 0) {
        problems.push("no rubric with a positive weight: the reward would be undefined".into());
    }
    rubrics
}

/// Validates rubric number `i` (0-based).
fn rubric(base: &Path, i: usize, r: &RubricFile) -> Result<Rubric, String> {
    let id = match &r.id {
        serde_json::Value::String(s) if s.trim().is_empty() => {
            return Err(format!("rubric #{} has an empty id", i + 1));
        }
        serde_json::Value::String(s) => s.trim().to_string(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return Err(format!("rubric #{} has an id that is not a string", i + 1)),
    };
    let weight = r
        .weight
        .as_i64()
        .ok_or_else(|| format!("rubric {id}: weight must be an integer, got {}", r.weight))?;
    if weight == 0 || !(-10..=10).contains(&weight) {
        return Err(format!("rubric {id}: weight {weight} is out of range (−10..10, not 0)"));
    }
    if r.criteria.trim().is_empty() {
        return Err(format!("rubric {id}: empty criteria"));
    }
    let check = match (r.kind.as_deref().map(str::trim), &r.check) {
        (None | Some("llm"), None) => None,
        (Some("check"), Some(c)) => {
            Some(PreparedCheck::from_json(c, base).map_err(|e| format!("rubric {id}: {e}"))?)
        }
        (Some("check"), None) => {
            return Err(format!("rubric {id}: kind \"check\" needs a \"check\" object"));
        }
        (None | Some("llm"), Some(_)) => {
            return Err(format!("rubric {id}: has a \"check\" object but kind is not \"check\""));
        }
        (Some(other), _) => {
            return Err(format!(
                "rubric {id}: unknown kind {other:?} (expected \"llm\" or \"check\")"
            ));
        }
    };
    Ok(Rubric {
        id,
        criteria: r.criteria.trim().to_string(),
        justification: r.justification.clone().unwrap_or_default().trim().to_string(),
        category: category(r.category.as_deref()),
        weight: weight as i32,
        required: r.required.unwrap_or(false),
        check,
    })
}

/// A category as written (surrounding space trimmed), as the reference keys
/// it; none or empty is "(uncategorized)".
fn category(c: Option<&str>) -> String {
    match c.map(str::trim) {
        None | Some("") => "(uncategorized)".into(),
        Some(c) => c.to_string(),
    }
}

/// The task's input document, parsed, and the hash of its bytes: the gate
/// and the scope check compare an output with it.
/// A task's input, parsed: a .docx, or a PDF for an exhibit task.
#[derive(Default)]
struct Input {
    doc: Option<Arc<crate::docx::Document>>,
    pdf: Option<Arc<crate::pdf::Pdf>>,
}

fn load_input(input: &Path, shown: &str) -> Result<(Input, String), String> {
    let limits = crate::docx::Limits::default();
    let bytes = crate::docx::read_file(input, &limits)
        .map_err(|e| format!("{shown}: {}", super::unreadable(&e)))?;
    if crate::pdf::is_pdf(&bytes) {
        let sha = crate::hash::sha256_hex_bytes(&bytes);
        let pdf = crate::pdf::from_bytes(&bytes, crate::pdf::Limits::default())
            .map_err(|e| format!("input {shown}: {e}"))?;
        return Ok((Input { doc: None, pdf: Some(Arc::new(pdf)) }, sha));
    }
    parse_input(bytes, shown).map(|(doc, sha)| (Input { doc: Some(doc), pdf: None }, sha))
}

/// Reads a task's expert redline: its edits, every author's.
fn load_expert(path: &Path, shown: &str) -> Result<Arc<crate::docx::Edits>, String> {
    let bytes = crate::docx::read_file(path, &crate::docx::Limits::default())
        .map_err(|e| format!("{shown}: {}", super::unreadable(&e)))?;
    let doc = crate::docx::from_bytes(bytes, crate::docx::Limits::default())
        .map_err(|e| format!("{shown}: {e}"))?;
    Ok(Arc::new(doc.shape.edits(&|_| true)))
}

/// Reads the spreadsheet an output is filled in from.
fn load_template(path: &Path, shown: &str) -> Result<Arc<crate::xlsx::Workbook>, String> {
    if path.extension().is_none_or(|e| !e.eq_ignore_ascii_case("xlsx")) {
        return Err(format!("{shown}: name the .xlsx the output is filled in from"));
    }
    let bytes = crate::docx::read_file(path, &crate::docx::Limits::default())
        .map_err(|e| format!("{shown}: {}", super::unreadable(&e)))?;
    crate::xlsx::from_bytes(bytes, crate::docx::Limits::default())
        .map(Arc::new)
        .map_err(|e| format!("{shown}: {e}"))
}

/// Parses an input document's bytes; `shown` names it in errors.
pub(super) fn parse_input(
    bytes: Vec<u8>,
    shown: &str,
) -> Result<(Arc<crate::docx::Document>, String), String> {
    let sha = crate::hash::sha256_hex_bytes(&bytes);
    let doc = crate::docx::from_bytes(bytes, crate::docx::Limits::default())
        .map_err(|e| format!("input {shown}: {e}"))?;
    Ok((Arc::new(doc), sha))
}

/// Scenario key, normalised: "s1", "S01" and 1 all read as "1".
pub(super) fn normalise_scenario(v: &serde_json::Value) -> Option<String> {
    let s = match v {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.trim().to_string(),
        _ => return None,
    };
    let stripped = s.strip_prefix('s').or_else(|| s.strip_prefix('S')).unwrap_or(&s);
    if !stripped.is_empty() && stripped.chars().all(|c| c.is_ascii_digit()) {
        Some(stripped.trim_start_matches('0').to_string())
            .filter(|x| !x.is_empty())
            .or(Some("0".into()))
    } else {
        Some(s)
    }
}
