//! The calibration set: gold verdicts per task, per named output, per
//! rubric (`<gold>/verdicts/<task>.json`:
//! `{task_id, outputs: {name: {rubric_id: {verdict, reason}}}}`), and the
//! outputs they judge, found by name.
//!
//! Owns: reading and validating the set (every problem names the file,
//! the output and the rubric, all reported at once). Must never guess an
//! output's file: one that is not found is an error saying where it was
//! looked for.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::task::Task;
use crate::verdict::Verdict;

/// One labelled output of one task.
#[derive(Debug, Clone)]
pub struct LabelledOutput {
    /// The task.
    pub task: Arc<Task>,
    /// The output's name (`gold`, `strong`, …): its trial in the results.
    pub output: String,
    /// Its .docx (or .xlsx).
    pub path: PathBuf,
    /// rubric id → (gold verdict, the labeller's reason).
    pub labels: BTreeMap<String, (Verdict, String)>,
}

/// A calibration set.
#[derive(Debug, Clone)]
pub struct GoldSet {
    /// Every labelled output, by task then output name.
    pub outputs: Vec<LabelledOutput>,
    /// Labels for a task's input returned unedited (the output named
    /// [`UNEDITED`]): what the null probe expects, by task then rubric.
    pub unedited: BTreeMap<String, BTreeMap<String, Verdict>>,
}

/// The output name that labels the task's input returned unedited (the
/// null probe's document); it needs no file.
pub(crate) const UNEDITED: &str = "unedited";

impl GoldSet {
    /// Reads `<gold>/verdicts/*.json` against `tasks`, finding each output
    /// under `gold` or `outputs` (see README: the calibration set); every
    /// problem is reported at once.
    pub fn load(
        gold: &Path,
        outputs: &[PathBuf],
        tasks: &[Arc<Task>],
    ) -> Result<GoldSet, GoldError> {
        load(gold, outputs, tasks)
    }
}

/// Why a calibration set cannot be used; the message lists every problem.
#[derive(Debug, thiserror::Error)]
#[error("calibration set {dir}: {}", .problems.join("\n  "))]
pub struct GoldError {
    /// The gold folder.
    pub dir: PathBuf,
    /// Every problem found.
    pub problems: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldFile {
    task_id: String,
    outputs: BTreeMap<String, BTreeMap<String, Label>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Label {
    verdict: String,
    #[serde(default)]
    reason: String,
}

/// Where an output named `name` of `task` is looked for, in order:
/// `<gold>/outputs/<name>/<task>.docx`, each `<outputs>/<name>/<task>.docx`,
/// and for `gold`, `<gold>/redlines/<task>.docx` — each folder also as
/// `<task>.xlsx` and `<task>.pdf`, for tasks whose output is a workbook or
/// a PDF.
pub(crate) fn candidates(gold: &Path, outputs: &[PathBuf], name: &str, task: &str) -> Vec<PathBuf> {
    let mut dirs = vec![gold.join("outputs").join(name)];
    dirs.extend(outputs.iter().map(|d| d.join(name)));
    if name == "gold" {
        dirs.push(gold.join("redlines"));
    }
    dirs.iter()
        .flat_map(|d| ["docx", "xlsx", "pdf"].map(|ext| d.join(format!("{task}.{ext}"))))
        .collect()
}

/// Reads `<gold>/verdicts/*.json` against `tasks`, finding each output.
pub(crate) fn load(
    gold: &Path,
    outputs: &[PathBuf],
    tasks: &[Arc<Task>],
) -> Result<GoldSet, GoldError> {
    let fail = |problems| GoldError { dir: gold.to_path_buf(), problems };
    let dir = gold.join("verdicts");
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| fail(vec![format!("cannot read {}: {e}", dir.display())]))?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let by_name: BTreeMap<&str, &Arc<Task>> = tasks.iter().map(|t| (t.name.as_str(), t)).collect();
    let mut problems = Vec::new();
    let mut set = Vec::new();
    let mut labelled_in: BTreeMap<String, String> = BTreeMap::new();
    let mut unedited = BTreeMap::new();
    for file in &files {
        let shown = file.display().to_string();
        let parsed = match read_gold_file(file) {
            Ok(g) => g,
            Err(e) => {
                problems.push(format!("{shown}: {e}"));
                continue;
            }
        };
        let Some(task) = by_name.get(parsed.task_id.as_str()) else {
            problems
                .push(format!("{shown}: task_id {:?} is not a task under --tasks", parsed.task_id));
            continue;
        };
        if let Some(first) = labelled_in.insert(task.name.clone(), shown.clone()) {
            problems.push(format!(
                "{shown}: task {} is labelled in {first} too (its items would count twice); keep one file per task",
                task.name
            ));
            continue;
        }
        for (name, labels) in parsed.outputs {
            if name == UNEDITED {
                let mut expected = BTreeMap::new();
                for (rubric, label) in labels {
                    match (task.rubrics.iter().any(|r| r.id == rubric), Verdict::parse(label.verdict.trim())) {
                        (true, Some(v)) => {
                            expected.insert(rubric, v);
                        }
                        (false, _) => problems.push(format!(
                            "{shown}: output {name:?}: rubric {rubric:?} is not in task {}",
                            task.name
                        )),
                        (true, None) => problems.push(format!(
                            "{shown}: output {name:?}: rubric {rubric}: verdict must be \"PASS\" or \"FAIL\", got {:?}",
                            label.verdict
                        )),
                    }
                }
                unedited.insert(task.name.clone(), expected);
                continue;
            }
            let found =
                candidates(gold, outputs, &name, &task.name).into_iter().find(|p| p.is_file());
            let Some(path) = found else {
                let tried: Vec<String> = candidates(gold, outputs, &name, &task.name)
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                problems.push(format!("{shown}: output {name:?}: no file at {}", tried.join(", ")));
                continue;
            };
            let mut checked = BTreeMap::new();
            for (rubric, label) in labels {
                if !task.rubrics.iter().any(|r| r.id == rubric) {
                    problems.push(format!(
                        "{shown}: output {name:?}: rubric {rubric:?} is not in task {}",
                        task.name
                    ));
                    continue;
                }
                match Verdict::parse(label.verdict.trim()) {
                    Some(v) => {
                        checked.insert(rubric, (v, label.reason));
                    }
                    None => problems.push(format!(
                        "{shown}: output {name:?}: rubric {rubric}: verdict must be \"PASS\" or \"FAIL\", got {:?}",
                        label.verdict
                    )),
                }
            }
            set.push(LabelledOutput { task: (*task).clone(), output: name, path, labels: checked });
        }
    }
    if files.is_empty() {
        problems.push(format!("no gold verdict files (*.json) in {}", dir.display()));
    } else if problems.is_empty() && set.iter().all(|o| o.labels.is_empty()) {
        problems.push(format!(
            "the files in {} label no (output, rubric): nothing to calibrate against",
            dir.display()
        ));
    }
    if problems.is_empty() { Ok(GoldSet { outputs: set, unedited }) } else { Err(fail(problems)) }
}

/// A gold file, refused when an object in it names a key twice (JSON
/// readers keep the last; a duplicated rubric's first label would be lost
/// silently).
fn read_gold_file(file: &Path) -> Result<GoldFile, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let mut twice = Vec::new();
    let mut de = serde_json::Deserializer::from_str(&text);
    serde::de::DeserializeSeed::deserialize(
        KeysOnce { path: String::new(), twice: &mut twice },
        &mut de,
    )
    .map_err(|e| e.to_string())?;
    if let Some(key) = twice.first() {
        return Err(format!("{key} is given twice; give each label once"));
    }
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// Walks a JSON value, noting every key an object gives twice, by path.
struct KeysOnce<'a> {
    path: String,
    twice: &'a mut Vec<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for KeysOnce<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for KeysOnce<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path =
                if self.path.is_empty() { key.clone() } else { format!("{}.{key}", self.path) };
            if !seen.insert(key) {
                self.twice.push(path.clone());
            }
            map.next_value_seed(KeysOnce { path, twice: self.twice })?;
        }
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(KeysOnce { path: self.path.clone(), twice: self.twice })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}
