//! The typed document model: what a .docx says, after parsing and before any
//! view. Every view, check and gate reads this and nothing else.
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

use serde::Serialize;

/// A whole .docx: its main story, the other stories, revisions and comments.
#[derive(Debug, Default, Serialize)]
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
    /// Things the reader tolerated but a user should know (dangling comment
    /// references, unresolvable numbering, …).
    pub warnings: Vec<String>,
    /// Comment id → index in `comments`, built once by the reader.
    #[serde(skip)]
    pub(crate) comment_index: std::collections::HashMap<String, usize>,
}

/// A block-level item of a story.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    Paragraph(Paragraph),
    Table(Table),
}

#[derive(Debug, Default, Serialize)]
pub struct Paragraph {
    /// Where the reference view (python-docx order) would number this
    /// paragraph: `Some(n)` for a direct child of `w:body`, `None` elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_index: Option<u32>,
    /// `w14:paraId`, when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub para_id: Option<String>,
    /// Paragraph properties in force when revisions are accepted.
    pub props: ParagraphProps,
    /// Properties before a tracked paragraph-property change (`w:pPrChange`):
    /// the ones in force when revisions are rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub props_before: Option<ParagraphProps>,
    /// Revision that inserted this paragraph's mark (a split, or a new paragraph).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark_inserted: Option<usize>,
    /// Revision that deleted this paragraph's mark (a merge with the next one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark_deleted: Option<usize>,
    /// Revisions recording paragraph formatting changes (`w:pPrChange`,
    /// paragraph-mark `w:rPrChange`, tracked numbering change).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
    pub inlines: Vec<Inline>,
    /// A drop cap (`w:framePr w:dropCap`): the first letter of the next
    /// paragraph, set large. Views join it to that paragraph.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub drop_cap: bool,
    /// Displayed list labels ("7.3", "(a)") in each state.
    pub label: Labels,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct ParagraphProps {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub style: Option<String>,
    /// Direct numbering (`w:numPr`): `num_id` "0" switches numbering off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ilvl: Option<u8>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Labels {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
    /// The list level (0 = top) of the label, from the rejected state when
    /// the paragraph has a label there, else from the accepted state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
    /// The abstract numbering (list definition) the label counts in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<String>,
}

/// Inline content of a paragraph.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Inline {
    Text(Span),
    /// Start of a comment's anchored range (`w:commentRangeStart`).
    CommentStart {
        id: String,
    },
    /// End of a comment's anchored range.
    CommentEnd {
        id: String,
    },
    /// The comment's reference mark (`w:commentReference`).
    CommentRef {
        id: String,
    },
    /// A footnote or endnote reference, with its displayed mark.
    NoteRef {
        kind: NoteKind,
        id: String,
        mark: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        inserted: Option<usize>,
        #[serde(skip_serializing_if = "Option::is_none")]
        deleted: Option<usize>,
    },
    /// A text box anchored here; its content is `Document::stories[story]`.
    TextBox {
        story: usize,
    },
}

/// A stretch of text with one revision state.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct Span {
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inserted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<usize>,
    /// A tracked run-formatting change (`w:rPrChange`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<usize>,
}

/// A table.
#[derive(Debug, Default, Serialize)]
pub struct Table {
    pub rows: Vec<Row>,
    /// Tracked changes of the table's properties and grid
    /// (`w:tblPrChange`, `w:tblGridChange`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
}

/// A table row.
#[derive(Debug, Default, Serialize)]
pub struct Row {
    pub cells: Vec<Cell>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inserted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<usize>,
    /// Grid columns left empty before the first cell (`w:gridBefore`).
    #[serde(skip_serializing_if = "is_zero")]
    pub grid_before: u32,
    /// Grid columns left empty after the last cell (`w:gridAfter`).
    #[serde(skip_serializing_if = "is_zero")]
    pub grid_after: u32,
    /// Tracked changes of the row's properties (`w:trPrChange`,
    /// `w:tblPrExChange`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
}

/// A table cell.
#[derive(Debug, Default, Serialize)]
pub struct Cell {
    pub blocks: Vec<Block>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inserted: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<usize>,
    /// A vertically merged continuation cell (`w:vMerge` without `restart`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub merged_continue: bool,
    /// Tracked changes of the cell's properties (`w:tcPrChange`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub format_changes: Vec<usize>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Serialize)]
pub struct Story {
    pub kind: StoryKind,
    /// Part name for headers and footers, note id for notes, ordinal for text boxes.
    pub id: String,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoryKind {
    Header,
    Footer,
    Footnote,
    Endnote,
    TextBox,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    Footnote,
    Endnote,
}

/// One tracked change.
#[derive(Debug, Clone, Serialize)]
pub struct Revision {
    pub kind: RevisionKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The `w:id` the file gave it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub word_id: Option<String>,
    /// For moves: the pair number shared by the source and destination
    /// (1-based, in order of first appearance), when the range names pair up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_pair: Option<u32>,
    /// For formatting changes: the properties that differ ("bold", "style").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RevisionKind {
    Insertion,
    Deletion,
    MoveFrom,
    MoveTo,
    ParagraphInserted,
    ParagraphDeleted,
    RunFormat,
    ParagraphFormat,
    RowInserted,
    RowDeleted,
    CellInserted,
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
        matches!(self, RevisionKind::RunFormat | RevisionKind::ParagraphFormat) || self.is_property()
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
    pub fn is_move(self) -> bool {
        matches!(self, RevisionKind::MoveFrom | RevisionKind::MoveTo)
    }
}

/// A comment or a reply.
#[derive(Debug, Clone, Serialize)]
pub struct Comment {
    /// The `w:id` shared by the comment and its anchors.
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initials: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// The comment's text, one line per paragraph.
    pub text: String,
    /// The anchored document text (accepted and deleted text alike), empty
    /// for a reference-only comment.
    pub anchor: String,
    /// Id of the comment this one replies to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Marked done itself (`w15:done`) or through the thread it replies to.
    pub resolved: bool,
    /// Whether the document body anchors this comment anywhere.
    pub anchored: bool,
    /// `w14:paraId` of the comment's last paragraph (threading key).
    #[serde(skip)]
    pub last_para_id: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Person {
    pub author: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
}

/// Which side of the revisions a view shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Accepted,
    Rejected,
}

impl Span {
    pub fn present(&self, state: State) -> bool {
        match state {
            State::Accepted => self.deleted.is_none(),
            State::Rejected => self.inserted.is_none(),
        }
    }
}

impl Paragraph {
    /// Whether this paragraph stands as its own paragraph in `state`
    /// (rather than merging into the next).
    pub fn mark_present(&self, state: State) -> bool {
        match state {
            State::Accepted => self.mark_deleted.is_none(),
            State::Rejected => self.mark_inserted.is_none(),
        }
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
        let own = [self.mark_inserted, self.mark_deleted].into_iter().flatten().chain(self.format_changes.iter().copied());
        let inline = self.inlines.iter().flat_map(|i| {
            let refs = match i {
                Inline::Text(s) => [s.inserted, s.deleted, s.format],
                Inline::NoteRef { inserted, deleted, .. } => [*inserted, *deleted, None],
                _ => [None, None, None],
            };
            refs.into_iter().flatten()
        });
        own.chain(inline)
    }

    pub fn label_in(&self, state: State) -> Option<&str> {
        match state {
            State::Accepted => self.label.accepted.as_deref(),
            State::Rejected => self.label.rejected.as_deref(),
        }
    }
}

impl Row {
    pub fn present(&self, state: State) -> bool {
        match state {
            State::Accepted => self.deleted.is_none(),
            State::Rejected => self.inserted.is_none(),
        }
    }
}

impl Cell {
    pub fn present(&self, state: State) -> bool {
        match state {
            State::Accepted => self.deleted.is_none(),
            State::Rejected => self.inserted.is_none(),
        }
    }
}

impl Document {
    /// The comment with this id.
    pub fn comment(&self, id: &str) -> Option<&Comment> {
        match self.comment_index.get(id) {
            Some(&i) => self.comments.get(i),
            // A document assembled by hand has no index.
            None if self.comment_index.is_empty() => self.comments.iter().find(|c| c.id == id),
            None => None,
        }
    }

    /// Calls `f` on every paragraph of the body, tables included, in order.
    pub fn for_each_body_paragraph<'a>(&'a self, f: &mut dyn FnMut(&'a Paragraph)) {
        visit_paragraphs(&self.body, f);
    }
}

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
