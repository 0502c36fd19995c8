//! The streaming story parser: WordprocessingML block content (the body, a
//! header, a note, a comment, a text box) into `Block`s.
//!
//! Owns: the element-by-element state machine — revision wrappers, field
//! phases, paragraph-mark and table-row revisions, formatting changes, move
//! pairing and comment anchors. Must never read both branches of an
//! `mc:AlternateContent`, and never show a field's code instead of its result.

use std::collections::HashMap;

use quick_xml::events::BytesStart;

use super::DocxError;
use super::model::*;
use super::props::{self, Element};
use super::visibility::{Look, StyleSheet, Surface};
use super::xml::{Ev, Ns, PartReader, Tag, attr, local};

/// Document-wide state shared by every story of one package.
#[derive(Default)]
pub(crate) struct Ctx {
    pub revisions: Vec<Revision>,
    pub stories: Vec<Story>,
    pub warnings: Vec<String>,
    pub fields: Vec<Field>,
    pub bookmarks: Vec<Bookmark>,
    /// What decides whether a person sees a run (styles, page colour).
    pub styles: StyleSheet,
    /// Relationship ids of the headers and footers some section shows.
    pub shown_parts: std::collections::HashSet<String>,
    /// What each `w:altChunk` imports, by relationship id (the main part's).
    pub alt_chunks: HashMap<String, Vec<Block>>,
    move_pairs: HashMap<String, u32>,
    footnotes_seen: u32,
    endnotes_seen: u32,
}

impl Ctx {
    fn revision(&mut self, kind: RevisionKind, e: &BytesStart<'_>) -> usize {
        let author = attr(e, "author").filter(|a| !a.trim().is_empty());
        let date = attr(e, "date").filter(|d| !d.trim().is_empty());
        self.revisions.push(Revision {
            kind,
            author,
            date,
            word_id: attr(e, "id"),
            move_pair: None,
            changed: Vec::new(),
        });
        self.revisions.len() - 1
    }

    /// A revision from an element read whole (a property change).
    fn revision_of(&mut self, kind: RevisionKind, e: &Element, changed: Vec<String>) -> usize {
        let value =
            |k: &str| e.attr(k).map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
        self.revisions.push(Revision {
            kind,
            author: value("author"),
            date: value("date"),
            word_id: value("id"),
            move_pair: None,
            changed,
        });
        self.revisions.len() - 1
    }

    fn pair_move(&mut self, rev: usize, name: Option<&str>) {
        let Some(name) = name else { return };
        let next = self.move_pairs.len() as u32 + 1;
        let pair = *self.move_pairs.entry(name.to_string()).or_insert(next);
        if let Some(r) = self.revisions.get_mut(rev) {
            r.move_pair = Some(pair);
        }
    }
}

/// Element kinds whose nesting the parser tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum El {
    Body,
    P,
    PPr,
    RPr,
    R,
    NumPr,
    PPrChange,
    RPrChange,
    Tbl,
    Tr,
    Tc,
    /// A run-level revision wrapper (`w:ins`, `w:del`, `w:moveFrom`, `w:moveTo`).
    Wrapper,
    AltContent,
    TxbxContent,
    /// `w:fldSimple`: a field written whole.
    FldSimple,
    /// `w:drawing` or `w:pict`: a picture, a shape or a text box.
    Drawing,
    Other,
}

// Frames live on a short stack: their size does not matter.
#[allow(clippy::large_enum_variant)]
enum Frame {
    Blocks(Vec<Block>),
    Table(Table),
    Row(Row),
    Cell(Cell),
    TextBox(Vec<Block>),
    Para(ParaBuilder),
}

#[derive(Default)]
struct ParaBuilder {
    p: Paragraph,
    props_before: Option<ParagraphProps>,
    ppr_now: Vec<(String, String)>,
    ppr_old: Vec<(String, String)>,
    /// The `w:pPrChange` revision, whose changed properties are the diff
    /// of the two lists above.
    ppr_change: Option<usize>,
    /// The paragraph's shading fill (`w:pPr/w:shd`), what its text is drawn on.
    shading: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldPhase {
    Code,
    Result,
}

struct Wrapper {
    depth: usize,
    kind: RevisionKind,
    rev: usize,
}

/// What one call to [`parse_blocks`] is reading.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `w:body`: direct paragraphs get a `body_index`.
    Body,
    Other,
}

struct Parser<'c, 'x> {
    ctx: &'c mut Ctx,
    reader: &'c mut PartReader<'x>,
    mode: Mode,
    path: Vec<El>,
    frames: Vec<Frame>,
    wrappers: Vec<Wrapper>,
    fields: Vec<FieldPhase>,
    /// The fields open now (same depth as `fields`), being filled.
    open_fields: Vec<Field>,
    /// The body's bookmarks open now: id, index in `ctx.bookmarks`, and
    /// whether they have met text, and text that is not deleted.
    open_bookmarks: Vec<OpenBookmark>,
    /// One entry per open `mc:AlternateContent`: whether a branch was taken.
    alternates: Vec<bool>,
    run_format: Option<usize>,
    /// The current run's own formatting that decides whether it is seen.
    run_look: Look,
    /// Whether the run's properties hold an element of another vocabulary
    /// (w14 text effects), which the formatting diff does not compare.
    rpr_foreign: bool,
    /// Whether the drawing being read has no width or no height.
    zero_extent: bool,
    /// Per open text box: whether its drawing had no width or height.
    box_zero: Vec<bool>,
    /// Per open table: whether a table style colours it (its cells'
    /// backgrounds are then not known here).
    tables_styled: Vec<bool>,
    /// Per open cell: its own shading fill (`w:tcPr/w:shd`), if any.
    cell_fills: Vec<Option<String>>,
    /// The drawing being read: its alternative text, whether it holds an
    /// image, and whether it holds a text box (then it is no picture).
    drawing: Option<DrawingSeen>,
    rpr_now: Vec<(String, String)>,
    rpr_old: Vec<(String, String)>,
    open_move_from: Option<String>,
    open_move_to: Option<String>,
    pending_comment_starts: Vec<String>,
    pending_comment_ends: Vec<String>,
    next_body_index: u32,
    custom_note_mark: bool,
}

/// A body bookmark between its start and its end.
struct OpenBookmark {
    id: String,
    index: usize,
    /// Text met inside it.
    text: bool,
    /// Text met inside it that is not deleted.
    kept: bool,
}

/// What a `w:drawing` or `w:pict` held, as far as the view cares.
#[derive(Default)]
struct DrawingSeen {
    alt: Option<String>,
    image: bool,
    text_box: bool,
}

/// A field with its code and result trimmed of surrounding whitespace.
fn trimmed(mut f: Field) -> Field {
    f.instruction = f.instruction.trim().to_string();
    f.result = f.result.trim_end_matches('\n').to_string();
    f
}

/// Parses block content until the element whose `Start` was just read ends.
pub(crate) fn parse_blocks(
    ctx: &mut Ctx,
    reader: &mut PartReader<'_>,
    mode: Mode,
) -> Result<Vec<Block>, DocxError> {
    let stop = reader.depth() - 1;
    let mut parser = Parser {
        ctx,
        reader,
        mode,
        path: vec![if mode == Mode::Body { El::Body } else { El::Other }],
        frames: vec![Frame::Blocks(Vec::new())],
        wrappers: Vec::new(),
        fields: Vec::new(),
        open_fields: Vec::new(),
        open_bookmarks: Vec::new(),
        alternates: Vec::new(),
        run_format: None,
        run_look: Look::default(),
        rpr_foreign: false,
        zero_extent: false,
        box_zero: Vec::new(),
        tables_styled: Vec::new(),
        cell_fills: Vec::new(),
        drawing: None,
        rpr_now: Vec::new(),
        rpr_old: Vec::new(),
        open_move_from: None,
        open_move_to: None,
        pending_comment_starts: Vec::new(),
        pending_comment_ends: Vec::new(),
        next_body_index: 0,
        custom_note_mark: false,
    };
    parser.run(stop)?;
    // Frames left open can only come from malformed nesting the XML layer
    // already rejects; fold them back defensively rather than lose text.
    while parser.frames.len() > 1 {
        parser.close_frame();
    }
    match parser.frames.pop() {
        Some(Frame::Blocks(blocks)) => Ok(blocks),
        _ => Ok(Vec::new()),
    }
}

impl<'c, 'x> Parser<'c, 'x> {
    fn run(&mut self, stop: usize) -> Result<(), DocxError> {
        loop {
            match self.reader.next()? {
                Ev::Start(ns, e) => self.start(ns, &e, Tag::Open)?,
                Ev::Empty(ns, e) => self.start(ns, &e, Tag::SelfClosing)?,
                Ev::End => {
                    if self.reader.depth() < stop + 1 {
                        return Ok(());
                    }
                    self.end();
                }
                Ev::Text(_) => {}
                Ev::Eof => return Ok(()),
            }
        }
    }

    fn parent(&self) -> El {
        self.path.last().copied().unwrap_or(El::Other)
    }

    fn grandparent(&self) -> El {
        self.path.iter().rev().nth(1).copied().unwrap_or(El::Other)
    }

    fn great_grandparent(&self) -> El {
        self.path.iter().rev().nth(2).copied().unwrap_or(El::Other)
    }

    fn push(&mut self, tag: Tag, el: El) {
        if tag == Tag::Open {
            self.path.push(el);
        }
    }

    fn start(&mut self, ns: Ns, e: &BytesStart<'_>, tag: Tag) -> Result<(), DocxError> {
        let name = local(e);
        match ns {
            Ns::W => self.start_w(name, e, tag),
            Ns::M if name == "t" && tag == Tag::Open => {
                let text = self.reader.text_content()?;
                self.push_text(&text);
                Ok(())
            }
            Ns::Mc => {
                match name {
                    "AlternateContent" => {
                        self.alternates.push(false);
                        self.push(tag, El::AltContent);
                    }
                    // Word's rule: the first Choice whose required
                    // vocabularies are all known, else the Fallback.
                    "Choice"
                        if tag == Tag::Open
                            && !self
                                .reader
                                .implements(&attr(e, "Requires").unwrap_or_default()) =>
                    {
                        self.reader.skip_subtree()?
                    }
                    "Choice" | "Fallback" if tag == Tag::Open => {
                        let taken = self.alternates.last_mut();
                        match taken {
                            Some(t) if !*t => {
                                *t = true;
                                self.push(Tag::Open, El::Other);
                            }
                            _ => self.reader.skip_subtree()?,
                        }
                    }
                    _ => self.push(tag, El::Other),
                }
                Ok(())
            }
            _ => {
                if self.path.contains(&El::RPr) {
                    self.rpr_foreign = true;
                }
                if let Some(d) = self.drawing.as_mut() {
                    match name {
                        // DrawingML's `wp:docPr`, VML's `v:shape`: alternative text.
                        "docPr" | "shape" | "imagedata" => {
                            let alt = attr(e, "descr").or_else(|| attr(e, "alt"));
                            let alt =
                                alt.or_else(|| attr(e, "title")).filter(|a| !a.trim().is_empty());
                            if d.alt.is_none() {
                                d.alt = alt;
                            }
                            d.image |= name == "imagedata";
                        }
                        "pic" | "blip" => d.image = true,
                        _ => {}
                    }
                }
                match name {
                    // A drawing's size (`wp:extent`), before its content.
                    "inline" | "anchor" => self.zero_extent = false,
                    "extent" => {
                        let size = |k: &str| attr(e, k).and_then(|v| v.trim().parse::<i64>().ok());
                        self.zero_extent = size("cx") == Some(0) || size("cy") == Some(0);
                    }
                    _ => {}
                }
                self.push(tag, El::Other);
                Ok(())
            }
        }
    }

    fn start_w(&mut self, name: &str, e: &BytesStart<'_>, tag: Tag) -> Result<(), DocxError> {
        let parent = self.parent();
        // Properties are recorded for formatting-change diffs before anything else.
        if matches!(parent, El::PPr | El::RPr | El::NumPr) {
            self.record_property(name, e);
        }
        let in_change = self.path.contains(&El::RPrChange) || self.path.contains(&El::PPrChange);
        if parent == El::RPr && self.path.contains(&El::R) && !in_change {
            self.run_look.record(e);
        }
        if parent == El::PPr
            && name == "shd"
            && !in_change
            && let Some(b) = self.para_mut()
        {
            b.shading = super::visibility::shading_fill(e);
        }
        match name {
            "p" => self.start_paragraph(e, parent, tag),
            "pPr" if parent == El::P || parent == El::PPrChange => self.push(tag, El::PPr),
            "rPr" => self.push(tag, El::RPr),
            "numPr" => self.push(tag, El::NumPr),
            "pStyle" | "framePr" if parent == El::PPr => {
                self.paragraph_property(name, e);
                self.skip_if_open(tag)?;
            }
            "ilvl" | "numId" if parent == El::NumPr => {
                self.paragraph_property(name, e);
                self.skip_if_open(tag)?;
            }
            "pPrChange" | "rPrChange" => self.format_change(name, e, tag)?,
            "ins" | "del" | "moveFrom" | "moveTo" => self.revision_element(name, e, tag)?,
            "moveFromRangeStart" | "moveToRangeStart" | "moveFromRangeEnd" | "moveToRangeEnd" => {
                self.move_range(name, e);
                self.skip_if_open(tag)?;
            }
            "tbl" => {
                if tag == Tag::Open {
                    self.tables_styled.push(false);
                }
                self.open_frame(Frame::Table(Table::default()), El::Tbl, tag)
            }
            "tr" => self.open_frame(Frame::Row(Row::default()), El::Tr, tag),
            "tc" => {
                if tag == Tag::Open {
                    self.cell_fills.push(None);
                }
                self.open_frame(Frame::Cell(Cell::default()), El::Tc, tag)
            }
            "altChunk" => {
                // Word shows the imported content in its place.
                let id = attr(e, "id").unwrap_or_default();
                // Each import is placed once: a part named by many
                // altChunks would otherwise multiply its content.
                let blocks = self.ctx.alt_chunks.remove(&id).unwrap_or_default();
                if let Some(into) = self.blocks_mut() {
                    into.extend(blocks);
                }
                self.skip_if_open(tag)?;
            }
            "drawing" | "pict" if tag == Tag::Open => {
                self.zero_extent = false;
                self.drawing = Some(DrawingSeen::default());
                self.push(tag, El::Drawing);
            }
            "txbxContent" if tag == Tag::Open => {
                if let Some(d) = self.drawing.as_mut() {
                    d.text_box = true;
                }
                self.box_zero.push(self.zero_extent);
                self.open_frame(Frame::TextBox(Vec::new()), El::TxbxContent, tag)
            }
            "trPr" | "tblPrEx" if parent == El::Tr => {
                let el = props::read(self.reader, e, tag)?;
                self.row_properties(&el);
            }
            "tblPr" | "tblGrid" if parent == El::Tbl => {
                let el = props::read(self.reader, e, tag)?;
                self.table_properties(&el);
            }
            "tcPr" if parent == El::Tc => {
                let el = props::read(self.reader, e, tag)?;
                self.cell_properties(&el);
            }
            "sectPr" => {
                let el = props::read(self.reader, e, tag)?;
                self.section_properties(&el);
            }

            "r" => self.start_run(tag),
            "t" | "delText" if tag == Tag::Open => self.text(e)?,
            "instrText" | "delInstrText" if tag == Tag::Open => self.instruction(name)?,
            "fldSimple" => self.simple_field(e, tag),
            "bookmarkStart" => {
                self.bookmark(e);
                self.skip_if_open(tag)?;
            }
            "bookmarkEnd" => {
                self.bookmark_end(e);
                self.skip_if_open(tag)?;
            }
            "instrText" | "delInstrText" | "sdtPr" | "sdtEndPr" | "fldData" | "ffData" => {
                self.skip_if_open(tag)?
            }
            "tab" | "ptab" | "br" | "cr" | "noBreakHyphen" | "softHyphen" | "sym"
                if parent == El::R =>
            {
                self.run_character(name, e);
                self.skip_if_open(tag)?;
            }
            "fldChar" => {
                let el = props::read(self.reader, e, tag)?;
                self.field_char(&el);
            }
            "footnoteReference" | "endnoteReference" => {
                self.note_reference(name, e);
                self.skip_if_open(tag)?;
            }
            "commentRangeStart" | "commentRangeEnd" | "commentReference" => {
                let id = attr(e, "id").unwrap_or_default();
                let inline = match name {
                    "commentRangeStart" => Inline::CommentStart { id },
                    "commentRangeEnd" => Inline::CommentEnd { id },
                    _ => Inline::CommentRef { id },
                };
                self.push_anchor(inline);
                self.skip_if_open(tag)?;
            }
            _ => self.push(tag, El::Other),
        }
        Ok(())
    }

    /// `w:r`: a run starts with no formatting of its own yet.
    fn start_run(&mut self, tag: Tag) {
        self.run_format = None;
        self.run_look = Look::default();
        self.rpr_foreign = false;
        self.rpr_now.clear();
        self.rpr_old.clear();
        self.custom_note_mark = false;
        self.push(tag, El::R);
    }

    /// A complex field's instruction text (its code, never shown).
    fn instruction(&mut self, name: &str) -> Result<(), DocxError> {
        let code = self.reader.text_content()?;
        if let Some(f) = self.open_fields.last_mut() {
            f.instruction.push_str(&code);
            f.deleted |= name == "delInstrText";
        }
        Ok(())
    }

    /// `w:fldSimple`: a field whose instruction is an attribute; its
    /// content, if any, is the result shown.
    fn simple_field(&mut self, e: &BytesStart<'_>, tag: Tag) {
        let field = Field {
            instruction: attr(e, "instr").unwrap_or_default(),
            body_index: self.current_body_index(),
            ..Field::default()
        };
        if tag == Tag::SelfClosing {
            self.ctx.fields.push(trimmed(field));
        } else {
            self.fields.push(FieldPhase::Result);
            self.open_fields.push(field);
            self.push(Tag::Open, El::FldSimple);
        }
    }

    /// `w:bookmarkStart`, in the body: between paragraphs, a bookmark
    /// belongs to the next one.
    fn bookmark(&mut self, e: &BytesStart<'_>) {
        let name = attr(e, "name").unwrap_or_default();
        let body_index = self.current_body_index().or_else(|| {
            (self.mode == Mode::Body && self.path.len() == 1).then_some(self.next_body_index)
        });
        if self.mode == Mode::Body && !name.is_empty() {
            let id = attr(e, "id").unwrap_or_default();
            let index = self.ctx.bookmarks.len();
            self.open_bookmarks.push(OpenBookmark { id, index, text: false, kept: false });
            self.ctx.bookmarks.push(Bookmark { name, body_index, span: BookmarkSpan::Kept });
        }
    }

    /// `w:bookmarkEnd`: a bookmark that spanned only deleted text is gone
    /// once the changes are accepted.
    fn bookmark_end(&mut self, e: &BytesStart<'_>) {
        let id = attr(e, "id").unwrap_or_default();
        let Some(at) = self.open_bookmarks.iter().position(|b| b.id == id) else { return };
        let open = self.open_bookmarks.remove(at);
        if open.text
            && !open.kept
            && let Some(b) = self.ctx.bookmarks.get_mut(open.index)
        {
            b.span = BookmarkSpan::Deleted;
        }
    }

    /// `w:p`: a new paragraph (numbered as python-docx numbers the body's
    /// direct paragraphs), with the comment ranges that opened before it.
    fn start_paragraph(&mut self, e: &BytesStart<'_>, parent: El, tag: Tag) {
        let mut b = ParaBuilder::default();
        b.p.para_id = attr(e, "paraId");
        if self.mode == Mode::Body && parent == El::Body {
            b.p.body_index = Some(self.next_body_index);
            self.next_body_index += 1;
        }
        for id in self.pending_comment_starts.drain(..) {
            b.p.inlines.push(Inline::CommentStart { id });
        }
        self.frames.push(Frame::Para(b));
        if tag == Tag::SelfClosing {
            self.finish_paragraph();
        } else {
            self.path.push(El::P);
        }
    }

    /// `w:pStyle`, `w:ilvl`, `w:numId`, `w:framePr`: the paragraph
    /// properties labels and drop caps depend on.
    fn paragraph_property(&mut self, name: &str, e: &BytesStart<'_>) {
        let val = attr(e, "val");
        if name == "framePr" {
            let drop = attr(e, "dropCap").is_some_and(|d| d != "none");
            if drop
                && !self.path.contains(&El::PPrChange)
                && let Some(b) = self.para_mut()
            {
                b.p.drop_cap = true;
            }
            return;
        }
        let Some(props) = self.props_target() else { return };
        match name {
            "pStyle" => props.style = val,
            "ilvl" => props.ilvl = val.and_then(|v| v.trim().parse().ok()).map(|v: u8| v.min(8)),
            _ => props.num_id = val,
        }
    }

    /// `w:pPrChange`, and `w:rPrChange` of a run or of a paragraph mark.
    fn format_change(&mut self, name: &str, e: &BytesStart<'_>, tag: Tag) -> Result<(), DocxError> {
        if name == "pPrChange" {
            let rev = self.ctx.revision(RevisionKind::ParagraphFormat, e);
            if let Some(b) = self.para_mut() {
                b.p.format_changes.push(rev);
                b.ppr_change = Some(rev);
                b.props_before.get_or_insert_with(ParagraphProps::default);
            }
            self.push(tag, El::PPrChange);
        } else if self.grandparent() == El::PPr {
            // Formatting of the paragraph mark itself.
            let rev = self.ctx.revision(RevisionKind::ParagraphFormat, e);
            if let Some(r) = self.ctx.revisions.get_mut(rev) {
                r.changed.push("paragraph mark formatting".into());
            }
            if let Some(b) = self.para_mut() {
                b.p.format_changes.push(rev);
            }
            self.skip_if_open(tag)?;
        } else {
            let rev = self.ctx.revision(RevisionKind::RunFormat, e);
            self.run_format = Some(rev);
            self.push(tag, El::RPrChange);
        }
        Ok(())
    }

    /// The start or end of a named move range: moves pair by these names.
    fn move_range(&mut self, name: &str, e: &BytesStart<'_>) {
        let name_attr = attr(e, "name");
        match name {
            "moveFromRangeStart" => self.open_move_from = name_attr,
            "moveToRangeStart" => self.open_move_to = name_attr,
            "moveFromRangeEnd" => self.open_move_from = None,
            _ => self.open_move_to = None,
        }
    }

    /// A table, row, cell or text box opens (and closes at once when empty).
    fn open_frame(&mut self, frame: Frame, el: El, tag: Tag) {
        self.frames.push(frame);
        self.push(tag, el);
        if tag == Tag::SelfClosing {
            self.close_frame();
        }
    }

    /// `w:t` / `w:delText`. Without `xml:space="preserve"`, Word and
    /// LibreOffice drop the text's leading and trailing whitespace.
    fn text(&mut self, e: &BytesStart<'_>) -> Result<(), DocxError> {
        let preserve = attr(e, "space").is_some_and(|v| v == "preserve");
        let text = self.reader.text_content()?;
        let text =
            if preserve { text } else { text.trim_matches([' ', '\t', '\n', '\r']).to_string() };
        // The mark of a footnote with a custom mark is shown as text.
        self.custom_note_mark = false;
        self.push_text(&text);
        Ok(())
    }

    /// A tab, a break, a special hyphen or a symbol inside a run.
    fn run_character(&mut self, name: &str, e: &BytesStart<'_>) {
        match name {
            "tab" | "ptab" => self.push_text("\t"),
            "br" | "cr" => self.push_text("\n"),
            "noBreakHyphen" => self.push_text("\u{2011}"),
            "softHyphen" => self.push_text("\u{ad}"),
            _ => {
                if let Some(c) = attr(e, "char").and_then(|c| sym_char(&c)) {
                    self.push_text(c.encode_utf8(&mut [0; 4]));
                }
            }
        }
    }

    /// `w:fldChar`: a field's phases (its code is never shown), and the
    /// tracked renumbering a LISTNUM field's end may record.
    fn field_char(&mut self, el: &Element) {
        if let Some(change) = el.child("numberingChange") {
            let was = change.attr("original").unwrap_or("").to_string();
            let rev = self.ctx.revision_of(
                RevisionKind::NumberingFormat,
                change,
                vec![format!("list number (was {was:?})")],
            );
            if let Some(b) = self.para_mut() {
                b.p.format_changes.push(rev);
            }
        }
        match el.attr("fldCharType") {
            Some("begin") => {
                self.fields.push(FieldPhase::Code);
                let body_index = self.current_body_index();
                self.open_fields.push(Field { body_index, ..Field::default() });
            }
            Some("separate") => {
                if let Some(top) = self.fields.last_mut() {
                    *top = FieldPhase::Result;
                }
            }
            Some("end") => {
                self.fields.pop();
                if let Some(f) = self.open_fields.pop() {
                    self.ctx.fields.push(trimmed(f));
                }
            }
            _ => {}
        }
    }

    /// A footnote or endnote reference, with the mark it shows.
    fn note_reference(&mut self, name: &str, e: &BytesStart<'_>) {
        let kind = if name == "footnoteReference" { NoteKind::Footnote } else { NoteKind::Endnote };
        let custom =
            attr(e, "customMarkFollows").is_some_and(|v| v == "1" || v == "true" || v == "on");
        let mark = if custom {
            self.custom_note_mark = true;
            String::new()
        } else if kind == NoteKind::Footnote {
            self.ctx.footnotes_seen += 1;
            self.ctx.footnotes_seen.to_string()
        } else {
            self.ctx.endnotes_seen += 1;
            super::numfmt::format_number("lowerRoman", i64::from(self.ctx.endnotes_seen))
        };
        let id = attr(e, "id").unwrap_or_default();
        let (inserted, deleted) = self.wrapper_state();
        if !self.hidden_by_field()
            && let Some(b) = self.para_mut()
        {
            b.p.inlines.push(Inline::NoteRef { kind, id, mark, inserted, deleted });
        }
    }

    /// `w:tblPr` or `w:tblGrid` of the table being read, with its tracked change.
    fn table_properties(&mut self, el: &Element) {
        if el.name == "tblPr"
            && (el.child("tblStyle").is_some() || el.child("shd").is_some())
            && let Some(styled) = self.tables_styled.last_mut()
        {
            *styled = true;
        }
        let (change_name, kind) = match el.name.as_str() {
            "tblGrid" => ("tblGridChange", RevisionKind::TableGrid),
            _ => ("tblPrChange", RevisionKind::TableFormat),
        };
        let Some(rev) = self.property_change(el, change_name, kind) else { return };
        if let Some(Frame::Table(t)) = self.frames.last_mut() {
            t.format_changes.push(rev);
        }
    }

    /// The insertion and deletion marks among a property container's
    /// children (`w:ins`/`w:del` of a row, `w:cellIns`/`w:cellDel` of a
    /// cell), each recorded as a revision; the last of each kind wins.
    fn insertion_marks(
        &mut self,
        el: &Element,
        (ins, ins_kind): (&str, RevisionKind),
        (del, del_kind): (&str, RevisionKind),
    ) -> (Option<usize>, Option<usize>) {
        let (mut inserted, mut deleted) = (None, None);
        for child in &el.children {
            if child.name == ins {
                inserted = Some(self.ctx.revision_of(ins_kind, child, Vec::new()));
            } else if child.name == del {
                deleted = Some(self.ctx.revision_of(del_kind, child, Vec::new()));
            }
        }
        (inserted, deleted)
    }

    /// `w:trPr` or `w:tblPrEx` of the row being read: row insertions and
    /// deletions, grid offsets, property changes.
    fn row_properties(&mut self, el: &Element) {
        let (inserted, deleted) = self.insertion_marks(
            el,
            ("ins", RevisionKind::RowInserted),
            ("del", RevisionKind::RowDeleted),
        );
        let grid = |name: &str| {
            el.child(name)
                .and_then(|g| g.attr("val"))
                .and_then(|v| v.trim().parse::<u32>().ok())
                .map(|n| n.min(64))
        };
        let (before, after) = (grid("gridBefore"), grid("gridAfter"));
        let change = match el.name.as_str() {
            "tblPrEx" => {
                self.property_change(el, "tblPrExChange", RevisionKind::TableExceptionFormat)
            }
            _ => self.property_change(el, "trPrChange", RevisionKind::RowFormat),
        };
        let Some(Frame::Row(row)) = self.frames.last_mut() else { return };
        row.inserted = inserted.or(row.inserted);
        row.deleted = deleted.or(row.deleted);
        row.grid_before = before.unwrap_or(row.grid_before);
        row.grid_after = after.unwrap_or(row.grid_after);
        row.format_changes.extend(change);
    }

    /// `w:tcPr` of the cell being read: cell insertions and deletions,
    /// vertical merges, property changes.
    fn cell_properties(&mut self, el: &Element) {
        let (inserted, deleted) = self.insertion_marks(
            el,
            ("cellIns", RevisionKind::CellInserted),
            ("cellDel", RevisionKind::CellDeleted),
        );
        let merged = el.child("vMerge").map(|m| m.attr("val") != Some("restart"));
        if let Some(fill) = el.child("shd").and_then(|shd| shd.attr("fill"))
            && let Some(slot) = self.cell_fills.last_mut()
        {
            *slot = Some(fill.trim().to_ascii_uppercase());
        }
        let change = self.property_change(el, "tcPrChange", RevisionKind::CellFormat);
        let Some(Frame::Cell(cell)) = self.frames.last_mut() else { return };
        cell.inserted = inserted.or(cell.inserted);
        cell.deleted = deleted.or(cell.deleted);
        cell.merged_continue = merged.unwrap_or(cell.merged_continue);
        cell.format_changes.extend(change);
    }

    /// `w:sectPr`: a paragraph's section break, or the body's last section.
    fn section_properties(&mut self, el: &Element) {
        // The headers and footers a section shows; a part no section
        // names is shown nowhere.
        for child in &el.children {
            if matches!(child.name.as_str(), "headerReference" | "footerReference")
                && let Some(id) = child.attr("id")
            {
                self.ctx.shown_parts.insert(id.to_string());
            }
        }
        let Some(rev) = self.property_change(el, "sectPrChange", RevisionKind::SectionFormat)
        else {
            return;
        };
        if let Some(b) = self.para_mut() {
            b.p.format_changes.push(rev);
            return;
        }
        // The body's own sectPr closes the last section: its change shows
        // on the last paragraph.
        let last = self.blocks_mut().and_then(|blocks| {
            blocks.iter_mut().rev().find_map(|b| match b {
                Block::Paragraph(p) => Some(p),
                Block::Table(_) => None,
            })
        });
        match last {
            Some(p) => p.format_changes.push(rev),
            None => {
                self.ctx.warnings.push("a section-property change follows no paragraph; it counts, but the views cannot place it".into())
            }
        }
    }

    /// The revision of a property container's tracked change (its child
    /// `change_name`, holding the old properties), with what it changed.
    fn property_change(
        &mut self,
        el: &Element,
        change_name: &str,
        kind: RevisionKind,
    ) -> Option<usize> {
        let change = el.child(change_name)?;
        let old: &[Element] = change.children.first().map(|c| c.children.as_slice()).unwrap_or(&[]);
        let now: Vec<Element> =
            el.children.iter().filter(|c| c.name != change_name).cloned().collect();
        let changed = props::changed(&now, old);
        Some(self.ctx.revision_of(kind, change, changed))
    }

    fn skip_if_open(&mut self, tag: Tag) -> Result<(), DocxError> {
        if tag == Tag::Open {
            self.reader.skip_subtree()?;
        }
        Ok(())
    }

    /// `w:ins`, `w:del`, `w:moveFrom`, `w:moveTo`: what they mean depends on
    /// where they stand.
    fn revision_element(
        &mut self,
        name: &str,
        e: &BytesStart<'_>,
        tag: Tag,
    ) -> Result<(), DocxError> {
        let parent = self.parent();
        let inserting = matches!(name, "ins" | "moveTo");
        // Paragraph mark: w:p/w:pPr/w:rPr/(ins|del|moveFrom|moveTo).
        if parent == El::RPr && self.grandparent() == El::PPr && self.great_grandparent() == El::P {
            let kind = match name {
                "ins" => RevisionKind::ParagraphInserted,
                "del" => RevisionKind::ParagraphDeleted,
                "moveFrom" => RevisionKind::MoveFrom,
                _ => RevisionKind::MoveTo,
            };
            let rev = self.ctx.revision(kind, e);
            if kind == RevisionKind::MoveFrom {
                let n = self.open_move_from.clone();
                self.ctx.pair_move(rev, n.as_deref());
            } else if kind == RevisionKind::MoveTo {
                let n = self.open_move_to.clone();
                self.ctx.pair_move(rev, n.as_deref());
            }
            if let Some(b) = self.para_mut() {
                if inserting {
                    b.p.mark_inserted = Some(rev);
                } else {
                    b.p.mark_deleted = Some(rev);
                }
            }
            return self.skip_if_open(tag);
        }
        if parent == El::RPr {
            // Old properties inside a pPrChange, or a stray marker: nothing to record.
            return self.skip_if_open(tag);
        }
        if parent == El::NumPr {
            // A tracked change to the paragraph's numbering.
            let rev = self.ctx.revision(RevisionKind::ParagraphFormat, e);
            if let Some(r) = self.ctx.revisions.get_mut(rev) {
                r.changed.push("numbering".into());
            }
            if let Some(b) = self.para_mut() {
                b.p.format_changes.push(rev);
            }
            return self.skip_if_open(tag);
        }
        if matches!(parent, El::PPr | El::PPrChange) {
            return self.skip_if_open(tag);
        }
        if tag == Tag::SelfClosing {
            return Ok(());
        }
        let kind = match name {
            "ins" => RevisionKind::Insertion,
            "del" => RevisionKind::Deletion,
            "moveFrom" => RevisionKind::MoveFrom,
            _ => RevisionKind::MoveTo,
        };
        let rev = self.ctx.revision(kind, e);
        match kind {
            RevisionKind::MoveFrom => {
                let n = self.open_move_from.clone();
                self.ctx.pair_move(rev, n.as_deref());
            }
            RevisionKind::MoveTo => {
                let n = self.open_move_to.clone();
                self.ctx.pair_move(rev, n.as_deref());
            }
            _ => {}
        }
        self.path.push(El::Wrapper);
        self.wrappers.push(Wrapper { depth: self.reader.depth(), kind, rev });
        Ok(())
    }

    fn end(&mut self) {
        let depth_after = self.reader.depth();
        let Some(el) = self.path.pop() else { return };
        match el {
            El::P => {
                // A field's result that spans paragraphs (a TOC) keeps them apart.
                if let (Some(FieldPhase::Result), Some(f)) =
                    (self.fields.last(), self.open_fields.last_mut())
                {
                    f.result.push('\n');
                }
                self.finish_paragraph();
            }
            El::FldSimple => {
                self.fields.pop();
                if let Some(f) = self.open_fields.pop() {
                    self.ctx.fields.push(trimmed(f));
                }
            }
            El::Tbl => {
                self.tables_styled.pop();
                self.close_frame();
            }
            El::Tc => {
                self.cell_fills.pop();
                self.close_frame();
            }
            El::Tr | El::TxbxContent => self.close_frame(),
            El::Drawing => self.finish_drawing(),
            El::Wrapper if self.wrappers.last().is_some_and(|w| w.depth == depth_after + 1) => {
                self.wrappers.pop();
            }
            El::AltContent => {
                self.alternates.pop();
            }
            El::RPr if self.parent() == El::R => {
                if let Some(rev) = self.run_format
                    && let Some(r) = self.ctx.revisions.get_mut(rev)
                {
                    r.changed = diff_properties(&self.rpr_now, &self.rpr_old);
                    // Text effects (w14) are not compared: such a change
                    // is never taken for a no-op.
                    if r.changed.is_empty() && self.rpr_foreign {
                        r.changed.push("text effects".into());
                    }
                }
            }
            _ => {}
        }
    }

    /// Where a property element (`w:pStyle`, `w:numId`…) belongs: the
    /// current paragraph's properties, or its pre-change properties.
    fn props_target(&mut self) -> Option<&mut ParagraphProps> {
        let in_change = self.path.contains(&El::PPrChange);
        let b = self.para_mut()?;
        if in_change { b.props_before.as_mut() } else { Some(&mut b.p.props) }
    }

    fn record_property(&mut self, name: &str, e: &BytesStart<'_>) {
        // Revision markers and nested property containers are not
        // properties themselves (numPr is recorded; its children carry values).
        if matches!(name, "ins" | "del" | "moveFrom" | "moveTo" | "rPrChange" | "pPrChange" | "rPr")
        {
            return;
        }
        // Every attribute, not just `w:val`: a change of `w:rFonts w:ascii`
        // or `w:shd w:fill` is a change, and equal values are none.
        let mut attrs: Vec<String> = e
            .attributes()
            .with_checks(false)
            .flatten()
            .map(|a| (a.key.local_name().into_inner().to_string(), a.value.to_string()))
            .filter(|(k, _)| !k.starts_with("rsid"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        attrs.sort();
        let val = attrs.join(",");
        let parent = self.parent();
        let key = if parent == El::NumPr { format!("numPr.{name}") } else { name.to_string() };
        let in_para_change = self.path.contains(&El::PPrChange);
        let in_run_change = self.path.contains(&El::RPrChange);
        // Which property list: nearest PPr or run RPr ancestor.
        let owner = self.path.iter().rev().find(|el| matches!(el, El::PPr | El::RPr)).copied();
        match owner {
            Some(El::RPr) if self.path.contains(&El::R) && !self.path.contains(&El::PPr) => {
                if in_run_change {
                    self.rpr_old.push((key, val));
                } else {
                    self.rpr_now.push((key, val));
                }
            }
            Some(El::PPr) | Some(El::RPr) => {
                if parent == El::RPr {
                    return; // paragraph-mark run properties: not paragraph formatting
                }
                if let Some(b) = self.para_mut() {
                    if in_para_change {
                        b.ppr_old.push((key, val));
                    } else {
                        b.ppr_now.push((key, val));
                    }
                }
            }
            _ => {}
        }
    }

    fn para_mut(&mut self) -> Option<&mut ParaBuilder> {
        self.frames.iter_mut().rev().find_map(|f| match f {
            Frame::Para(b) => Some(b),
            _ => None,
        })
    }

    fn hidden_by_field(&self) -> bool {
        self.fields.contains(&FieldPhase::Code)
    }

    fn wrapper_state(&self) -> (Option<usize>, Option<usize>) {
        let inserted = self
            .wrappers
            .iter()
            .rev()
            .find(|w| matches!(w.kind, RevisionKind::Insertion | RevisionKind::MoveTo))
            .map(|w| w.rev);
        let deleted = self
            .wrappers
            .iter()
            .rev()
            .find(|w| matches!(w.kind, RevisionKind::Deletion | RevisionKind::MoveFrom))
            .map(|w| w.rev);
        (inserted, deleted)
    }

    /// The body paragraph being read, if any.
    fn current_body_index(&self) -> Option<u32> {
        self.frames.iter().rev().find_map(|f| match f {
            Frame::Para(b) => b.p.body_index,
            _ => None,
        })
    }

    fn push_text(&mut self, text: &str) {
        if text.is_empty() || self.hidden_by_field() {
            return;
        }
        let (inserted, deleted) = self.wrapper_state();
        for b in &mut self.open_bookmarks {
            b.text = true;
            b.kept |= deleted.is_none();
        }
        // A result is what the field shows once changes are accepted: an
        // update made with tracking on deletes the old number and inserts
        // the new one (a deleted field keeps its text).
        if let (Some(FieldPhase::Result), Some(f)) =
            (self.fields.last(), self.open_fields.last_mut())
            && (deleted.is_none() || f.deleted)
        {
            f.result.push_str(text);
        }
        let format = self.run_format;
        let hidden = self.hidden_here();
        let Some(b) = self.para_mut() else { return };
        if let Some(Inline::Text(last)) = b.p.inlines.last_mut()
            && last.inserted == inserted
            && last.deleted == deleted
            && last.format == format
            && last.hidden == hidden
        {
            last.text.push_str(text);
            return;
        }
        let text = text.to_string();
        b.p.inlines.push(Inline::Text(Span { text, inserted, deleted, format, hidden }));
    }

    /// A drawing ends: a picture (not a text box, not a bare shape) is
    /// recorded where it stands, in the state of its revision wrappers.
    fn finish_drawing(&mut self) {
        let Some(d) = self.drawing.take() else { return };
        if d.text_box || !d.image || self.hidden_by_field() {
            return;
        }
        let (inserted, deleted) = self.wrapper_state();
        if let Some(b) = self.para_mut() {
            let alt = d.alt.unwrap_or_default();
            b.p.inlines.push(Inline::Picture { alt, inserted, deleted });
        }
    }

    /// Whether the text of the current run is out of a person's sight.
    fn hidden_here(&mut self) -> Option<super::model::Hidden> {
        let (style, shading) = match self.para_mut() {
            Some(b) => (b.p.props.style.clone(), b.shading.clone()),
            None => (None, None),
        };
        // What the text is drawn on: the paragraph's shading, else its
        // cell's; in a table a style colours, not known here.
        let cell = self.cell_fills.last().cloned().flatten();
        let in_box = self.path.contains(&El::TxbxContent);
        let surface = match (shading.or(cell), self.tables_styled.last()) {
            (Some(fill), _) => Surface::Shaded(fill),
            // A table style, or a shape's fill, may colour what lies beneath.
            (None, Some(true)) => Surface::Unknown,
            (None, _) if in_box => Surface::Unknown,
            (None, _) => Surface::Page,
        };
        self.ctx.styles.hidden(&self.run_look, style.as_deref(), &surface)
    }

    fn push_anchor(&mut self, inline: Inline) {
        if let Some(b) = self.para_mut() {
            b.p.inlines.push(inline);
            return;
        }
        match inline {
            Inline::CommentEnd { id } => {
                // Between paragraphs: the range ends with the previous paragraph.
                if let Some(Block::Paragraph(p)) = self.blocks_mut().and_then(|b| b.last_mut()) {
                    p.inlines.push(Inline::CommentEnd { id });
                } else {
                    self.pending_comment_ends.push(id);
                }
            }
            Inline::CommentStart { id } => self.pending_comment_starts.push(id),
            Inline::CommentRef { id } => self.pending_comment_ends.push(id),
            _ => {}
        }
    }

    fn blocks_mut(&mut self) -> Option<&mut Vec<Block>> {
        self.frames.iter_mut().rev().find_map(|f| match f {
            Frame::Blocks(b) | Frame::TextBox(b) => Some(b),
            Frame::Cell(c) => Some(&mut c.blocks),
            _ => None,
        })
    }

    fn finish_paragraph(&mut self) {
        let Some(Frame::Para(mut b)) = self.frames.pop() else { return };
        if let Some(rev) = b.ppr_change
            && let Some(r) = self.ctx.revisions.get_mut(rev)
            && r.changed.is_empty()
        {
            r.changed = diff_properties(&b.ppr_now, &b.ppr_old);
            // Tab stops and borders are read by name only: equal lists do
            // not prove equal properties, so the change is never a no-op.
            if r.changed.is_empty() {
                r.changed.push("paragraph properties".into());
            }
        }
        b.p.props_before = b.props_before.take();
        let mut p = b.p;
        for id in self.pending_comment_ends.drain(..) {
            p.inlines.insert(0, Inline::CommentEnd { id });
        }
        if let Some(blocks) = self.blocks_mut() {
            blocks.push(Block::Paragraph(p));
        }
    }

    fn close_frame(&mut self) {
        let Some(frame) = self.frames.pop() else { return };
        match frame {
            Frame::Para(b) => {
                self.frames.push(Frame::Para(b));
                self.finish_paragraph();
            }
            Frame::Table(t) => {
                if let Some(blocks) = self.blocks_mut() {
                    blocks.push(Block::Table(t));
                }
            }
            Frame::Row(r) => {
                if let Some(Frame::Table(t)) = self.frames.last_mut() {
                    t.rows.push(r);
                }
            }
            Frame::Cell(c) => {
                if let Some(Frame::Row(r)) = self.frames.last_mut() {
                    r.cells.push(c);
                }
            }
            Frame::TextBox(blocks) => {
                let zero = self.box_zero.pop().unwrap_or(false);
                let hidden = zero.then_some(super::model::Hidden::ZeroSize);
                self.ctx.stories.push(Story {
                    hidden,
                    kind: StoryKind::TextBox,
                    id: (self.ctx.stories.iter().filter(|s| s.kind == StoryKind::TextBox).count()
                        + 1)
                    .to_string(),
                    blocks,
                });
                let story = self.ctx.stories.len() - 1;
                if let Some(b) = self.para_mut() {
                    b.p.inlines.push(Inline::TextBox { story });
                }
            }
            Frame::Blocks(b) => self.frames.push(Frame::Blocks(b)),
        }
    }
}

/// Names of the properties that differ between two property lists, in a
/// reader's vocabulary ("bold", "font size").
fn diff_properties(now: &[(String, String)], old: &[(String, String)]) -> Vec<String> {
    let mut changed: Vec<String> = Vec::new();
    let mut note = |key: &str| {
        let name = property_name(key);
        if !name.is_empty() && !changed.iter().any(|c| c == name) {
            changed.push(name.to_string());
        }
    };
    for (k, v) in now {
        if !old.iter().any(|(ok, ov)| ok == k && ov == v) {
            note(k);
        }
    }
    for (k, v) in old {
        if !now.iter().any(|(nk, nv)| nk == k && nv == v) {
            note(k);
        }
    }
    changed
}

fn property_name(key: &str) -> &str {
    match key {
        "b" => "bold",
        "i" => "italic",
        "u" => "underline",
        "strike" | "dstrike" => "strikethrough",
        "sz" => "font size",
        "rFonts" => "font",
        "color" => "colour",
        "highlight" | "shd" => "shading",
        "caps" | "smallCaps" => "capitalisation",
        "vertAlign" => "superscript/subscript",
        "rStyle" => "character style",
        "pStyle" => "paragraph style",
        "jc" => "alignment",
        "ind" => "indentation",
        "spacing" => "spacing",
        "numPr.ilvl" | "numPr.numId" => "numbering",
        "keepNext" | "keepLines" | "pageBreakBefore" | "widowControl" => "pagination",
        "tabs" => "tab stops",
        "outlineLvl" => "outline level",
        // Complex-script twins of properties above: noise for a reader.
        "w" => "character scale",
        "rtl" => "right-to-left",
        "bCs" | "iCs" | "szCs" | "lang" | "cs" | "kern" => "",
        other => other,
    }
}

/// `w:sym w:char`: a hex code, often in the symbol-font private area (U+F0xx).
fn sym_char(hex: &str) -> Option<char> {
    // Symbol-font codes stay in the private-use area, as Word stores them:
    // their meaning depends on the font, which a text view cannot carry.
    char::from_u32(u32::from_str_radix(hex.trim(), 16).ok()?)
}
