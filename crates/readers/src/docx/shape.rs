//! The shape of a document's tracked changes, read from its main part the
//! way RedlineBench's `docx_metrics.py` reads `word/document.xml` with
//! lxml: every `w:p` in document order (those nested in text boxes and
//! tables too), the length of its text outside revisions, the revisions
//! among its direct children, and who made the revisions anywhere inside
//! it. The surgicalness and verbosity figures are computed from it.
//!
//! Owns: that raw reading. Must never feed the judges' view or a check:
//! it reads the XML as the reference does (hidden text, both branches of
//! an `mc:AlternateContent`, moves as written), not as a person sees it.

use serde::{Deserialize, Serialize};

use super::DocxError;
use super::xml::{Ev, Ns, PartReader, attr, local};

/// Every `w:p` of the main part, in document order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EditShape {
    /// The paragraphs.
    pub paragraphs: Vec<ParagraphShape>,
}

/// One paragraph's edits as the reference walks them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParagraphShape {
    /// Characters of its `t` elements (of any vocabulary, at any depth)
    /// outside the insertions, deletions and moves within it.
    pub unchanged: u64,
    /// Its direct children that pairing looks at, in order (comment,
    /// bookmark and proofing markers left out; runs of other elements
    /// as one [`ShapeChild::Other`]).
    pub children: Vec<ShapeChild>,
    /// The author of every insertion, deletion or move inside it, at any
    /// depth (`""` when one names none), each once, sorted.
    pub touched_by: Vec<String>,
}

/// A direct child of a paragraph, as pairing sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ShapeChild {
    /// Anything but a revision: it ends a deletion waiting for its
    /// insertion.
    Other,
    /// `w:del` or `w:moveFrom`: the characters of its `w:delText`.
    Removed {
        /// `w:author`, `""` when absent.
        author: String,
        /// Characters.
        chars: u64,
    },
    /// `w:ins` or `w:moveTo`: the characters of its `w:t`.
    Added {
        /// `w:author`, `""` when absent.
        author: String,
        /// Characters.
        chars: u64,
    },
}

/// Elements between revisions that do not break a deletion–insertion pair.
const TRANSPARENT: [&str; 6] = [
    "commentRangeStart",
    "commentRangeEnd",
    "commentReference",
    "bookmarkStart",
    "bookmarkEnd",
    "proofErr",
];

fn is_revision(name: &str) -> bool {
    matches!(name, "ins" | "del" | "moveFrom" | "moveTo")
}

/// A paragraph being read.
struct Open {
    index: usize,
    depth: usize,
    /// Revisions open when it began: text counts as unchanged while no
    /// other is.
    revisions_at_start: usize,
    /// Its direct child being read, when that is a revision: the depth
    /// it ends at and what it has gathered.
    child: Option<(usize, ShapeChild)>,
    /// The authors of the revisions met inside it so far.
    authors: std::collections::BTreeSet<String>,
}

/// What an element holds text for.
#[derive(Clone, Copy, PartialEq)]
enum TextOf {
    /// A `t` of any vocabulary (the unchanged count's).
    AnyT,
    /// `w:t` (an insertion's).
    WordT,
    /// `w:delText` (a deletion's).
    DelText,
    None,
}

/// Reads the shape of the main part `xml` (named `part` in errors).
pub fn read(part: &str, xml: &str) -> Result<EditShape, DocxError> {
    let mut reader = PartReader::new(part, xml);
    let mut out = EditShape::default();
    let mut open: Vec<Open> = Vec::new();
    // Per open element: what it holds text for, and whether it is a revision.
    let mut elements: Vec<(TextOf, bool)> = Vec::new();
    let mut revisions = 0usize;
    loop {
        let (ns, e, closed) = match reader.next()? {
            Ev::Eof => return Ok(out),
            Ev::Text(t) => {
                let chars = t.chars().count() as u64;
                let of = elements.last().map(|(of, _)| *of);
                count(&mut out, &mut open, of, revisions, chars);
                continue;
            }
            Ev::End => {
                if let Some((_, true)) = elements.pop() {
                    revisions = revisions.saturating_sub(1);
                }
                end(&mut out, &mut open, reader.depth() + 1);
                continue;
            }
            Ev::Start(ns, e) => (ns, e, false),
            Ev::Empty(ns, e) => (ns, e, true),
        };
        let name = local(&e).to_string();
        // The element's depth: a start tag has been counted, an empty one not.
        let depth = if closed { reader.depth() + 1 } else { reader.depth() };
        let author = || attr(&e, "author").unwrap_or_default();
        if is_revision(&name) {
            let who = author();
            for p in &mut open {
                if !p.authors.contains(&who) {
                    p.authors.insert(who.clone());
                }
            }
        }
        if let Some(p) = open.last_mut().filter(|p| p.depth + 1 == depth)
            && !TRANSPARENT.contains(&name.as_str())
        {
            let child = match name.as_str() {
                "del" | "moveFrom" => ShapeChild::Removed { author: author(), chars: 0 },
                "ins" | "moveTo" => ShapeChild::Added { author: author(), chars: 0 },
                _ => ShapeChild::Other,
            };
            match (child, closed) {
                (ShapeChild::Other, _) => push_child(&mut out, p.index, ShapeChild::Other),
                (c, true) => push_child(&mut out, p.index, c),
                (c, false) => p.child = Some((depth, c)),
            }
        }
        if closed {
            continue;
        }
        let of = match (ns, name.as_str()) {
            (Ns::W, "t") => TextOf::WordT,
            (Ns::W, "delText") => TextOf::DelText,
            (_, "t") => TextOf::AnyT,
            _ => TextOf::None,
        };
        elements.push((of, is_revision(&name)));
        if is_revision(&name) {
            revisions += 1;
        }
        if ns == Ns::W && name == "p" {
            open.push(Open {
                index: out.paragraphs.len(),
                depth,
                revisions_at_start: revisions,
                child: None,
                authors: Default::default(),
            });
            out.paragraphs.push(ParagraphShape::default());
        }
    }
}

/// Text met: unchanged text of every paragraph no revision within has
/// opened around it, and the text of each paragraph's revision child.
fn count(out: &mut EditShape, open: &mut [Open], of: Option<TextOf>, revisions: usize, chars: u64) {
    let Some(of) = of.filter(|o| *o != TextOf::None) else { return };
    for p in open.iter_mut() {
        if of != TextOf::DelText
            && p.revisions_at_start == revisions
            && let Some(shape) = out.paragraphs.get_mut(p.index)
        {
            shape.unchanged += chars;
        }
        match (&mut p.child, of) {
            (Some((_, ShapeChild::Added { chars: n, .. })), TextOf::WordT)
            | (Some((_, ShapeChild::Removed { chars: n, .. })), TextOf::DelText) => *n += chars,
            _ => {}
        }
    }
}

/// An element ended at `depth`: a revision child is complete, a paragraph
/// is done.
fn end(out: &mut EditShape, open: &mut Vec<Open>, depth: usize) {
    let Some(p) = open.last_mut() else { return };
    if p.child.as_ref().is_some_and(|(d, _)| *d == depth)
        && let Some((_, child)) = p.child.take()
    {
        push_child(out, p.index, child);
        return;
    }
    if p.depth == depth
        && let Some(done) = open.pop()
        && let Some(shape) = out.paragraphs.get_mut(done.index)
    {
        shape.touched_by = done.authors.into_iter().collect();
    }
}

fn push_child(out: &mut EditShape, paragraph: usize, child: ShapeChild) {
    let Some(shape) = out.paragraphs.get_mut(paragraph) else { return };
    if child == ShapeChild::Other && shape.children.last() == Some(&ShapeChild::Other) {
        return;
    }
    shape.children.push(child);
}

/// One tracked-change event: a deletion and the same author's insertion
/// right after it as one (its size the larger), any other deletion,
/// insertion or move on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EditEvent {
    /// Characters.
    pub size: u64,
    /// Characters of its paragraph's text outside revisions.
    pub unchanged: u64,
}

impl EditEvent {
    /// Inline (a change of less than `threshold` of its paragraph's
    /// unchanged text), else block, as the reference classifies: a
    /// paragraph with no unchanged text makes every event block.
    pub fn is_inline(&self, threshold: f64) -> bool {
        self.unchanged > 0 && (self.size as f64) / (self.unchanged as f64) < threshold
    }
}

/// What the reference's `docx_metrics.py` takes from one document, for
/// the revisions whose author `counts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edits {
    /// The events, in document order.
    pub events: Vec<EditEvent>,
    /// Deletions + insertions − deletion–insertion pairs with text deleted.
    pub operations: u64,
    /// Paragraphs with such a revision among their direct children.
    pub touched_paragraphs: u64,
    /// Positions (in `w:p` order) of the paragraphs with such a revision
    /// anywhere inside.
    pub touched: Vec<u32>,
}

impl Edits {
    /// Runs of consecutive touched paragraphs: the lawyer's redlines.
    pub fn redlines(&self) -> u64 {
        let mut runs = 0;
        let mut last: Option<u32> = None;
        for &i in &self.touched {
            if last.is_none_or(|l| l.checked_add(1) != Some(i)) {
                runs += 1;
            }
            last = Some(i);
        }
        runs
    }
}

impl EditShape {
    /// The edits of the revisions whose author `counts` (every revision
    /// with `|_| true`), walked as the reference walks them.
    pub fn edits(&self, counts: &dyn Fn(&str) -> bool) -> Edits {
        let mut out = Edits::default();
        for (i, p) in self.paragraphs.iter().enumerate() {
            let (ops, touched) = paragraph_events(p, counts, &mut out.events);
            out.operations += ops;
            out.touched_paragraphs += u64::from(touched);
            if p.touched_by.iter().any(|a| counts(a)) {
                out.touched.push(u32::try_from(i).unwrap_or(u32::MAX));
            }
        }
        out
    }
}

/// One paragraph's events (pushed to `events`), its edit operations, and
/// whether a counted revision is among its direct children.
fn paragraph_events(
    p: &ParagraphShape,
    counts: &dyn Fn(&str) -> bool,
    events: &mut Vec<EditEvent>,
) -> (u64, bool) {
    let event = |size: u64| EditEvent { size, unchanged: p.unchanged };
    let mut pending: Option<(u64, &str)> = None;
    let (mut deletions, mut insertions, mut pairs) = (0u64, 0u64, 0u64);
    let mut touched = false;
    for child in &p.children {
        let (removed, author, chars) = match child {
            ShapeChild::Other => {
                events.extend(pending.take().map(|(n, _)| event(n)));
                continue;
            }
            ShapeChild::Removed { author, chars } => (true, author.as_str(), *chars),
            ShapeChild::Added { author, chars } => (false, author.as_str(), *chars),
        };
        if !counts(author) {
            events.extend(pending.take().map(|(n, _)| event(n)));
            continue;
        }
        touched = true;
        if removed {
            events.extend(pending.take().map(|(n, _)| event(n)));
            deletions += 1;
            pending = Some((chars, author));
            continue;
        }
        insertions += 1;
        match pending.take() {
            Some((deleted, by)) if by == author => {
                if deleted > 0 {
                    pairs += 1;
                }
                events.push(event(deleted.max(chars)));
            }
            _ => events.push(event(chars)),
        }
    }
    events.extend(pending.map(|(n, _)| event(n)));
    (deletions + insertions - pairs, touched)
}
