//! The CPU half of scoring one output: read → gate → render → check →
//! prompt, each step typed, with the render and check caches.
//!
//! Owns: turning an output's bytes into a row skeleton (gate and check
//! verdicts filled in), the judges' prompt and the annotated view. Must
//! never fail: whatever goes wrong with an output (unreadable, too large,
//! not a .docx, a render that panics) becomes that output's gate failure
//! with the reason.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cache::Cache;
use crate::check::gate::{self, GateResult};
use crate::docx::{self, Document};
use crate::isolated::Reader;
use crate::prompt::{Prompt, Templates};
use crate::score::{RubricKind, RubricResult, Status, TaskResult};
use crate::task::{OutputKind, Task};
use crate::verdict::Verdict;
use crate::view::{self, JudgeView};

/// Where an output's bytes come from.
pub enum OutputSource {
    /// A file on disk (read here, refused by size before reading).
    Path(PathBuf),
    /// Bytes already in memory (a request body).
    Bytes(Vec<u8>),
}

/// One task × trial on its way through the pipeline, after the CPU steps.
pub struct Prepared {
    /// Gate and check verdicts filled in; judge rubrics still open.
    pub row: TaskResult,
    /// What the judges read, when the gate passed and the task has judge rubrics.
    pub prompt: Option<Prompt>,
    /// The annotated view, when the output loaded.
    pub view: Option<String>,
}

/// A row with every rubric open.
pub(crate) fn skeleton(task: &Task, trial: &str, gate: GateResult) -> TaskResult {
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
        reason: None,
        rubrics: task
            .rubrics
            .iter()
            .map(|r| RubricResult {
                id: r.id.clone(),
                kind: if r.is_check() { RubricKind::Check } else { RubricKind::Llm },
                weight: r.weight,
                category: r.category.clone(),
                required: r.required,
                verdict: None,
                votes: BTreeMap::new(),
                justifications: BTreeMap::new(),
                abstentions: BTreeMap::new(),
                not_asked: BTreeMap::new(),
                confidence: BTreeMap::new(),
            })
            .collect(),
        edits: None,
        expert: task.expert.as_deref().cloned(),
    }
}

/// Key of a rendered output in the cache: the file's bytes, the author the
/// gate checks, the input it compares with, the view's title and the view
/// format version.
fn render_key(bytes: &[u8], task: &Task, style: JudgeView) -> String {
    let version = view::annotated::VIEW_VERSION.to_le_bytes();
    let sha = crate::hash::sha256_hex_bytes(bytes);
    let style = match style {
        JudgeView::Annotated => "",
        JudgeView::Reference => "reference",
    };
    // The gate's result is stored with the view: its version keys it too.
    let gate_version = crate::check::CHECK_VERSION.to_le_bytes();
    let parts: [&[u8]; 8] = [
        &version,
        &gate_version,
        style.as_bytes(),
        env!("CARGO_PKG_VERSION").as_bytes(),
        sha.as_bytes(),
        task.author.as_bytes(),
        task.name.as_bytes(),
        task.input_sha.as_deref().unwrap_or("").as_bytes(),
    ];
    crate::hash::sha256_hex_parts(parts)
}

/// Key of a task's check verdicts on one output.
fn checks_key(render_key: &str, task: &Task) -> String {
    let prints: Vec<&str> = task
        .rubrics
        .iter()
        .filter_map(|r| r.check.as_ref().map(|c| c.fingerprint.as_str()))
        .collect();
    crate::hash::sha256_hex(&format!(
        "{render_key}\u{1f}{}\u{1f}{}",
        crate::check::CHECK_VERSION,
        prints.join("\u{1f}")
    ))
}

/// Check verdicts as cached: (rubric id, verdict, reason).
type CheckVerdicts = Vec<(String, Verdict, String)>;

/// Reads an output, refusing what is not a regular file or is too large
/// before reading a byte of it.
fn read(source: OutputSource) -> Result<Vec<u8>, docx::DocxError> {
    match source {
        OutputSource::Bytes(b) => Ok(b),
        OutputSource::Path(p) => docx::read_file(&p, &docx::Limits::default()),
    }
}

/// Gates, renders, checks and prompts one output. A panic anywhere in the
/// reader or the checks becomes a gate failure naming it.
pub(super) fn prepare(
    task: &Task,
    source: OutputSource,
    trial: &str,
    templates: &Templates,
    cache: &Cache,
    reader: &Reader,
) -> Prepared {
    guarded(task, trial, || prepare_unguarded(task, source, trial, templates, cache, reader))
}

/// Runs `f`; a panic in it becomes the output's gate failure naming it, so
/// that no row ever vanishes.
fn guarded(task: &Task, trial: &str, f: impl FnOnce() -> Prepared) -> Prepared {
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    caught.unwrap_or_else(|panic| {
        let what = redjury_readers::panic_message(panic.as_ref());
        let reason =
            format!("redjury failed while reading this output (a bug; please report it): {what}");
        Prepared {
            row: skeleton(task, trial, GateResult::failed(reason)),
            prompt: None,
            view: None,
        }
    })
}

fn prepare_unguarded(
    task: &Task,
    source: OutputSource,
    trial: &str,
    templates: &Templates,
    cache: &Cache,
    reader: &Reader,
) -> Prepared {
    let bytes = match read(source) {
        Ok(b) => b,
        Err(e) => {
            return Prepared {
                row: skeleton(task, trial, GateResult::failed(e.to_string())),
                prompt: None,
                view: None,
            };
        }
    };
    if task.output == OutputKind::Pdf {
        return prepare_pdf(task, bytes, trial, templates, reader);
    }
    match (task.output, crate::xlsx::is_xlsx(&bytes)) {
        (OutputKind::Workbook, true) => {
            return prepare_workbook(task, bytes, trial, templates, reader);
        }
        (OutputKind::Redline, false) if !crate::pdf::is_pdf(&bytes) => {}
        (expected, _) => {
            let gate = GateResult::failed(wrong_kind(expected, bytes, reader));
            return Prepared { row: skeleton(task, trial, gate), prompt: None, view: None };
        }
    }
    let key = render_key(&bytes, task, templates.view);
    let has_checks = task.rubrics.iter().any(|r| r.is_check());
    let checks_key = has_checks.then(|| checks_key(&key, task));
    let cached_render = lookup(cache.get_render(&key))
        .and_then(|(g, v)| Some((serde_json::from_str::<GateResult>(&g).ok()?, v)));
    let cached_checks: Option<CheckVerdicts> = checks_key
        .as_ref()
        .and_then(|k| lookup(cache.get_checks(k)))
        .and_then(|j| serde_json::from_str(&j).ok());
    // The edit record is kept beside the check verdicts, `null` for an
    // output that did not load.
    let edits_key = crate::hash::sha256_hex(&format!("{key}\u{1f}edits"));
    let cached_edits: Option<Option<crate::check::gate::EditRecord>> =
        lookup(cache.get_checks(&edits_key)).and_then(|j| serde_json::from_str(&j).ok());
    // The model is parsed only when something is not cached.
    let need_model = cached_render.is_none()
        || (has_checks && cached_checks.is_none())
        || cached_edits.is_none();
    let model = need_model.then(|| reader.document(bytes));
    let (gate, view) = match cached_render {
        Some(hit) => hit,
        None => {
            let Some(loaded) = &model else { unreachable!("parsed when the render is not cached") };
            let rendered = render(loaded, task, templates.view);
            store(cache.put_render(
                &key,
                &serde_json::to_string(&rendered.0).unwrap_or_default(),
                rendered.1.as_deref(),
            ));
            rendered
        }
    };
    let mut row = skeleton(task, trial, gate);
    row.edits = match cached_edits {
        Some(stored) => stored,
        None => {
            let doc = model.as_ref().and_then(|m| m.as_ref().ok());
            let fresh = doc.map(|d| crate::check::gate::edit_record(d, &task.author));
            if let Ok(json) = serde_json::to_string(&fresh) {
                store(cache.put_checks(&edits_key, &json));
            }
            fresh
        }
    };
    if row.gate.passed && has_checks {
        let verdicts = match (cached_checks, model.as_ref().and_then(|m| m.as_ref().ok())) {
            (Some(stored), _) => stored,
            (None, Some(doc)) => {
                let fresh = run_checks(task, doc);
                if let (Some(k), Ok(json)) = (&checks_key, serde_json::to_string(&fresh)) {
                    store(cache.put_checks(k, &json));
                }
                fresh
            }
            (None, None) => Vec::new(),
        };
        apply_checks(&mut row, verdicts);
    }
    let prompt = match &view {
        Some(text) if row.gate.passed && task.llm_rubrics().next().is_some() => {
            Some(templates.render(task, text))
        }
        _ => None,
    };
    row.prompt_hash = prompt.as_ref().map(|p| p.hash.clone());
    Prepared { row, prompt, view }
}

/// Why an output of the wrong kind fails the gate: the task decides what
/// its output is, never the file's name or content.
pub(crate) fn wrong_kind(expected: OutputKind, bytes: Vec<u8>, reader: &Reader) -> String {
    let found = match expected {
        _ if crate::pdf::is_pdf(&bytes) => "a PDF".to_string(),
        OutputKind::Redline => "an .xlsx workbook".to_string(),
        OutputKind::Pdf if crate::xlsx::is_xlsx(&bytes) => "an .xlsx workbook".to_string(),
        OutputKind::Workbook | OutputKind::Pdf => match reader.document(bytes.clone()) {
            Ok(_) => "a Word document".to_string(),
            Err(_) if expected == OutputKind::Pdf => {
                "not one: it does not start with %PDF-".to_string()
            }
            Err(_) => match reader.workbook(bytes) {
                Ok(_) => "not one (it also holds a Word document)".to_string(),
                Err(e) => format!("not one ({e})"),
            },
        },
    };
    format!("the task expects {} as its output, and this file is {found}", expected.describe())
}

/// A spreadsheet output (a term sheet): its gate is a workbook that loads
/// with at least one filled cell and, when the task names its template,
/// one cell changed from it; `xlsx_cells` checks read it, and judges
/// read its sheets as tables.
fn prepare_workbook(
    task: &Task,
    bytes: Vec<u8>,
    trial: &str,
    templates: &Templates,
    reader: &Reader,
) -> Prepared {
    let loaded = reader.workbook(bytes);
    let gate = gate::check_workbook(&loaded, task.output_template.as_deref());
    let Ok(book) = loaded else {
        return Prepared { row: skeleton(task, trial, gate), prompt: None, view: None };
    };
    let view = view::workbook::render(&book, &task.name);
    finish(task, trial, gate, view, templates, |checks| {
        crate::check::evaluate_workbook(checks, &book)
    })
}

/// The row of an output read whole (a workbook, a PDF) once its gate ran:
/// its checks when the gate passed, its view, and the judges' prompt.
fn finish(
    task: &Task,
    trial: &str,
    gate: GateResult,
    view: String,
    templates: &Templates,
    evaluate: impl FnOnce(&[&crate::task::check_spec::PreparedCheck]) -> Vec<crate::check::Outcome>,
) -> Prepared {
    let mut row = skeleton(task, trial, gate);
    if row.gate.passed {
        let (ids, checks): (Vec<&str>, Vec<_>) =
            task.rubrics.iter().filter_map(|r| Some((r.id.as_str(), r.check.as_ref()?))).unzip();
        let outcomes = evaluate(&checks);
        apply_checks(
            &mut row,
            outcomes.into_iter().zip(ids).map(|((v, why), id)| (id.to_string(), v, why)).collect(),
        );
    }
    let prompt = (row.gate.passed && task.llm_rubrics().next().is_some())
        .then(|| templates.render(task, &view));
    row.prompt_hash = prompt.as_ref().map(|p| p.hash.clone());
    Prepared { row, prompt, view: Some(view) }
}

/// A PDF output (an exhibit, a production, a binder): its gate is a PDF
/// that loads and differs from the task's input; the PDF checks read it,
/// and judges read its pages' text with its bookmarks and annotations.
fn prepare_pdf(
    task: &Task,
    bytes: Vec<u8>,
    trial: &str,
    templates: &Templates,
    reader: &Reader,
) -> Prepared {
    if !crate::pdf::is_pdf(&bytes) {
        let gate = GateResult::failed(wrong_kind(OutputKind::Pdf, bytes, reader));
        return Prepared { row: skeleton(task, trial, gate), prompt: None, view: None };
    }
    let sha = crate::hash::sha256_hex_bytes(&bytes);
    let loaded = reader.pdf(&bytes);
    let input = task.input_pdf.as_deref().zip(task.input_sha.as_deref());
    let gate = gate::check_pdf(&loaded, input, &sha);
    let Ok(pdf) = loaded else {
        return Prepared { row: skeleton(task, trial, gate), prompt: None, view: None };
    };
    let view = view::pdf::render(&pdf, &task.name);
    finish(task, trial, gate, view, templates, |checks| crate::check::evaluate_pdf(checks, &pdf))
}

/// The gate and the annotated view of a load result.
fn render(
    loaded: &Result<Document, docx::DocxError>,
    task: &Task,
    style: JudgeView,
) -> (GateResult, Option<String>) {
    let gate = gate::check_against(loaded, &task.author, task.input_doc.as_deref());
    let text = loaded
        .as_ref()
        .ok()
        .map(|doc| style.render(doc, &task.name, task.input_doc.as_deref(), &task.author));
    (gate, text)
}

fn run_checks(task: &Task, doc: &Document) -> CheckVerdicts {
    let (ids, checks): (Vec<&str>, Vec<_>) =
        task.rubrics.iter().filter_map(|r| Some((r.id.as_str(), r.check.as_ref()?))).unzip();
    let outcomes =
        crate::check::evaluate_all(&checks, doc, task.input_doc.as_deref(), &task.author);
    outcomes.into_iter().zip(ids).map(|((v, why), id)| (id.to_string(), v, why)).collect()
}

fn apply_checks(row: &mut TaskResult, verdicts: CheckVerdicts) {
    for (id, verdict, reason) in verdicts {
        if let Some(result) = row.rubrics.iter_mut().find(|r| r.id == id) {
            result.verdict = Some(verdict);
            result.votes.insert("check".into(), Some(verdict));
            result.justifications.insert("check".into(), reason);
        }
    }
}

/// A cache read that failed is a miss: the work is done again.
fn lookup<T>(r: Result<Option<T>, crate::cache::CacheError>) -> Option<T> {
    r.unwrap_or_else(|e| {
        tracing::warn!("{e}; computing instead");
        None
    })
}

/// A render or check verdict that could not be cached is computed again
/// next time; nothing paid is lost.
fn store(r: Result<(), crate::cache::CacheError>) {
    if let Err(e) = r {
        tracing::warn!("{e}; the result is not cached");
    }
}

/// The name a view file takes.
pub(super) fn view_name(task: &str, trial: &str) -> String {
    if trial == "1" { task.to_string() } else { format!("{task}__{trial}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{Rubric, Side};

    #[test]
    fn a_panic_while_reading_becomes_the_rows_gate_failure() {
        let task =
            Task::named("redline-s1-t1-g01a", Side::A, "A", vec![Rubric::llm("r1", "x", "c", 3)]);
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let item = guarded(&task, "2", || panic!("boom in the reader"));
        std::panic::set_hook(prev);
        assert_eq!((item.row.task.as_str(), item.row.trial.as_str()), ("redline-s1-t1-g01a", "2"));
        assert!(!item.row.gate.passed);
        assert_eq!(
            item.row.gate.reason,
            "redjury failed while reading this output (a bug; please report it): boom in the reader"
        );
        assert!(item.prompt.is_none());
    }
}
