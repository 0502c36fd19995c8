//! The typed document model: what a .docx says, after parsing and before any
//! view. Every view, check and gate reads this and nothing else.
//!
//! Its enums (`Block`, `Inline`, `StoryKind`, `RevisionKind`) are
//! exhaustive on purpose: a new kind of content must be a compile error in
//! every view and check that matches on them, never a silent skip.
//!
//! Invariants:
//! - `Span::inserted`/`deleted`/`format` and every other revision reference
//!   index into `Document::revisions`.
//! - A span is present in the accepted state iff `deleted` is `None`, and in
//!   the rejected state iff `inserted` is `None` (moves count as a deletion at
//!   the source and an insertion at the destination).
//! - A paragraph exists as a paragraph of its own in the accepted state iff
//!   its mark is not deleted, and in the rejected state iff its mark is not
//!   inserted; otherwise it merges into the next paragraph of its container.
//! - `Paragraph::label` is computed for both states over the body story.
//!
//! The JSON view serialises these types as they are; field names here are a
//! documented, stable interface (see docs/json-view.md).

use serde::{Deserialize, Serialize};

/// A whole .docx: its main story, the other stories, revisions and comments.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Document {
    /// The main story (`w:body`), in document order.
    pub body: Vec<Block>,
    /// Headers, footers, footnotes, endnotes and text boxes.
    pub stories: Vec<Story>,
    /// Every tracked change, in the order the reader met them.
    pub revisions: Vec<Revision>,
    /// Every comment in `word/comments.xml`, in file order.
    pub comments: Vec<Comment>,
    /// The people listed in `word/people.xml`.
    pub people: Vec<Person>,
    /// What saved the file, and the Word editing-session ids it carries.
    pub provenance: Provenance,
    /// Every field (REF, PAGEREF, TOC, …) in the order it was read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
    /// The body's bookmarks, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bookmarks: Vec<Bookmark>,
    /// Tracked changes that changed nothing, cancelled by the reader (a
    /// deletion and re-insertion of the same text, a formatting change to
    /// the same values): not in `revisions`, so nothing counts them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancelled: Vec<Cancelled>,
    /// Things the reader tolerated but a user should know (dangling comment
    /// references, unresolvable numbering, …).
    pub warnings: Vec<String>,
    /// The main part's tracked changes as RedlineBench's `docx_metrics.py`
    /// reads the raw XML (for the surgicalness and verbosity figures,
    /// never for the view or the checks).
    #[serde(default, skip_serializing_if = "is_unedited")]
    pub shape: crate::docx::EditShape,
    /// Comment id → index in `comments`, built once by the reader.
    #[serde(skip)]
    pub(crate) comment_index: std::collections::HashMap<String, usize>,
}

fn is_unedited(shape: &crate::docx::EditShape) -> bool {
    shape.paragraphs.iter().all(|p| p.touched_by.is_empty())
}

/// A tracked change that changed nothing, as the file recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cancelled {
    /// What kind of change.
    pub kind: RevisionKind,
    /// Who the file says made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// The text deleted and inserted again (empty for a formatting change).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// A block-level item of a story.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// A paragraph outweighs a table's header; boxing every paragraph would cost
// an allocation each for nothing a reader sees.
#[allow(clippy::large_enum_variant)]
pub enum Block {
    /// A paragraph.
    Paragraph(Paragraph),
    /// A table.
    Table(Table),
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
/// A paragraph: its properties, revisions of its mark and formatting, and inline content.
pub struct Paragraph {
    /// Where the reference view (python-docx order) would number this
    /// paragraph: `Some(n)` for a direct child of `w:body`, `None` elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_index: Option<u32>,
    /// `w14:paraId`, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub para_id: Option<String>,
    /// Paragraph properties in force when revisions are accepted.
    pub props: ParagraphProps,
    /// Properties before a tracked paragraph-property change (`w:pPrChange`):
    /// the ones in force when revisions are rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub props_before: Option<ParagraphProps>,
    /// Revision that inserted this paragraph's mark (a split, or a new paragraph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_inserted: Option<usize>,
    /// Revision that deleted this paragraph's mark (a merge with the next one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mark_deleted: Option<usize>,
    /// Revisions recording paragraph formatting changes (`w:pPrChange`,
    /// paragraph-mark `w:rPrChange`, tracked numbering change).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
    /// Text, comment anchors, note references and text boxes, in order.
    pub inlines: Vec<Inline>,
    /// A drop cap (`w:framePr w:dropCap`): the first letter of the next
    /// paragraph, set large. Views join it to that paragraph.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_cap: bool,
    /// Displayed list labels ("7.3", "(a)") in each state.
    pub label: Labels,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// The paragraph properties labels depend on.
pub struct ParagraphProps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The paragraph style's id (`w:pStyle`).
    pub style: Option<String>,
    /// Direct numbering (`w:numPr`): `num_id` "0" switches numbering off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The list level (`w:ilvl`), 0 = top.
    pub ilvl: Option<u8>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
/// A paragraph's list label in each state.
pub struct Labels {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The label with every change accepted.
    pub accepted: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The label with every change rejected: the numbering before the changes.
    pub rejected: Option<String>,
    /// The list level (0 = top) of the label, from the rejected state when
    /// the paragraph has a label there, else from the accepted state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// The abstract numbering (list definition) the label counts in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list: Option<String>,
}

/// What saved the file: `docProps/app.xml` and Word's revision-session
/// ids (`w:rsid*` attributes, which Word writes and python-docx and most
/// generators do not).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// `Application` in docProps/app.xml ("Microsoft Office Word").
    pub application: Option<String>,
    /// `AppVersion` in docProps/app.xml.
    pub app_version: Option<String>,
    /// `w:rsid…` attributes in the main document part.
    pub rsid_attributes: u64,
    /// Whether settings.xml lists revision-session ids (`w:rsids`).
    pub rsids_in_settings: bool,
}

/// A field: its code and the result Word last computed.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// The field code, whitespace-trimmed ("REF _Ref123 \\h").
    pub instruction: String,
    /// The result text shown with every change accepted; paragraphs (a
    /// TOC's entries) separated by "\n".
    pub result: String,
    /// Whether the field code is tracked as deleted (`w:delInstrText`).
    pub deleted: bool,
    /// The body paragraph it begins in (python-docx index), when in the body.
    pub body_index: Option<u32>,
}

impl Field {
    /// The field's type, upper-cased ("REF", "TOC").
    pub fn kind(&self) -> String {
        self.instruction.split_whitespace().next().unwrap_or("").to_ascii_uppercase()
    }

    /// The bookmark a REF, PAGEREF or NOTEREF field points at.
    pub fn target(&self) -> Option<&str> {
        let mut words = self.instruction.split_whitespace();
        let kind = words.next()?.to_ascii_uppercase();
        matches!(kind.as_str(), "REF" | "PAGEREF" | "NOTEREF").then(|| words.next()).flatten()
    }
}

/// A bookmark (`w:bookmarkStart`).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bookmark {
    /// Its name.
    pub name: String,
    /// The body paragraph it starts in (or before), python-docx index.
    pub body_index: Option<u32>,
    /// What its range holds once every change is accepted.
    #[serde(default)]
    pub span: BookmarkSpan,
}

/// What a bookmark's range holds once every change is accepted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BookmarkSpan {
    /// Some of its text stays, or it marks a point.
    #[default]
    Kept,
    /// It spans text and all of it is deleted: accepting the changes
    /// removes the bookmark (a reference to it then shows Word's
    /// "Error! Reference source not found.").
    Deleted,
}

/// Inline content of a paragraph.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Inline {
    /// Text with one revision state.
    Text(Span),
    /// Start of a comment's anchored range (`w:commentRangeStart`).
    CommentStart {
        /// The comment's id.
        id: String,
    },
    /// End of a comment's anchored range.
    CommentEnd {
        /// The comment's id.
        id: String,
    },
    /// The comment's reference mark (`w:commentReference`).
    CommentRef {
        /// The comment's id.
        id: String,
    },
    /// A footnote or endnote reference, with its displayed mark.
    NoteRef {
        /// Footnote or endnote.
        kind: NoteKind,
        /// The note's id in its part.
        id: String,
        /// The mark shown in the text ("1", "i", or a custom mark).
        mark: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The revision that inserted the reference.
        inserted: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The revision that deleted the reference.
        deleted: Option<usize>,
    },
    /// A text box anchored here; its content is `Document::stories[story]`.
    TextBox {
        /// Index into `Document::stories`.
        story: usize,
    },
    /// A picture (`w:drawing` or VML `w:pict` with an image), with its
    /// alternative text: Word shows it, and a tracked one is a change.
    Picture {
        /// Its alternative text (`descr`, else `title`), empty when none.
        alt: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The revision that inserted it.
        inserted: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        /// The revision that deleted it.
        deleted: Option<usize>,
    },
}

/// A stretch of text with one revision state.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// The text.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The revision that inserted this text.
    pub inserted: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The revision that deleted this text.
    pub deleted: Option<usize>,
    /// A tracked run-formatting change (`w:rPrChange`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<usize>,
    /// Why a person opening the file does not see this text, when they
    /// do not (hidden formatting, a size no one reads, the background's
    /// colour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Hidden>,
}

/// Why text is in the file but not on the page a person sees.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Hidden {
    /// Formatted hidden (`w:vanish`), directly or through a style.
    Vanish,
    /// Set in a size no one reads (below 3 pt).
    Tiny {
        /// The size, in half-points.
        half_points: u32,
    },
    /// Drawn in the colour of what lies beneath it (white on white).
    Camouflaged {
        /// The colour of both, six hex digits.
        colour: String,
    },
    /// In a text box drawn with no width or no height.
    ZeroSize,
}

impl Hidden {
    /// What the views say of it: "formatted hidden", "white on white".
    pub fn describe(&self) -> String {
        match self {
            Hidden::Vanish => "formatted hidden".into(),
            Hidden::Tiny { half_points } => {
                format!("{} pt text", f64::from(*half_points) / 2.0)
            }
            Hidden::Camouflaged { colour } if colour == "FFFFFF" => "white on white".into(),
            Hidden::Camouflaged { colour } => format!("#{colour} on #{colour}"),
            Hidden::ZeroSize => "in a text box of zero size".into(),
        }
    }
}

/// A table.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Table {
    /// The rows, in order.
    pub rows: Vec<Row>,
    /// Tracked changes of the table's properties and grid
    /// (`w:tblPrChange`, `w:tblGridChange`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
}

/// A table row.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Row {
    /// The cells, in order.
    pub cells: Vec<Cell>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The revision that inserted the row.
    pub inserted: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The revision that deleted the row.
    pub deleted: Option<usize>,
    /// Grid columns left empty before the first cell (`w:gridBefore`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub grid_before: u32,
    /// Grid columns left empty after the last cell (`w:gridAfter`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub grid_after: u32,
    /// Tracked changes of the row's properties (`w:trPrChange`,
    /// `w:tblPrExChange`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
}

/// A table cell.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// The cell's content.
    pub blocks: Vec<Block>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The revision that inserted the cell.
    pub inserted: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The revision that deleted the cell.
    pub deleted: Option<usize>,
    /// A vertically merged continuation cell (`w:vMerge` without `restart`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub merged_continue: bool,
    /// Tracked changes of the cell's properties (`w:tcPrChange`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
/// A story other than the body: a header, footer, note or text box.
pub struct Story {
    /// What kind of story.
    pub kind: StoryKind,
    /// Part name for headers and footers, note id for notes, ordinal for text boxes.
    pub id: String,
    /// Its content.
    pub blocks: Vec<Block>,
    /// Why no one sees the story at all (a text box of zero size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Hidden>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
/// The kinds of stories besides the body.
pub enum StoryKind {
    /// A header part.
    Header,
    /// A footer part.
    Footer,
    /// A footnote.
    Footnote,
    /// An endnote.
    Endnote,
    /// A text box's content.
    TextBox,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
/// Footnote or endnote.
pub enum NoteKind {
    /// A footnote reference.
    Footnote,
    /// An endnote reference.
    Endnote,
}

/// One tracked change.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Revision {
    /// What kind of change.
    pub kind: RevisionKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Who made it, as the file names them.
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When, as the file gives it (ISO 8601).
    pub date: Option<String>,
    /// The `w:id` the file gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub word_id: Option<String>,
    /// For moves: the pair number shared by the source and destination
    /// (1-based, in order of first appearance), when the range names pair up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub move_pair: Option<u32>,
    /// For formatting changes: the properties that differ ("bold", "style").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
/// The kinds of tracked change Word records.
pub enum RevisionKind {
    /// Inserted text (`w:ins`).
    Insertion,
    /// Deleted text (`w:del`).
    Deletion,
    /// The source of a move (`w:moveFrom`).
    MoveFrom,
    /// The destination of a move (`w:moveTo`).
    MoveTo,
    /// An inserted paragraph mark (a split, or a new paragraph).
    ParagraphInserted,
    /// A deleted paragraph mark (a merge with the next paragraph).
    ParagraphDeleted,
    /// Run formatting (`w:rPrChange`).
    RunFormat,
    /// Paragraph formatting (`w:pPrChange`, a paragraph mark's run formatting, a numbering change).
    ParagraphFormat,
    /// An inserted table row.
    RowInserted,
    /// A deleted table row.
    RowDeleted,
    /// An inserted table cell (`w:cellIns`).
    CellInserted,
    /// A deleted table cell (`w:cellDel`).
    CellDeleted,
    /// Section properties (`w:sectPrChange`): page size, margins, columns…
    SectionFormat,
    /// Table properties (`w:tblPrChange`).
    TableFormat,
    /// The table grid: column widths (`w:tblGridChange`).
    TableGrid,
    /// Row properties (`w:trPrChange`).
    RowFormat,
    /// Table properties set on one row (`w:tblPrExChange`).
    TableExceptionFormat,
    /// Cell properties (`w:tcPrChange`).
    CellFormat,
    /// The text of a list number (`w:numberingChange`).
    NumberingFormat,
}

impl RevisionKind {
    /// A change of formatting or properties, not of text or structure.
    pub fn is_format(self) -> bool {
        matches!(self, RevisionKind::RunFormat | RevisionKind::ParagraphFormat)
            || self.is_property()
    }

    /// A change of section, table, row, cell or numbering properties.
    pub fn is_property(self) -> bool {
        matches!(
            self,
            RevisionKind::SectionFormat
                | RevisionKind::TableFormat
                | RevisionKind::TableGrid
                | RevisionKind::RowFormat
                | RevisionKind::TableExceptionFormat
                | RevisionKind::CellFormat
                | RevisionKind::NumberingFormat
        )
    }

    /// What a property change changed, as the annotated view says it.
    pub fn property_subject(self) -> &'static str {
        match self {
            RevisionKind::SectionFormat => "section properties",
            RevisionKind::TableFormat => "table properties",
            RevisionKind::TableGrid => "table grid",
            RevisionKind::RowFormat => "row properties",
            RevisionKind::TableExceptionFormat => "row table properties",
            RevisionKind::CellFormat => "cell properties",
            RevisionKind::NumberingFormat => "list numbering",
            RevisionKind::ParagraphFormat => "paragraph formatting",
            _ => "formatting",
        }
    }
    /// Either end of a move.
    pub fn is_move(self) -> bool {
        matches!(self, RevisionKind::MoveFrom | RevisionKind::MoveTo)
    }
}

/// A comment or a reply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comment {
    /// The `w:id` shared by the comment and its anchors.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Who wrote it.
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Their initials, as the file gives them.
    pub initials: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When (ISO 8601).
    pub date: Option<String>,
    /// The comment's text, one line per paragraph.
    pub text: String,
    /// The anchored document text (accepted and deleted text alike), empty
    /// for a reference-only comment.
    pub anchor: String,
    /// Id of the comment this one replies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Marked done itself (`w15:done`) or through the thread it replies to.
    pub resolved: bool,
    /// Whether the document body anchors this comment anywhere.
    pub anchored: bool,
    /// `w14:paraId` of the comment's last paragraph (threading key).
    #[serde(skip)]
    pub last_para_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
/// A person named in `word/people.xml`.
pub struct Person {
    /// The author name changes and comments use.
    pub author: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The identity provider ("AD", "Windows Live", "None").
    pub provider: Option<String>,
}

/// Which side of the revisions a view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Every change accepted.
    Accepted,
    /// Every change rejected.
    Rejected,
}

impl State {
    /// Whether something inserted by `inserted` and deleted by `deleted`
    /// exists in this state: accepting keeps all but deletions, rejecting
    /// all but insertions.
    pub fn keeps(self, inserted: Option<usize>, deleted: Option<usize>) -> bool {
        match self {
            State::Accepted => deleted.is_none(),
            State::Rejected => inserted.is_none(),
        }
    }
}

impl Span {
    /// Whether this text exists in `state`.
    pub fn present(&self, state: State) -> bool {
        state.keeps(self.inserted, self.deleted)
    }
}

impl Paragraph {
    /// Whether this paragraph stands as its own paragraph in `state`
    /// (rather than merging into the next).
    pub fn mark_present(&self, state: State) -> bool {
        state.keeps(self.mark_inserted, self.mark_deleted)
    }

    /// Whether anything of this paragraph is left in `state`: its mark, or
    /// some text (a clause deleted whole, mark and text, is not).
    pub fn present(&self, state: State) -> bool {
        self.mark_present(state)
            || self.inlines.iter().any(
                |i| matches!(i, Inline::Text(s) if s.present(state) && !s.text.trim().is_empty()),
            )
    }

    /// Properties in force in `state`.
    pub fn props_in(&self, state: State) -> &ParagraphProps {
        match (state, &self.props_before) {
            (State::Rejected, Some(before)) => before,
            _ => &self.props,
        }
    }

    /// Every revision this paragraph refers to: its mark, its formatting,
    /// and those of its text and note references.
    pub fn revision_refs(&self) -> impl Iterator<Item = usize> + '_ {
        let own = [self.mark_inserted, self.mark_deleted]
            .into_iter()
            .flatten()
            .chain(self.format_changes.iter().copied());
        let inline = self.inlines.iter().flat_map(|i| {
            let refs = match i {
                Inline::Text(s) => [s.inserted, s.deleted, s.format],
                Inline::NoteRef { inserted, deleted, .. }
                | Inline::Picture { inserted, deleted, .. } => [*inserted, *deleted, None],
                _ => [None, None, None],
            };
            refs.into_iter().flatten()
        });
        own.chain(inline)
    }

    /// The label in `state`.
    pub fn label_in(&self, state: State) -> Option<&str> {
        match state {
            State::Accepted => self.label.accepted.as_deref(),
            State::Rejected => self.label.rejected.as_deref(),
        }
    }
}

impl Row {
    /// Whether this row exists in `state`.
    pub fn present(&self, state: State) -> bool {
        state.keeps(self.inserted, self.deleted)
    }
}

impl Cell {
    /// Whether this cell exists in `state`.
    pub fn present(&self, state: State) -> bool {
        state.keeps(self.inserted, self.deleted)
    }
}

impl Document {
    /// Builds the comment index again, as the reader builds it: for a
    /// document decoded from the reader's answer (the index is not sent).
    pub(crate) fn reindex_comments(&mut self) {
        self.comment_index =
            self.comments.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
    }

    /// The comment with this id.
    pub fn comment(&self, id: &str) -> Option<&Comment> {
        match self.comment_index.get(id) {
            Some(&i) => self.comments.get(i),
            // A document assembled by hand has no index.
            None if self.comment_index.is_empty() => self.comments.iter().find(|c| c.id == id),
            None => None,
        }
    }

    /// Whether any text or story of the document is out of a person's sight.
    pub fn has_hidden(&self) -> bool {
        let mut any = self.stories.iter().any(|s| s.hidden.is_some());
        let mut look = |p: &Paragraph| {
            any |= p.inlines.iter().any(|i| matches!(i, Inline::Text(s) if s.hidden.is_some()));
        };
        visit_paragraphs(&self.body, &mut look);
        for story in &self.stories {
            visit_paragraphs(&story.blocks, &mut look);
        }
        any
    }

    /// The document as a person opening it sees it: hidden text left out,
    /// and the content of hidden stories (a text box of zero size) emptied.
    /// Revisions and comments keep their indices; paragraphs keep their
    /// places. Borrowed when nothing is hidden (the usual case).
    pub fn as_seen(&self) -> std::borrow::Cow<'_, Document> {
        if !self.has_hidden() {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut seen = self.clone();
        let drop_hidden = |blocks: &mut Vec<Block>| {
            visit_paragraphs_mut(blocks, &mut |p| {
                p.inlines.retain(|i| !matches!(i, Inline::Text(s) if s.hidden.is_some()))
            });
        };
        drop_hidden(&mut seen.body);
        for story in &mut seen.stories {
            if story.hidden.is_some() {
                story.blocks.clear();
            }
            drop_hidden(&mut story.blocks);
        }
        std::borrow::Cow::Owned(seen)
    }

    /// Calls `f` on every paragraph of the body, tables included, in order.
    pub fn for_each_body_paragraph<'a>(&'a self, f: &mut dyn FnMut(&'a Paragraph)) {
        visit_paragraphs(&self.body, f);
    }
}

/// Calls `f` on every paragraph of `blocks`, tables included, in order.
pub fn visit_paragraphs<'a>(blocks: &'a [Block], f: &mut dyn FnMut(&'a Paragraph)) {
    for block in blocks {
        match block {
            Block::Paragraph(p) => f(p),
            Block::Table(t) => {
                for row in &t.rows {
                    for cell in &row.cells {
                        visit_paragraphs(&cell.blocks, f);
                    }
                }
            }
        }
    }
}

/// Calls `f` on every paragraph of `blocks` mutably, tables included.
pub(crate) fn visit_paragraphs_mut(blocks: &mut [Block], f: &mut dyn FnMut(&mut Paragraph)) {
    for block in blocks {
        match block {
            Block::Paragraph(p) => f(p),
            Block::Table(t) => {
                for row in &mut t.rows {
                    for cell in &mut row.cells {
                        visit_paragraphs_mut(&mut cell.blocks, f);
                    }
                }
            }
        }
    }
}
