//! What a deterministic check asks, as a task file writes it: the typed
//! parameters of every check type, validated when tasks load.
//!
//! Owns: the check schema (`"kind": "check"` items), parameter validation
//! (regexes compiled, gold documents loaded) and each check's fingerprint.
//! Must never evaluate a check (that is `crate::check`'s job) and never
//! accept a parameter it does not know: a typo is an error naming it.

use std::path::Path;
use std::sync::Arc;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::docx::{self, Document, RevisionKind};

mod pdf;
pub(crate) use pdf::Compiled as CompiledPdf;
pub(crate) use pdf::{
    AnnotationSort, AnnotationsSpec, BatesSpec, BookmarksSpec, HighlightLines, LinksSpec,
    PagesSpec, PdfProvenanceSpec, TextRegionSpec,
};

/// Whose changes the `author` check accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorMode {
    /// At least one change or comment, and every one by the authors.
    #[default]
    All,
    /// None by anyone else (none at all passes).
    Only,
    /// At least one by the authors.
    Any,
}

/// Which text `contains` / `not_contains` search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Text inserted by tracked changes (and not deleted again).
    Inserted,
    /// Text deleted by tracked changes.
    Deleted,
    /// The document's text with every change accepted.
    Accepted,
}

/// Which characters a text check compares: the text as a person reads it
/// (the default), or the characters stored in the file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Characters {
    /// As read: invisible characters dropped, bidi overrides in the order
    /// shown, NFKC, lookalike letters read as the Latin ones
    /// (`crate::view::characters::as_read`).
    #[default]
    AsRead,
    /// The characters as the file stores them.
    Stored,
}

/// Whether a text check reads text a person does not see (formatted
/// hidden, too small to read, the background's colour, a text box of zero
/// size).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenText {
    /// Left out: the check reads what a person sees.
    #[default]
    Excluded,
    /// Read as if it were shown.
    Included,
}

/// A check as written in a task file (see README "Checks").
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum CheckSpec {
    /// Who made the tracked changes and comments.
    Author {
        /// The authors whose changes count.
        authors: Vec<String>,
        #[serde(default)]
        /// How the authors must relate to everyone else's changes.
        mode: AuthorMode,
        #[serde(default = "yes")]
        /// Whether comments count as changes.
        include_comments: bool,
    },
    /// The author's changes stay inside the named sections.
    Scope {
        /// Section labels ("8", "9.2") the changes must stay in.
        sections: Vec<String>,
        #[serde(default)]
        /// Whose changes (default: the task's author).
        author: Option<String>,
    },
    /// At most `max` changes the output made without tracking (compared
    /// with the task's input), counting too, unless `attributed` is false,
    /// changes attributed to another author that the input does not hold.
    UntrackedChanges {
        #[serde(default)]
        /// At most this many (default 0).
        max: u32,
        #[serde(default = "yes")]
        /// Count another author's changes the input does not hold.
        attributed: bool,
    },
    /// No tracked formatting change.
    NoFormatChanges {
        #[serde(default)]
        /// Whose changes (default: anyone's).
        author: Option<String>,
    },
    /// How many tracked changes of some kinds remain.
    RevisionsRemaining {
        #[serde(default)]
        /// The kinds of change counted (default: all).
        kinds: Vec<RevisionKind>,
        #[serde(default)]
        /// Whose changes (default: anyone's).
        author: Option<String>,
        #[serde(default)]
        /// At least this many.
        min: Option<u32>,
        #[serde(default)]
        /// At most this many.
        max: Option<u32>,
    },
    /// The accepted text (of a section) equals a gold text.
    AcceptedTextEquals {
        #[serde(default)]
        /// The section compared (default: the whole document).
        section: Option<String>,
        #[serde(default)]
        /// The gold text.
        text: Option<String>,
        #[serde(default)]
        /// A gold .docx whose accepted text is the gold (relative to the task file).
        gold_docx: Option<String>,
        #[serde(default)]
        /// Pass at this token F1 instead of exact equality.
        min_f1: Option<f64>,
    },
    /// Token F1 of the inserted and deleted text against a gold redline.
    RevisionSetF1 {
        /// The gold redline (relative to the task file).
        gold_docx: String,
        /// The token F1 to reach.
        min_f1: f64,
        #[serde(default)]
        /// Whose changes on both sides (default: anyone's).
        author: Option<String>,
    },
    /// How many comments match; or, with thread parameters, replies on
    /// every thread and the exact set of threads marked done.
    Comment(CommentSpec),
    /// A regex matches some text.
    Contains(Pattern),
    /// A regex matches no text.
    NotContains(Pattern),
    /// What saved the file: the application and Word's session ids.
    Provenance {
        #[serde(default)]
        /// A regex the `Application` of docProps/app.xml must match.
        application: Option<String>,
        #[serde(default)]
        /// Whether `w:rsid` attributes must be present (true) or absent (false).
        rsids: Option<bool>,
    },
    /// Cross-references resolve and tables of contents match the headings.
    Fields(FieldsSpec),
    /// List labels are consecutive (no gap, no repeat) in the accepted state.
    Numbering {
        #[serde(default)]
        /// The section whose list is checked (label or title; default: the body).
        section: Option<String>,
        #[serde(default)]
        /// The list level checked, 1 = top (default: the shallowest numbered level in the section).
        level: Option<u8>,
    },
    /// A table after accepting the changes, and its tracked changes.
    Table(TableSpec),
    /// Cells of an .xlsx output against a key.
    XlsxCells(XlsxSpec),
    /// PDF: Bates numbers, one per page, consecutive, in a region.
    Bates(BatesSpec),
    /// PDF: the pages are the inputs' pages, in order.
    Pages(PagesSpec),
    /// PDF: the outline.
    Bookmarks(BookmarksSpec),
    /// PDF: a table of contents linked to the pages it names.
    Links(LinksSpec),
    /// PDF: stamps, highlights and notes.
    Annotations(AnnotationsSpec),
    /// PDF: text in a region of the pages.
    TextRegion(TextRegionSpec),
    /// PDF: producer, creator and text layer.
    PdfProvenance(PdfProvenanceSpec),
}

/// The checks that read a PDF output, as a pattern: the one list of them.
macro_rules! pdf_check {
    () => {
        $crate::task::check_spec::CheckSpec::Bates(_)
            | $crate::task::check_spec::CheckSpec::Pages(_)
            | $crate::task::check_spec::CheckSpec::Bookmarks(_)
            | $crate::task::check_spec::CheckSpec::Links(_)
            | $crate::task::check_spec::CheckSpec::Annotations(_)
            | $crate::task::check_spec::CheckSpec::TextRegion(_)
            | $crate::task::check_spec::CheckSpec::PdfProvenance(_)
    };
}
pub(crate) use pdf_check;

impl CheckSpec {
    /// Whether the check reads a PDF output.
    pub fn reads_pdf(&self) -> bool {
        matches!(self, pdf_check!())
    }
}

/// How spreadsheet cells are compared with the key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum XlsxMatch {
    /// Equal after whitespace normalisation.
    Exact,
    /// Equal ignoring case, inner spacing and surrounding punctuation.
    #[default]
    Normalized,
    /// Numbers equal within `tolerance` (text compared as `normalized`).
    Numeric,
    /// The same calendar day, however written: a date cell, ISO
    /// ("2025-01-31"), "31 January 2025", "Jan 31, 2025", or a numeric
    /// "31/01/2025" when only one day-month order makes it a date.
    Date,
}

/// The parameters of the `xlsx_cells` check.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XlsxSpec {
    #[serde(default)]
    /// The sheet (default: the first).
    pub sheet: Option<String>,
    #[serde(default)]
    /// Expected cells, "B3" → text, number or true/false; a date as "2026-01-31".
    pub cells: std::collections::BTreeMap<String, serde_json::Value>,
    #[serde(default, rename = "match")]
    /// How cells are compared.
    pub compare: XlsxMatch,
    #[serde(default)]
    /// Absolute tolerance of numeric matches (default: 1e-9 of the value).
    pub tolerance: Option<f64>,
    #[serde(default)]
    /// Multi-value cells: split on this and compared as sets.
    pub separator: Option<String>,
    #[serde(default)]
    /// Share of `cells` that must match (default 1).
    pub min_correct: Option<f64>,
    #[serde(default)]
    /// A list-like range whose rows are matched, as a set, against expected rows.
    pub rows: Option<RowSet>,
    #[serde(default)]
    /// The template's shape that must survive.
    pub template: Option<TemplateSpec>,
    #[serde(default)]
    /// Whether hidden and very hidden sheets are read (default: not).
    pub hidden: HiddenText,
    #[serde(default)]
    /// Which value a cell has: what its number format shows (default), or
    /// the value stored.
    pub values: CellValues,
}

/// Which value `xlsx_cells` reads from a cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellValues {
    /// What the cell shows: a number format that shows text in place of
    /// the number (`"120,000"`, `;;;`) gives that text.
    #[default]
    Shown,
    /// The value the file stores.
    Stored,
}

/// Rows of a range matched as a set.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSet {
    /// The range, "A2:C40".
    pub range: String,
    /// The expected rows (each as the range's columns, left to right).
    pub expected: Vec<Vec<serde_json::Value>>,
    #[serde(default)]
    /// Share of expected rows that must be found (default 1).
    pub min_recall: Option<f64>,
}

/// What of a template must be intact.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplateSpec {
    #[serde(default)]
    /// Sheets that must exist, by name.
    pub sheets: Vec<String>,
    #[serde(default)]
    /// The header row's number (default 1) …
    pub header_row: Option<u32>,
    #[serde(default)]
    /// … and its cells, left to right.
    pub header: Vec<String>,
    #[serde(default)]
    /// Whether the sheet must still carry data validation.
    pub data_validation: Option<bool>,
}

impl XlsxSpec {
    /// Checks the parameters; `Err((parameter, what is wrong))`.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.cells.is_empty() && self.rows.is_none() && self.template.is_none() {
            return Err(("cells", "give cells, rows, template or several".into()));
        }
        for address in self.cells.keys() {
            if crate::xlsx::a1(address).is_none() {
                return Err(("cells", format!("{address:?} is not a cell address like \"B3\"")));
            }
        }
        let share = |v: Option<f64>| v.is_none_or(|x| x > 0.0 && x <= 1.0);
        if !share(self.min_correct) {
            return Err(("min_correct", "a share within (0, 1]".into()));
        }
        if self.tolerance.is_some_and(|t| !(t >= 0.0 && t.is_finite())) {
            return Err(("tolerance", "a finite number ≥ 0".into()));
        }
        if let Some(r) = &self.rows {
            if range(&r.range).is_none() {
                return Err(("rows", format!("range {:?} is not like \"A2:C40\"", r.range)));
            }
            if !share(r.min_recall) {
                return Err(("rows", "min_recall is a share within (0, 1]".into()));
            }
        }
        Ok(())
    }
}

pub(crate) use crate::xlsx::range;

/// The parameters of the `fields` check.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldsSpec {
    #[serde(default = "yes")]
    /// Every REF, PAGEREF and NOTEREF field points at a bookmark that exists.
    pub references: bool,
    #[serde(default = "yes")]
    /// No field shows Word's unresolved-reference text ("Error! Reference source not found.").
    pub resolved_text: bool,
    #[serde(default)]
    /// A bookmark that must exist.
    pub bookmark: Option<String>,
    #[serde(default)]
    /// The section the bookmark must lie in (label or title).
    pub target_section: Option<String>,
    #[serde(default)]
    /// Text the bookmarked paragraph must contain (case-insensitive).
    pub target_text: Option<String>,
    #[serde(default)]
    /// Every table of contents lists exactly the headings, in order.
    pub toc: bool,
}

/// Bounds on a count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    #[serde(default)]
    /// At least this many.
    pub min: Option<u32>,
    #[serde(default)]
    /// At most this many.
    pub max: Option<u32>,
}

/// How cell values are compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellMatch {
    /// Equal after whitespace normalisation.
    #[default]
    Exact,
    /// Equal ignoring case, spaces and punctuation around the value.
    Normalized,
    /// Equal as numbers (currency signs, thousands separators and % ignored),
    /// text compared as `normalized`.
    Numeric,
}

/// The parameters of the `table` check.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    #[serde(default)]
    /// The table's position among the body's tables, from 1.
    pub index: Option<usize>,
    #[serde(default)]
    /// The first table in this section (label or title).
    pub section: Option<String>,
    #[serde(default)]
    /// The first table whose header row contains this text (case-insensitive).
    pub header: Option<String>,
    #[serde(default)]
    /// A gold .docx holding the gold table (relative to the task file).
    pub gold_docx: Option<String>,
    #[serde(default)]
    /// The gold table's position in the gold (default: found as in the output).
    pub gold_index: Option<usize>,
    #[serde(default)]
    /// Expected cells, "R2C3" (row 2, column 3, from 1) → text.
    pub cells: std::collections::BTreeMap<String, String>,
    #[serde(default, rename = "match")]
    /// How cells are compared.
    pub compare: CellMatch,
    #[serde(default)]
    /// Whose tracked changes are counted (default: the task's author).
    pub author: Option<String>,
    #[serde(default)]
    /// Tracked row insertions by the author.
    pub rows_inserted: Option<Count>,
    #[serde(default)]
    /// Tracked row deletions by the author.
    pub rows_deleted: Option<Count>,
    #[serde(default)]
    /// Cells with a tracked change by the author.
    pub cells_changed: Option<Count>,
}

/// The parameters of the `comment` check.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommentSpec {
    #[serde(default)]
    /// The comments' author (default: anyone).
    pub author: Option<String>,
    #[serde(default)]
    /// The section they are anchored in.
    pub section: Option<String>,
    #[serde(default)]
    /// Text they contain (case-insensitive).
    pub contains: Option<String>,
    #[serde(default)]
    /// Text they equal (whitespace-normalised).
    pub equals: Option<String>,
    #[serde(default)]
    /// Replies only (true) or top-level comments only (false).
    pub reply: Option<bool>,
    #[serde(default)]
    /// Resolved (true) or open (false) comments only.
    pub resolved: Option<bool>,
    #[serde(default)]
    /// At least this many (default 1).
    pub min: Option<u32>,
    #[serde(default)]
    /// At most this many.
    pub max: Option<u32>,
    #[serde(default)]
    /// Thread mode: the threads checked, by a regex over the first
    /// comment's text or anchored text (default: every thread).
    pub threads: Option<String>,
    #[serde(default)]
    /// Thread mode: each thread checked has a reply by this author.
    pub replied_by: Option<String>,
    #[serde(default)]
    /// Thread mode: the threads marked done are exactly these, each named
    /// by a regex that matches one thread.
    pub done_exactly: Option<Vec<String>>,
    #[serde(default)]
    /// Which characters `contains`, `equals` and the regexes compare
    /// (default: as a person reads them).
    pub characters: Characters,
}

impl CommentSpec {
    /// Whether the check is about threads rather than a count.
    pub fn threaded(&self) -> bool {
        self.threads.is_some() || self.replied_by.is_some() || self.done_exactly.is_some()
    }
}

/// The stories a pattern searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoryName {
    /// The main text.
    Body,
    /// Every header.
    Headers,
    /// Every footer.
    Footers,
    /// Footnotes.
    Footnotes,
    /// Endnotes.
    Endnotes,
    /// Comments' text.
    Comments,
    /// Text boxes.
    TextBoxes,
    /// All of the above.
    All,
}

/// The parameters of `contains` and `not_contains`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pattern {
    /// The regex.
    pub pattern: String,
    #[serde(rename = "in")]
    /// Which text it searches.
    pub target: Target,
    #[serde(default)]
    /// The section searched (default: the whole body).
    pub section: Option<String>,
    #[serde(default)]
    /// Whose changes (inserted/deleted text only; default: anyone's).
    pub author: Option<String>,
    #[serde(default)]
    /// The stories searched (default: the body).
    pub stories: Vec<StoryName>,
    #[serde(default)]
    /// Which characters are searched (default: as a person reads them).
    pub characters: Characters,
    #[serde(default)]
    /// Whether text no one sees is searched (default: it is not).
    pub hidden: HiddenText,
}

fn yes() -> bool {
    true
}

/// Why a check's parameters are not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckSpecError {
    /// The object does not fit the schema (unknown type or field, wrong value type).
    #[error("check: {0}")]
    Schema(String),
    /// One parameter's value is wrong; the message says how.
    #[error("check parameter `{param}`: {message}")]
    Parameter {
        /// The parameter's name.
        param: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

fn param<T>(param: &'static str, message: impl Into<String>) -> Result<T, CheckSpecError> {
    Err(CheckSpecError::Parameter { param, message: message.into() })
}

/// A check ready to run: its regex compiled and its gold document loaded.
#[derive(Debug, Clone)]
pub struct PreparedCheck {
    /// The parameters as written.
    pub spec: CheckSpec,
    pub(crate) regex: Option<Regex>,
    /// Further regexes (a comment check's threads marked done).
    pub(crate) regexes: Vec<Regex>,
    pub(crate) gold: Option<Arc<Document>>,
    /// A PDF check's patterns and input PDFs.
    pub(crate) pdf: Option<Arc<CompiledPdf>>,
    /// SHA-256 of the parameters and of the gold document's bytes: what
    /// the verdict depends on besides the output (keys cached verdicts).
    pub fingerprint: String,
}

impl PreparedCheck {
    /// Validates a check's parameters; `base` resolves `gold_docx` paths.
    pub fn from_json(
        value: &serde_json::Value,
        base: &Path,
    ) -> Result<PreparedCheck, CheckSpecError> {
        let spec: CheckSpec = serde_json::from_value(value.clone())
            .map_err(|e| CheckSpecError::Schema(e.to_string()))?;
        let compiled = Compiled::of(&spec)?;
        // The gold document's content is part of what the check asks.
        let mut fingerprint = serde_json::to_string(&spec).unwrap_or_default();
        let gold = match compiled.gold_docx {
            Some(rel) => {
                let (doc, sha) = load_gold(rel, base)?;
                fingerprint.push_str(&sha);
                Some(doc)
            }
            None => None,
        };
        let pdf = match pdf::compile(&spec, base)? {
            Some((compiled, shas)) => {
                shas.iter().for_each(|s| fingerprint.push_str(s));
                Some(Arc::new(compiled))
            }
            None => None,
        };
        Ok(PreparedCheck {
            regex: compiled.regex,
            regexes: compiled.regexes,
            gold,
            pdf,
            fingerprint: crate::hash::sha256_hex(&fingerprint),
            spec,
        })
    }
}

/// What a check's parameters compile to, once they are known to be valid.
#[derive(Default)]
struct Compiled<'a> {
    regex: Option<Regex>,
    regexes: Vec<Regex>,
    /// The gold document to load, relative to the task file.
    gold_docx: Option<&'a str>,
}

impl<'a> Compiled<'a> {
    /// Checks the parameters a check type needs together, and compiles
    /// its patterns.
    fn of(spec: &'a CheckSpec) -> Result<Compiled<'a>, CheckSpecError> {
        let mut out = Compiled::default();
        match spec {
            CheckSpec::Author { authors, .. } => {
                if authors.iter().all(|a| a.trim().is_empty()) {
                    return param("authors", "name at least one author");
                }
            }
            CheckSpec::Scope { sections, .. } => {
                if sections.is_empty() || sections.iter().any(|s| s.trim().is_empty()) {
                    return param(
                        "sections",
                        "list at least one section label, e.g. [\"8\", \"9.2\"]",
                    );
                }
            }
            CheckSpec::NoFormatChanges { .. } | CheckSpec::UntrackedChanges { .. } => {}
            CheckSpec::RevisionsRemaining { min, max, .. } => {
                check_bounds(*min, *max)?;
                if min.is_none() && max.is_none() {
                    return param("max", "give min, max or both");
                }
            }
            CheckSpec::Comment(c) => (out.regex, out.regexes) = comment(c)?,
            CheckSpec::Provenance { application, rsids } => match (application, rsids) {
                (None, None) => return param("application", "give application, rsids or both"),
                (Some(a), _) => out.regex = Some(compile("application", &format!("(?i){a}"))?),
                _ => {}
            },
            CheckSpec::Fields(f) => fields(f)?,
            CheckSpec::Numbering { level, .. } => {
                if level.is_some_and(|l| !(1..=9).contains(&l)) {
                    return param("level", "a list level is 1 (top) to 9");
                }
            }
            CheckSpec::Table(t) => out.gold_docx = table(t)?,
            CheckSpec::XlsxCells(x) => {
                x.validate()
                    .map_err(|(p, m)| CheckSpecError::Parameter { param: p, message: m })?;
            }
            CheckSpec::AcceptedTextEquals { text, gold_docx, min_f1, .. } => {
                match (text, gold_docx) {
                    (Some(_), None) => {}
                    (None, Some(g)) => out.gold_docx = Some(g),
                    _ => return param("text", "give exactly one of text and gold_docx"),
                }
                if let Some(f) = min_f1 {
                    check_f1(*f)?;
                }
            }
            CheckSpec::RevisionSetF1 { gold_docx, min_f1, .. } => {
                check_f1(*min_f1)?;
                out.gold_docx = Some(gold_docx);
            }
            // Validated by `pdf::compile`.
            pdf_check!() => {}
            CheckSpec::Contains(Pattern { pattern, .. })
            | CheckSpec::NotContains(Pattern { pattern, .. }) => {
                let compiled = Regex::new(pattern).map_err(|e| CheckSpecError::Parameter {
                    param: "pattern",
                    message: format!("invalid regex: {e}"),
                })?;
                out.regex = Some(compiled);
            }
        }
        Ok(out)
    }
}

/// A comment check's parameters: its thread pattern and `done_exactly`
/// patterns.
fn comment(c: &CommentSpec) -> Result<(Option<Regex>, Vec<Regex>), CheckSpecError> {
    check_bounds(c.min, c.max)?;
    if c.contains.is_some() && c.equals.is_some() {
        return param("equals", "give contains or equals, not both");
    }
    let threads = c.threads.as_deref().map(|t| compile("threads", t)).transpose()?;
    if c.threaded() && c.replied_by.is_none() && c.done_exactly.is_none() {
        return param("threads", "say what each thread needs: replied_by, done_exactly or both");
    }
    let done = c.done_exactly.iter().flatten().map(|d| compile("done_exactly", d));
    Ok((threads, done.collect::<Result<_, _>>()?))
}

fn fields(f: &FieldsSpec) -> Result<(), CheckSpecError> {
    if (f.target_section.is_some() || f.target_text.is_some()) && f.bookmark.is_none() {
        return param("bookmark", "target_section and target_text need the bookmark they describe");
    }
    if !(f.references || f.resolved_text || f.toc) && f.bookmark.is_none() {
        return param(
            "references",
            "with references, resolved_text and toc all false and no bookmark, the check tests nothing",
        );
    }
    Ok(())
}

/// A table check's parameters; the gold document it compares with, if any.
fn table(t: &TableSpec) -> Result<Option<&str>, CheckSpecError> {
    let located = [t.index.is_some(), t.section.is_some(), t.header.is_some()];
    if located.iter().filter(|x| **x).count() != 1 {
        return param("index", "find the table by exactly one of index, section and header");
    }
    if t.index == Some(0) || t.gold_index == Some(0) {
        return param("index", "tables are counted from 1");
    }
    for address in t.cells.keys() {
        if cell_address(address).is_none() {
            return param("cells", format!("{address:?} is not a cell address like \"R2C3\""));
        }
    }
    let counts = [t.rows_inserted, t.rows_deleted, t.cells_changed];
    for c in counts.iter().flatten() {
        check_bounds(c.min, c.max)?;
    }
    if t.gold_docx.is_none() && t.cells.is_empty() && counts.iter().all(Option::is_none) {
        return param("gold_docx", "give gold_docx, cells or a count of tracked changes");
    }
    Ok(t.gold_docx.as_deref())
}

fn compile(name: &'static str, pattern: &str) -> Result<Regex, CheckSpecError> {
    Regex::new(pattern).map_err(|e| CheckSpecError::Parameter {
        param: name,
        message: format!("invalid regex: {e}"),
    })
}

/// "R2C3" → (row 2, column 3), from 1.
pub(crate) fn cell_address(s: &str) -> Option<(usize, usize)> {
    let rest = s.trim().strip_prefix(['R', 'r'])?;
    let (row, col) = rest.split_once(['C', 'c'])?;
    let (row, col): (usize, usize) = (row.parse().ok()?, col.parse().ok()?);
    (row > 0 && col > 0).then_some((row, col))
}

fn check_bounds(min: Option<u32>, max: Option<u32>) -> Result<(), CheckSpecError> {
    match (min, max) {
        (Some(a), Some(b)) if a > b => param("min", format!("{a} is greater than max {b}")),
        _ => Ok(()),
    }
}

fn check_f1(v: f64) -> Result<(), CheckSpecError> {
    if v > 0.0 && v <= 1.0 { Ok(()) } else { param("min_f1", format!("{v} is not within (0, 1]")) }
}

/// Loads a gold document and the hash of its bytes.
fn load_gold(written: &str, base: &Path) -> Result<(Arc<Document>, String), CheckSpecError> {
    let (path, shown) = super::named_file(written, base);
    let fail = |message| CheckSpecError::Parameter { param: "gold_docx", message };
    // read_file: a FIFO or a device named as a gold file is refused, not read.
    let bytes = docx::read_file(&path, &docx::Limits::default())
        .map_err(|e| fail(format!("{shown}: {}", super::unreadable(&e))))?;
    let sha = crate::hash::sha256_hex_bytes(&bytes);
    let doc = docx::from_bytes(bytes, docx::Limits::default())
        .map_err(|e| fail(format!("{shown}: {e}")))?;
    Ok((Arc::new(doc), sha))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(v: serde_json::Value) -> String {
        PreparedCheck::from_json(&v, Path::new("."))
            .map(|_| ())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn parameters_are_validated_with_their_name() {
        use serde_json::json;
        let e = err(json!({"type": "contains", "pattern": "(", "in": "inserted"}));
        assert!(e.starts_with("check parameter `pattern`: invalid regex"), "{e}");
        assert!(
            err(json!({"type": "scope", "sections": []})).starts_with("check parameter `sections`")
        );
        assert!(
            err(json!({"type": "revisions_remaining", "min": 3, "max": 1}))
                .starts_with("check parameter `min`")
        );
        let e = err(json!({"type": "accepted_text_equals", "gold_docx": "nope.docx"}));
        assert!(
            e.starts_with("check parameter `gold_docx`: \"nope.docx\" is nope.docx, resolved from the task file's folder .: No such file"),
            "{e}"
        );
        assert!(
            err(json!({"type": "author", "authors": ["A"], "colour": 1}))
                .contains("unknown field `colour`")
        );
        assert!(err(json!({"type": "teleport"})).contains("unknown variant `teleport`"));
        assert!(
            err(json!({"type": "comment", "contains": "a", "equals": "b"}))
                .starts_with("check parameter `equals`")
        );
        let e = err(json!({"type": "fields", "references": false, "resolved_text": false}));
        assert!(e.contains("tests nothing"), "{e}");
        assert_eq!(err(json!({"type": "fields", "references": false, "toc": true})), "");
        assert_eq!(err(json!({"type": "no_format_changes"})), "");
    }
}
