//! Which tracked changes and comments of an output it carried over from its
//! input (the same author's changes of an earlier round), and which it
//! made itself.
//!
//! Owns: what identifies a change across two versions of a document — ids
//! are renumbered by every save, so a change is its kind, author, date and
//! text, a comment its author, date and text — matched as a multiset.
//! Must never match across authors.

use std::collections::HashMap;

use super::model::{Document, Inline, Paragraph, visit_paragraphs};

/// For each revision and comment of an output: carried over from the input?
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CarriedOver {
    /// Per revision of the output (index into `Document::revisions`).
    pub revisions: Vec<bool>,
    /// Per comment of the output (index into `Document::comments`).
    pub comments: Vec<bool>,
}

impl CarriedOver {
    /// Nothing carried over (there is no input).
    pub fn none(doc: &Document) -> CarriedOver {
        CarriedOver {
            revisions: vec![false; doc.revisions.len()],
            comments: vec![false; doc.comments.len()],
        }
    }

    /// Whether revision `i` was carried over.
    pub fn revision(&self, i: usize) -> bool {
        self.revisions.get(i).copied().unwrap_or(false)
    }

    /// Whether comment `i` (index in `Document::comments`) was carried over.
    pub fn comment(&self, i: usize) -> bool {
        self.comments.get(i).copied().unwrap_or(false)
    }
}

fn author_key(a: Option<&str>) -> String {
    squeeze(a.unwrap_or(""))
}

/// Each revision's text, in model order.
fn revision_texts(doc: &Document) -> Vec<String> {
    let mut text: Vec<String> = vec![String::new(); doc.revisions.len()];
    let mut visit = |p: &Paragraph| {
        for inline in &p.inlines {
            if let Inline::Text(span) = inline {
                for rev in [span.inserted, span.deleted, span.format].into_iter().flatten() {
                    if let Some(t) = text.get_mut(rev) {
                        t.push_str(&span.text);
                    }
                }
            }
        }
    };
    visit_paragraphs(&doc.body, &mut visit);
    for story in &doc.stories {
        visit_paragraphs(&story.blocks, &mut visit);
    }
    text
}

/// Signatures of every revision, then of every comment, in model order.
fn signatures(doc: &Document) -> (Vec<String>, Vec<String>) {
    let text = revision_texts(doc);
    let revisions = doc
        .revisions
        .iter()
        .zip(&text)
        .map(|(r, t)| {
            format!(
                "rev\u{1f}{:?}\u{1f}{}\u{1f}{}\u{1f}{t}",
                r.kind,
                author_key(r.author.as_deref()),
                r.date.as_deref().unwrap_or("")
            )
        })
        .collect();
    let comments = doc
        .comments
        .iter()
        .map(|c| {
            format!(
                "cmt\u{1f}{}\u{1f}{}\u{1f}{}",
                author_key(c.author.as_deref()),
                c.date.as_deref().unwrap_or(""),
                c.text
            )
        })
        .collect();
    (revisions, comments)
}

/// Matches the output's revisions and comments against the input's: each
/// input item accounts for at most one output item.
pub fn carried_over(output: &Document, input: &Document) -> CarriedOver {
    let (in_revs, in_cmts) = signatures(input);
    let mut left: HashMap<String, usize> = HashMap::new();
    for s in in_revs.into_iter().chain(in_cmts) {
        *left.entry(s).or_default() += 1;
    }
    let mut take = |s: &String| match left.get_mut(s) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    };
    let (revs, cmts) = signatures(output);
    CarriedOver {
        revisions: revs.iter().map(&mut take).collect(),
        comments: cmts.iter().map(&mut take).collect(),
    }
}

/// For each revision of the output: whether the input holds it — a
/// revision of the same kind and author whose text contains its text.
/// Looser than [`carried_over`] on purpose: a later round that edits inside
/// an earlier change splits it (Word writes the pieces as changes of their
/// own), and a tool that writes the document again re-dates every change;
/// each piece is still the earlier round's. What it refuses is the text:
/// an earlier change rewritten under its author's name is not held.
pub fn held_by_input(output: &Document, input: &Document) -> Vec<bool> {
    let key = |r: &super::model::Revision| {
        format!("{:?}\u{1f}{}", r.kind, author_key(r.author.as_deref()))
    };
    let mut held: HashMap<String, Vec<String>> = HashMap::new();
    let mut exact: std::collections::HashSet<String> = std::collections::HashSet::new();
    for (r, t) in input.revisions.iter().zip(revision_texts(input)) {
        let t = squeeze(&t);
        exact.insert(format!("{}\u{1f}{t}", key(r)));
        held.entry(key(r)).or_default().push(t);
    }
    // Containment is looked for among at most this many of the author's
    // changes of one kind (beyond, only an exact match holds): the cost
    // stays linear in the documents.
    const SCAN: usize = 256;
    output
        .revisions
        .iter()
        .zip(revision_texts(output))
        .map(|(r, t)| {
            let t = squeeze(&t);
            exact.contains(&format!("{}\u{1f}{t}", key(r)))
                || held.get(&key(r)).is_some_and(|texts| {
                    texts.len() <= SCAN && texts.iter().any(|h| h.contains(&t))
                })
        })
        .collect()
}

/// `s` with surrounding whitespace removed and inner runs of it one space.
pub(crate) fn squeeze(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
