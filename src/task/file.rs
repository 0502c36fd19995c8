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
use super::{Rubric, Side, Task, TaskError, TaskName, normalise_category, parse_task_name};

/// The on-disk schema.
#[derive(Deserialize)]
struct TaskFile {
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
    rubrics: Vec<RubricFile>,
}

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
    path: &'a Path,
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

    fn scenario(&self) -> Result<String, TaskError> {
        self.file
            .scenario_id
            .as_ref()
            .and_then(normalise_scenario)
            .or_else(|| {
                let m = self.meta("scenario_id").or_else(|| self.meta("scenario"))?;
                normalise_scenario(&serde_json::Value::String(m))
            })
            .or_else(|| self.name.as_ref().map(|p| p.scenario.clone()))
            .ok_or_else(|| invalid(self.path, "missing scenario_id"))
    }

    fn side(&self) -> Result<Side, TaskError> {
        match self.file.side.clone().or_else(|| self.meta("side")).as_deref().map(str::trim) {
            Some("A") | Some("a") => Ok(Side::A),
            Some("B") | Some("b") => Ok(Side::B),
            Some(other) => Err(invalid(self.path, format!("unknown side {other:?} (expected \"A\" or \"B\")"))),
            None => Err(invalid(self.path, "missing side (\"A\" or \"B\")")),
        }
    }

    fn turn(&self) -> Result<u32, TaskError> {
        match &self.file.level {
            Some(serde_json::Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
            _ => self.meta("level").or_else(|| self.meta("turn")).and_then(|s| s.parse().ok()),
        }
        .or_else(|| self.name.as_ref().map(|p| p.turn))
        .ok_or_else(|| invalid(self.path, "missing or invalid level (the negotiation turn, an integer)"))
    }

    fn input_group(&self) -> Result<String, TaskError> {
        self.file
            .input_group
            .clone()
            .or_else(|| self.meta("input_group"))
            .or_else(|| self.name.as_ref().map(|p| p.group.clone()))
            .ok_or_else(|| invalid(self.path, "missing input_group (s{S}-t{T}-g{NN})"))
    }

    fn required(&self, json: &Option<String>, field: &str) -> Result<String, TaskError> {
        json.clone()
            .or_else(|| self.meta(field))
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| invalid(self.path, format!("missing {field}")))
    }
}

/// Reads and validates one task file. `name` is the task's name (file stem
/// or Harbor folder); `default_input` is the input a Harbor task ships.
pub(super) fn load(path: &Path, name: &str, meta: &Meta, default_input: Option<PathBuf>) -> Result<Task, TaskError> {
    let text = std::fs::read_to_string(path).map_err(|source| TaskError::Io { path: path.to_path_buf(), source })?;
    let file: TaskFile = serde_json::from_str(&text).map_err(|e| invalid(path, format!("not a task file: {e}")))?;
    let src = Sources { path, file: &file, meta, name: parse_task_name(name) };
    let (scenario, side, turn, input_group) = (src.scenario()?, src.side()?, src.turn()?, src.input_group()?);
    let variant = file.variant.clone().or_else(|| src.meta("variant")).or_else(|| src.name.as_ref().and_then(|p| p.variant.clone()));
    if let Some(p) = &src.name {
        if p.group != input_group {
            return Err(invalid(path, format!("task name {name} implies input_group {} but the file says {input_group}", p.group)));
        }
        if p.turn != turn {
            return Err(invalid(path, format!("task name {name} implies turn {} but the file says level {turn}", p.turn)));
        }
    }
    let represented_party = src.required(&file.represented_party, "represented_party")?;
    let counterparty = src.required(&file.counterparty, "counterparty")?;
    let author = src.required(&file.author, "author")?;
    let rubrics = rubrics(path, &file.rubrics)?;
    let input = file.input.as_deref().map(|i| path.parent().unwrap_or(Path::new(".")).join(i)).or(default_input);
    let (input_doc, input_sha) = match &input {
        Some(p) => load_input(path, p).map(|(doc, sha)| (Some(doc), Some(sha)))?,
        None => (None, None),
    };
    Ok(Task {
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
        input_sha,
    })
}

/// Validates the rubric list.
fn rubrics(path: &Path, items: &[RubricFile]) -> Result<Vec<Rubric>, TaskError> {
    if items.is_empty() {
        return Err(invalid(path, "no rubrics"));
    }
    let mut rubrics = Vec::with_capacity(items.len());
    let mut seen = HashSet::new();
    for (i, r) in items.iter().enumerate() {
        let rubric = rubric(path, i, r)?;
        if !seen.insert(rubric.id.clone()) {
            return Err(invalid(path, format!("duplicate rubric id {:?}", rubric.id)));
        }
        rubrics.push(rubric);
    }
    if !rubrics.iter().any(|r| r.weight > 0) {
        return Err(invalid(path, "no rubric with a positive weight: the reward would be undefined"));
    }
    Ok(rubrics)
}

/// Validates rubric number `i` (0-based).
fn rubric(path: &Path, i: usize, r: &RubricFile) -> Result<Rubric, TaskError> {
    let id = match &r.id {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return Err(invalid(path, format!("rubric #{} has an id that is not a string", i + 1))),
    };
    let weight = r.weight.as_i64().ok_or_else(|| invalid(path, format!("rubric {id}: weight must be an integer, got {}", r.weight)))?;
    if weight == 0 || !(-10..=10).contains(&weight) {
        return Err(invalid(path, format!("rubric {id}: weight {weight} is out of range (−10..10, not 0)")));
    }
    if r.criteria.trim().is_empty() {
        return Err(invalid(path, format!("rubric {id}: empty criteria")));
    }
    let base = path.parent().unwrap_or(Path::new("."));
    let check = match (r.kind.as_deref().map(str::trim), &r.check) {
        (None | Some("llm"), None) => None,
        (Some("check"), Some(c)) => Some(PreparedCheck::from_json(c, base).map_err(|e| invalid(path, format!("rubric {id}: {e}")))?),
        (Some("check"), None) => return Err(invalid(path, format!("rubric {id}: kind \"check\" needs a \"check\" object"))),
        (None | Some("llm"), Some(_)) => {
            return Err(invalid(path, format!("rubric {id}: has a \"check\" object but kind is not \"check\"")));
        }
        (Some(other), _) => return Err(invalid(path, format!("rubric {id}: unknown kind {other:?} (expected \"llm\" or \"check\")"))),
    };
    Ok(Rubric {
        id,
        criteria: r.criteria.trim().to_string(),
        justification: r.justification.clone().unwrap_or_default().trim().to_string(),
        category: normalise_category(r.category.as_deref().unwrap_or("")),
        weight: weight as i32,
        required: r.required.unwrap_or(false),
        check,
    })
}

/// The task's input document, parsed, and the hash of its bytes: the gate
/// and the scope check compare an output with it.
fn load_input(task_path: &Path, input: &Path) -> Result<(Arc<crate::docx::Document>, String), TaskError> {
    let bytes = std::fs::read(input).map_err(|e| invalid(task_path, format!("input {}: {e}", input.display())))?;
    let sha = crate::hash::sha256_hex_bytes(&bytes);
    let doc = crate::docx::from_bytes(bytes, crate::docx::Limits::default())
        .map_err(|e| invalid(task_path, format!("input {}: {e}", input.display())))?;
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
        Some(stripped.trim_start_matches('0').to_string()).filter(|x| !x.is_empty()).or(Some("0".into()))
    } else {
        Some(s)
    }
}
