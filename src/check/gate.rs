//! The validity gate: an output counts only if it is a loadable .docx with at
//! least one tracked change or comment by the task's author — or, for a
//! task whose output is a spreadsheet, a loadable .xlsx with a filled cell,
//! changed from the task's template when it names one.
//!
//! Owns: author-name matching (see [`same_author`]) and the gate's reasons.
//! Must never load the file itself: callers hand it a parsed document or the
//! load error, so the gate and the scorer can never disagree on loadability.

use std::collections::BTreeMap;

use super::text::normalise_ws;
use crate::docx::{Document, DocxError};
use crate::view::characters::author_key;
use crate::xlsx::{Workbook, XlsxError};

/// The gate's decision and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GateResult {
    /// Whether the output passed.
    pub passed: bool,
    /// Why, in one line a user can act on.
    pub reason: String,
    /// Tracked changes by the author.
    #[serde(default)]
    pub revisions: usize,
    /// Comments and replies by the author.
    #[serde(default)]
    pub comments: usize,
    /// Changes not tracked as this round's, when the task names its input:
    /// edits made without tracking, and changes attributed to another
    /// author that the input does not hold.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub untracked: usize,
}

/// The shape of an output's tracked changes as RedlineBench's
/// `docx_metrics.py` reads it, for the surgicalness and verbosity
/// figures: the events of the task author's changes (the author as the
/// gate matches it), and every author's edits.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EditRecord {
    /// The author's events, in document order.
    pub own: Vec<crate::docx::EditEvent>,
    /// Every author's edits.
    pub all: crate::docx::Edits,
}

/// The edit record of `doc` for a task by `author`.
pub(crate) fn edit_record(doc: &Document, author: &str) -> EditRecord {
    let key = author_key(author);
    EditRecord {
        own: doc.shape.edits(&|a| author_key(a) == key).events,
        all: doc.shape.edits(&|_| true),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The output's tracked changes attributed to someone other than `author`
/// that the input does not hold, in a reader's words: another side does
/// not act in this round, so every change of theirs comes from the input.
pub(crate) fn not_in_input(doc: &Document, input: &Document, author: &str) -> Vec<String> {
    let held = crate::docx::held_by_input(doc, input);
    let key = author_key(author);
    doc.revisions
        .iter()
        .enumerate()
        .filter(|(i, r)| {
            !held.get(*i).copied().unwrap_or(false)
                && r.author.as_deref().is_none_or(|a| author_key(a) != key)
        })
        .map(|(_, r)| {
            let who = r.author.as_deref().map(normalise_ws).unwrap_or_else(|| "no author".into());
            format!("a change ({:?}) attributed to '{who}' that the input does not hold", r.kind)
        })
        .collect()
}

impl GateResult {
    /// A failed gate with its reason.
    pub fn failed(reason: impl Into<String>) -> GateResult {
        GateResult { passed: false, reason: reason.into(), revisions: 0, comments: 0, untracked: 0 }
    }
}

/// Whether two author names are the same person as a reader of the review
/// pane sees them: compared as read (invisible characters dropped,
/// lookalike letters read as the Latin ones), surrounding whitespace
/// ignored and inner runs of whitespace (including non-breaking spaces)
/// counting as one space. Case is kept: "Vendor Counsel" and "vendor
/// counsel" differ, as they do in Word's review pane.
pub(crate) fn same_author(a: &str, b: &str) -> bool {
    author_key(a) == author_key(b)
}

/// Applies the gate to a spreadsheet's load result. A sheet has no tracked
/// changes to ask for; a workbook with no filled cell is not an answer, and
/// neither is the `template` it was to be filled in from, returned with no
/// cell changed (as an unedited .docx fails for want of a change).
pub fn check_workbook(
    loaded: &Result<Workbook, XlsxError>,
    template: Option<&Workbook>,
) -> GateResult {
    let book = match loaded {
        Ok(b) => b,
        Err(e) => return GateResult::failed(e.to_string()),
    };
    // A person sees no hidden sheet: cells filled only there fill nothing.
    let seen = book.as_seen(crate::xlsx::KeepHidden::No, crate::xlsx::ShownValues::Stored);
    let filled: usize = seen.sheets.iter().map(|s| s.cells.len()).sum();
    if filled == 0 {
        return GateResult::failed("the spreadsheet has no filled cell");
    }
    let changed = template.map(|t| changed_cells(book, t));
    if changed == Some(0) {
        return GateResult::failed(
            "no cell differs from the task's output template: the sheet was returned as it came",
        );
    }
    let against = changed.map(|n| format!(", {n} changed from the template")).unwrap_or_default();
    GateResult {
        passed: true,
        reason: format!(
            "a spreadsheet: {} sheet(s), {filled} filled cells{against}",
            book.sheets.len()
        ),
        revisions: 0,
        comments: 0,
        untracked: 0,
    }
}

/// Applies the gate to a PDF's load result: a PDF that loads with at
/// least one page (the reader refuses none) and shows something the
/// task's input does not — its bytes alone differing (metadata, a
/// re-save) is not enough.
pub fn check_pdf(
    loaded: &Result<crate::pdf::Pdf, crate::pdf::PdfError>,
    input: Option<(&crate::pdf::Pdf, &str)>,
    sha: &str,
) -> GateResult {
    let pdf = match loaded {
        Ok(p) => p,
        Err(e) => return GateResult::failed(e.to_string()),
    };
    if let Some((source, source_sha)) = input
        && (sha == source_sha || same_pdf(pdf, source))
    {
        return GateResult::failed(
            "the PDF is the task's input unchanged: no page, bookmark or annotation differs",
        );
    }
    let annotations: usize = pdf.pages.iter().map(|p| p.annotations.len()).sum();
    GateResult {
        passed: true,
        reason: format!(
            "a PDF: {} page(s), {} bookmark(s), {annotations} annotation(s)",
            pdf.pages.len(),
            pdf.bookmarks.len()
        ),
        revisions: 0,
        comments: 0,
        untracked: 0,
    }
}

/// Whether two PDFs show the same thing: the same pages (drawing, boxes,
/// rotation, labels, annotations) and the same outline. Anything else a
/// task may ask of an output (a retargeted link, a renamed bookmark, a
/// crop) is a difference.
fn same_pdf(a: &crate::pdf::Pdf, b: &crate::pdf::Pdf) -> bool {
    let page = |p: &crate::pdf::Page| {
        let marks = serde_json::to_string(&p.annotations).unwrap_or_default();
        (p.content_hash.clone(), format!("{:?}{:?}{:?}", p.crop_box, p.rotation, p.label), marks)
    };
    let outline = |p: &crate::pdf::Pdf| serde_json::to_string(&p.bookmarks).unwrap_or_default();
    a.pages.len() == b.pages.len()
        && a.pages.iter().zip(&b.pages).all(|(x, y)| page(x) == page(y))
        && outline(a) == outline(b)
}

/// How many cells of `book` differ from the same sheet's cell in
/// `template` (added, changed or cleared), sheets matched by name; cost is
/// linear in the cells of both.
fn changed_cells(book: &Workbook, template: &Workbook) -> usize {
    book.sheets
        .iter()
        .map(|sheet| match template.sheets.iter().find(|t| t.name == sheet.name) {
            None => sheet.cells.len().max(1),
            Some(t) => {
                let differ = sheet.cells.iter().filter(|(at, c)| t.cells.get(at) != Some(c));
                let cleared = t.cells.keys().filter(|at| !sheet.cells.contains_key(at));
                differ.count() + cleared.count()
            }
        })
        .sum()
}

/// Whether the output's new changes by the author (key `key`) include a
/// formatting or property change, which a reader sees without the text
/// changing.
fn new_formatting(doc: &Document, old: &crate::docx::CarriedOver, key: &str) -> bool {
    doc.revisions.iter().enumerate().any(|(i, r)| {
        r.kind.is_format()
            && !old.revision(i)
            && r.author.as_deref().is_some_and(|a| author_key(a) == key)
    })
}

/// Whether a reader sees the same text in both documents with every change
/// accepted: hidden text left out, characters as read, whitespace collapsed.
fn reads_the_same(doc: &Document, input: &Document) -> bool {
    seen_lines(doc) == seen_lines(input)
}

/// What a reader sees of a document with every change accepted, line by
/// line: the body's paragraphs (a split or a merge changes the lines),
/// then every header, footer, note and text box, with each picture's
/// alternative text where it stands; hidden text left out, as read.
fn seen_lines(d: &Document) -> Vec<String> {
    use crate::docx::{Inline, State, visit_paragraphs};
    let seen = d.as_seen();
    let read = |s: &str| normalise_ws(&crate::view::characters::as_read(s));
    let mut lines: Vec<String> =
        crate::view::plain::lines(&seen, State::Accepted).iter().map(|l| read(l)).collect();
    let mut visit = |p: &crate::docx::Paragraph| {
        let mut line = read(&crate::view::plain::paragraph_text(p, State::Accepted));
        for inline in &p.inlines {
            if let Inline::Picture { alt, deleted: None, .. } = inline {
                line.push_str(&format!(" [picture: {alt}]"));
            }
        }
        lines.push(line);
    };
    visit_paragraphs(&seen.body, &mut |p| {
        if p.inlines.iter().any(|i| matches!(i, Inline::Picture { .. })) {
            visit(p);
        }
    });
    for story in &seen.stories {
        visit_paragraphs(&story.blocks, &mut visit);
    }
    // A paragraph with nothing to read is no difference.
    lines.retain(|l| !l.is_empty());
    lines
}

/// Applies the gate to a load result.
pub fn check(loaded: &Result<Document, DocxError>, author: &str) -> GateResult {
    check_against(loaded, author, None)
}

/// Applies the gate counting only what the output adds to `input`: a
/// turn-3 output must not pass on the same author's turn-1 changes that it
/// merely carried over.
pub fn check_against(
    loaded: &Result<Document, DocxError>,
    author: &str,
    input: Option<&Document>,
) -> GateResult {
    let doc = match loaded {
        Ok(doc) => doc,
        Err(e) => {
            return GateResult::failed(e.to_string());
        }
    };
    let want = normalise_ws(author);
    let key = author_key(author);
    let mine = |a: &Option<String>| a.as_deref().is_some_and(|a| author_key(a) == key);
    let old = match input {
        Some(input) => crate::docx::carried_over(doc, input),
        None => crate::docx::CarriedOver::none(doc),
    };
    let (mut revisions, mut comments, mut carried) = (0, 0, 0);
    for (i, _) in doc.revisions.iter().enumerate().filter(|(_, r)| mine(&r.author)) {
        if old.revision(i) { carried += 1 } else { revisions += 1 }
    }
    let shown = |c: &crate::docx::Comment| super::comment::shown(c);
    for (i, _) in doc.comments.iter().enumerate().filter(|(_, c)| mine(&c.author) && shown(c)) {
        if old.comment(i) { carried += 1 } else { comments += 1 }
    }
    let carried_note = if carried > 0 {
        format!(" ({carried} more carried over from the input)")
    } else {
        String::new()
    };
    if let Some(input) = input
        && revisions + comments > 0
        && comments == 0
        && !new_formatting(doc, &old, &key)
        && reads_the_same(doc, input)
    {
        return GateResult::failed(format!(
            "no visible difference from the input: the {revisions} new tracked change(s) by '{want}' leave the text a reader sees as it was (hidden text, invisible characters, or text deleted and inserted again)"
        ));
    }
    if revisions + comments > 0 {
        let new = if input.is_some() { "new " } else { "" };
        let untracked = match input {
            Some(input) => {
                let (doc_seen, input_seen) = (doc.as_seen(), input.as_seen());
                crate::view::untracked::compare(&doc_seen, &input_seen).count()
                    + crate::view::untracked::story_edits(&doc_seen, &input_seen).len()
                    + not_in_input(doc, input, author).len()
            }
            None => 0,
        };
        let untracked_note = match untracked {
            0 => String::new(),
            n => format!(
                "; {n} change(s) not tracked as this round's (edits without tracking, or another author's changes the input does not hold)"
            ),
        };
        return GateResult {
            passed: true,
            reason: format!(
                "{revisions} {new}tracked change(s) and {comments} {new}comment(s) by '{want}'{carried_note}{untracked_note}"
            ),
            revisions,
            comments,
            untracked,
        };
    }
    if carried > 0 {
        return GateResult {
            passed: false,
            reason: format!(
                "no new tracked change or comment by '{want}': its {carried} are all carried over from the input"
            ),
            revisions: 0,
            comments: 0,
            untracked: 0,
        };
    }
    // Say what the file does contain, so a near miss is obvious.
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    for a in doc
        .revisions
        .iter()
        .map(|r| r.author.as_deref())
        .chain(doc.comments.iter().map(|c| c.author.as_deref()))
    {
        *others.entry(a.map(normalise_ws).unwrap_or_else(|| "(no author)".into())).or_default() +=
            1;
    }
    let reason = if others.is_empty() {
        format!(
            "no tracked change or comment at all (edits made without Track Changes?); expected some by '{want}'"
        )
    } else {
        let found: Vec<String> = others.iter().map(|(a, n)| format!("{n} by '{a}'")).collect();
        let hint = others
            .keys()
            .find(|a| a.to_lowercase() == want.to_lowercase())
            .map(|a| format!(" ('{a}' differs only in letter case)"))
            .unwrap_or_default();
        format!("no tracked change or comment by '{want}'; found {}{hint}", found.join(", "))
    };
    GateResult { passed: false, reason, revisions: 0, comments: 0, untracked: 0 }
}
