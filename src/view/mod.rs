//! Views of a document model: what judges, checks and people read.
//!
//! Owns: turning a [`Document`] (or a workbook, or a PDF) into text — annotated Markdown for judges,
//! accepted/rejected plain text, and the JSON model. Must never read a file
//! or change the model.

pub(crate) mod annotated;
pub(crate) mod characters;
pub(crate) mod pdf;
pub(crate) mod plain;
pub(crate) mod reference;
pub(crate) mod untracked;
pub(crate) mod workbook;

use serde::Serialize;

use crate::docx::{Document, State};

/// Which view the judges read: redjury's annotated view, or the
/// reference's plainer one (chosen by the prompt set's `view.txt`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeView {
    #[default]
    /// The annotated view (authors, labels, all change kinds).
    Annotated,
    /// The reference's view.
    Reference,
}

impl JudgeView {
    /// The judges' view of `doc` (an output by `author` of a task whose
    /// input is `input`).
    pub fn render(
        self,
        doc: &Document,
        title: &str,
        input: Option<&Document>,
        author: &str,
    ) -> String {
        match self {
            JudgeView::Annotated => annotated::render_round(doc, title, input, Some(author)),
            JudgeView::Reference => reference::render(doc, title),
        }
    }
}

/// The judges' annotated view of an output by `author` against its
/// task's input (turn 2 and later): what the output carried over from the
/// input is marked as an earlier round, what it changed without tracking
/// is marked untracked, and another author's change the input does not
/// hold is tagged `not in the input`.
pub fn render_against(doc: &Document, title: &str, input: &Document, author: &str) -> String {
    annotated::render_round(doc, title, Some(input), Some(author))
}

/// The views `redjury render` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewKind {
    /// The annotated view.
    Annotated,
    /// The reference's view (no authors, labels or redjury extensions).
    Reference,
    /// Text with every change accepted.
    Accepted,
    /// Text with every change rejected.
    Rejected,
    /// The document model as JSON.
    Json,
}

/// The JSON view's envelope: a format tag and version, then the model.
#[derive(Serialize)]
struct JsonView<'d> {
    format: &'static str,
    version: u32,
    #[serde(flatten)]
    document: &'d Document,
}

/// Renders a spreadsheet output as `kind`: its sheets as tables (what
/// judges read) in every text view — a sheet has no tracked changes to
/// accept or reject — or the workbook model as JSON.
pub fn render_workbook(book: &crate::xlsx::Workbook, kind: ViewKind, title: &str) -> String {
    match kind {
        ViewKind::Json => {
            #[derive(Serialize)]
            struct WorkbookView<'b> {
                format: &'static str,
                version: u32,
                #[serde(flatten)]
                workbook: &'b crate::xlsx::Workbook,
            }
            let view = WorkbookView { format: "redjury.workbook", version: 1, workbook: book };
            let mut s = serde_json::to_string_pretty(&view).unwrap_or_default();
            s.push('\n');
            s
        }
        _ => workbook::render(book, title),
    }
}

/// Renders a PDF output as `kind`: its pages' text, bookmarks and
/// annotations (what judges read) in every text view — a PDF has no
/// tracked changes — or the PDF model as JSON.
pub fn render_pdf(pdf: &crate::pdf::Pdf, kind: ViewKind, title: &str) -> String {
    match kind {
        ViewKind::Json => {
            #[derive(Serialize)]
            struct PdfView<'p> {
                format: &'static str,
                version: u32,
                #[serde(flatten)]
                pdf: &'p crate::pdf::Pdf,
            }
            let view = PdfView { format: "redjury.pdf", version: 1, pdf };
            let mut s = serde_json::to_string_pretty(&view).unwrap_or_default();
            s.push('\n');
            s
        }
        _ => pdf::render(pdf, title),
    }
}

/// Renders `doc` as `kind`; `title` names it in the annotated view.
pub fn render(doc: &Document, kind: ViewKind, title: &str) -> String {
    match kind {
        ViewKind::Annotated => annotated::render(doc, title),
        ViewKind::Reference => reference::render(doc, title),
        ViewKind::Accepted => plain::render(doc, State::Accepted),
        ViewKind::Rejected => plain::render(doc, State::Rejected),
        ViewKind::Json => {
            let view = JsonView { format: "redjury.document", version: 1, document: doc };
            // Serialising plain structs of strings and numbers cannot fail.
            let mut s = serde_json::to_string_pretty(&view).unwrap_or_default();
            s.push('\n');
            s
        }
    }
}
