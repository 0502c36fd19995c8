//! Deterministic checks: rubric items scored exactly from the document
//! model, next to judge items, in the same reward formula — and the
//! validity gate, the first check every output meets.
//!
//! A rubric item with `"kind": "check"` carries a `"check"` object, parsed
//! and validated when tasks load (`crate::task::check_spec`); see README
//! "Checks" for each type. This module evaluates them: one file per check
//! type, sharing the section map (`sections.rs`) and text measures
//! (`text.rs`).
//!
//! Owns: evaluation. Must never call a judge or touch the network, and
//! every verdict comes with a one-line reason.

mod accepted;
mod author;
mod comment;
mod fields;
pub(crate) mod gate;
mod numbering;
mod pattern;
mod pdf;
mod provenance;
mod revisions;
mod scope;
pub(crate) mod sections;
mod table;
pub(crate) mod text;
mod untracked;
mod xlsx_cells;

use crate::docx::Document;
use crate::task::check_spec::{CheckSpec, PreparedCheck};
use crate::verdict::Verdict;
use sections::Sections;

/// The version of check evaluation. Bump it whenever a check can give
/// another verdict or reason for the same inputs: it keys cached verdicts
/// and, with the view's version, cached gate results.
pub(crate) const CHECK_VERSION: u32 = 10;

/// A check's verdict and the one-line reason for it.
pub type Outcome = (Verdict, String);

/// What every evaluator may read: the output, its sections, the task's
/// input (mapped only when a check compares with it) and the task author.
struct Facts<'d> {
    /// The output as a person sees it (hidden text left out).
    doc: &'d Document,
    /// The output as stored, hidden text included, for a check that asks.
    stored: &'d Document,
    sections: Sections<'d>,
    input: Option<Sections<'d>>,
    /// The task's input as seen, when a check compares with it.
    input_doc: Option<&'d Document>,
    task_author: &'d str,
}

/// Runs one check on an output. `input` is the task's input document (for
/// `scope`); `task_author` is the default author.
pub fn evaluate(
    check: &PreparedCheck,
    doc: &Document,
    input: Option<&Document>,
    task_author: &str,
) -> Outcome {
    evaluate_all(&[check], doc, input, task_author)
        .pop()
        .unwrap_or((Verdict::Fail, "no check to run".into()))
}

/// Runs a task's checks on one output, mapping the document's sections
/// once (and the input's once, if a check needs them).
pub(crate) fn evaluate_all(
    checks: &[&PreparedCheck],
    doc: &Document,
    input: Option<&Document>,
    task_author: &str,
) -> Vec<Outcome> {
    let needs_input = checks
        .iter()
        .any(|c| matches!(c.spec, CheckSpec::Scope { .. } | CheckSpec::UntrackedChanges { .. }));
    // Checks read what a person sees: text no one can see neither
    // satisfies nor breaks them (a parameter asks for it).
    let seen = doc.as_seen();
    let seen_doc: &Document = &seen;
    let input_seen = input.filter(|_| needs_input).map(Document::as_seen);
    let input_doc: Option<&Document> = input_seen.as_deref();
    let facts = Facts {
        doc: seen_doc,
        stored: doc,
        sections: Sections::of(seen_doc),
        input: input_doc.map(Sections::of),
        input_doc,
        task_author,
    };
    checks.iter().map(|c| evaluate_one(c, &facts)).collect()
}

fn evaluate_one(check: &PreparedCheck, facts: &Facts<'_>) -> Outcome {
    match &check.spec {
        CheckSpec::Author { authors, mode, include_comments } => {
            author::evaluate(facts, authors, *mode, *include_comments)
        }
        CheckSpec::Scope { sections, author } => {
            scope::evaluate(facts, sections, author.as_deref())
        }
        CheckSpec::UntrackedChanges { max, attributed } => {
            untracked::evaluate(facts, *max, *attributed)
        }
        CheckSpec::NoFormatChanges { author } => {
            revisions::no_format_changes(facts, author.as_deref())
        }
        CheckSpec::RevisionsRemaining { kinds, author, min, max } => {
            revisions::remaining(facts, kinds, author.as_deref(), *min, *max)
        }
        CheckSpec::AcceptedTextEquals { section, text, min_f1, .. } => {
            accepted::text_equals(facts, check, section.as_deref(), text.as_deref(), *min_f1)
        }
        CheckSpec::RevisionSetF1 { min_f1, author, .. } => {
            accepted::revision_set_f1(facts, check, *min_f1, author.as_deref())
        }
        CheckSpec::Comment(spec) => comment::evaluate(facts, check, spec),
        CheckSpec::Contains(p) => pattern::evaluate(facts, check, p, Expect::Match),
        CheckSpec::NotContains(p) => pattern::evaluate(facts, check, p, Expect::NoMatch),
        CheckSpec::Provenance { rsids, .. } => provenance::evaluate(facts, check, *rsids),
        CheckSpec::Fields(spec) => fields::evaluate(facts, spec),
        CheckSpec::Numbering { section, level } => {
            numbering::evaluate(facts, section.as_deref(), *level)
        }
        CheckSpec::Table(spec) => table::evaluate(facts, check, spec),
        CheckSpec::XlsxCells(_) => {
            verdict(false, "this check reads a spreadsheet, and the output is a .docx".into())
        }
        crate::task::check_spec::pdf_check!() => {
            verdict(false, "this check reads a PDF, and the output is a .docx".into())
        }
    }
}

pub use pdf::evaluate_pdf;

/// The sections a task's checks name that its input document does not
/// resolve to exactly one section: a heading or title missing from the
/// input, or naming two sections (`"Notices"` titling 5.1 and 6.1), is a
/// load error naming the candidates. A label the input lacks (`"9.4"`) is
/// not: an output may add that clause.
pub(crate) fn section_name_problems(task: &crate::task::Task) -> Vec<String> {
    let Some(input) = task.input_doc.as_deref() else { return Vec::new() };
    let sections = Sections::of(input);
    let mut problems = Vec::new();
    for rubric in &task.rubrics {
        let Some(check) = &rubric.check else { continue };
        for name in section_params(&check.spec) {
            if let Err(why) = sections.resolve(name)
                && !sections.label_to_come(name)
            {
                problems.push(format!("rubric {}: {why} (in the task's input)", rubric.id));
            }
        }
    }
    problems
}

/// The sections a check names.
fn section_params(spec: &CheckSpec) -> Vec<&str> {
    match spec {
        CheckSpec::Scope { sections, .. } => sections.iter().map(String::as_str).collect(),
        CheckSpec::AcceptedTextEquals { section, .. } | CheckSpec::Numbering { section, .. } => {
            section.as_deref().into_iter().collect()
        }
        CheckSpec::Comment(c) => c.section.as_deref().into_iter().collect(),
        CheckSpec::Contains(p) | CheckSpec::NotContains(p) => {
            p.section.as_deref().into_iter().collect()
        }
        CheckSpec::Table(t) => t.section.as_deref().into_iter().collect(),
        CheckSpec::Fields(f) => f.target_section.as_deref().into_iter().collect(),
        _ => Vec::new(),
    }
}

/// Runs a task's checks on a spreadsheet output: `xlsx_cells` reads it;
/// every other check reads a .docx and fails with that reason.
pub fn evaluate_workbook(checks: &[&PreparedCheck], book: &crate::xlsx::Workbook) -> Vec<Outcome> {
    checks
        .iter()
        .map(|c| match &c.spec {
            CheckSpec::XlsxCells(spec) => xlsx_cells::evaluate_seen(book, spec),
            spec if spec.reads_pdf() => {
                verdict(false, "this check reads a PDF, and the output is a spreadsheet".into())
            }
            _ => verdict(false, "this check reads a .docx, and the output is a spreadsheet".into()),
        })
        .collect()
}

/// What `contains` and `not_contains` want of their regex.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    Match,
    NoMatch,
}

/// Whether `candidate` is `author` (any author when `None`).
fn by(author: Option<&str>, candidate: Option<&str>) -> bool {
    match author {
        None => true,
        Some(a) => candidate.is_some_and(|c| gate::same_author(a, c)),
    }
}

fn verdict(pass: bool, reason: String) -> Outcome {
    (Verdict::from_pass(pass), reason)
}

/// The reason given when a check names a section the document lacks.
fn unknown_section(why: &str) -> Outcome {
    verdict(false, why.to_string())
}

impl Facts<'_> {
    /// The section a check names (a label, or a heading or title), as a
    /// label; `Err` is the outcome to give when the output has no such
    /// section.
    fn section(&self, s: Option<&str>) -> Result<Option<String>, Outcome> {
        match s {
            None => Ok(None),
            Some(s) => self.sections.resolve(s).map(Some).map_err(|why| unknown_section(&why)),
        }
    }
}
