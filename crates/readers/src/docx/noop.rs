//! Tracked changes that change nothing, cancelled before anything counts
//! them: a deletion and an insertion of the same text at the same place
//! (`~~the Supplier~~++the Supplier++`, or the same words split across
//! runs differently), and a formatting or property change whose old and
//! new values are equal.
//!
//! Owns: finding them, turning their text back into unchanged text,
//! removing the revisions nothing else refers to (every index into
//! `Document::revisions` renumbered), and recording each in
//! `Document::cancelled`. Must never cancel a change a person could see:
//! a group is cancelled only when the text it deletes is, character for
//! character, the text it inserts at the same place, by the same author.

use std::collections::{HashMap, HashSet};

use super::model::*;

/// Cancels every no-op change of `doc`. Linear in the document: one pass
/// over each paragraph's spans, sets for the revisions involved.
pub(crate) fn cancel(doc: &mut Document) {
    // Each revision cancelled with text, and the text it deleted and
    // inserted again.
    let mut texts: HashMap<usize, String> = HashMap::new();
    let revisions = &doc.revisions;
    let mut text_groups = |blocks: &mut Vec<Block>| {
        visit_paragraphs_mut(blocks, &mut |p| cancel_text_groups(p, revisions, &mut texts));
    };
    text_groups(&mut doc.body);
    for story in &mut doc.stories {
        text_groups(&mut story.blocks);
    }
    // A formatting or property change whose before and after are equal.
    let empty: HashSet<usize> = doc
        .revisions
        .iter()
        .enumerate()
        .filter(|(_, r)| r.kind.is_format() && r.changed.is_empty())
        .map(|(i, _)| i)
        .collect();
    if empty.is_empty() && texts.is_empty() {
        return;
    }
    let drop_format = |blocks: &mut Vec<Block>| {
        for_each_block_revisions(blocks, &mut |refs| refs.drop_all(&empty));
    };
    drop_format(&mut doc.body);
    for story in &mut doc.stories {
        drop_format(&mut story.blocks);
    }
    let mut cancelled: Vec<usize> = texts.keys().chain(empty.iter()).copied().collect();
    cancelled.sort_unstable();
    cancelled.dedup();
    // Only revisions nothing refers to any more are removed.
    let mut used = vec![false; doc.revisions.len()];
    let mut mark = |blocks: &mut Vec<Block>| {
        for_each_block_revisions(blocks, &mut |refs| {
            refs.each(&mut |r| {
                if let Some(u) = used.get_mut(r) {
                    *u = true;
                }
            })
        });
    };
    mark(&mut doc.body);
    for story in &mut doc.stories {
        mark(&mut story.blocks);
    }
    let gone: Vec<usize> =
        cancelled.into_iter().filter(|&r| !used.get(r).copied().unwrap_or(true)).collect();
    for &rev in &gone {
        if let Some(r) = doc.revisions.get(rev) {
            let text = texts.get(&rev).cloned();
            // A pair is said once, by its deletion.
            if r.kind == RevisionKind::Insertion && text.is_some() {
                continue;
            }
            doc.cancelled.push(Cancelled {
                kind: r.kind,
                author: r.author.clone(),
                text: text.unwrap_or_default(),
            });
        }
    }
    remove(doc, &gone);
}

/// What becomes of one span.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Kept,
    /// Its change cancelled: it stays as unchanged text.
    Unchanged,
    /// Its deletion cancelled by the same text inserted: it goes.
    Dropped,
}

/// In one paragraph, each run of one author's consecutive changed spans
/// whose deleted text equals its inserted text becomes unchanged text;
/// failing that, each deletion and insertion side by side of the same text
/// does (a no-op pair beside a real change). One pass, then one rebuild.
fn cancel_text_groups(p: &mut Paragraph, revisions: &[Revision], out: &mut HashMap<usize, String>) {
    let plain_kind = |r: Option<usize>| {
        let kind = r.and_then(|r| revisions.get(r)).map(|r| r.kind);
        matches!(kind, None | Some(RevisionKind::Insertion | RevisionKind::Deletion))
    };
    let changed = |inline: &Inline| {
        matches!(inline, Inline::Text(s) if (s.inserted.is_some() != s.deleted.is_some())
            && plain_kind(s.inserted) && plain_kind(s.deleted))
    };
    // One author's changes: a deletion by one side and the same words
    // inserted by the other is a negotiation (a deletion countered), not
    // an edit that changes nothing.
    let author_of = |inline: &Inline| -> Option<String> {
        let Inline::Text(s) = inline else { return None };
        let author = revisions.get(s.inserted.or(s.deleted)?)?.author.as_deref()?;
        Some(super::carried::squeeze(author))
    };
    let mut fates = vec![Fate::Kept; p.inlines.len()];
    let mut cancel = |range: std::ops::Range<usize>, text: &str, fates: &mut Vec<Fate>| {
        for k in range {
            if let Some(Inline::Text(s)) = p.inlines.get(k) {
                if let Some(rev) = s.inserted.or(s.deleted) {
                    out.entry(rev).or_insert_with(|| text.to_string());
                }
                if let Some(f) = fates.get_mut(k) {
                    *f = if s.deleted.is_some() { Fate::Dropped } else { Fate::Unchanged };
                }
            }
        }
    };
    let mut i = 0;
    while i < p.inlines.len() {
        if !p.inlines.get(i).is_some_and(changed) {
            i += 1;
            continue;
        }
        let start = i;
        let first = p.inlines.get(i).and_then(author_of);
        while p.inlines.get(i).is_some_and(|x| changed(x) && author_of(x) == first) {
            i += 1;
        }
        let (deleted, inserted) = sides(p.inlines.get(start..i).unwrap_or_default());
        if !deleted.is_empty() && deleted == inserted {
            cancel(start..i, &deleted, &mut fates);
            continue;
        }
        let mut j = start;
        while j + 1 < i {
            let (d, n) = sides(p.inlines.get(j..j + 2).unwrap_or_default());
            if !d.is_empty() && d == n {
                cancel(j..j + 2, &d, &mut fates);
                j += 2;
            } else {
                j += 1;
            }
        }
    }
    if fates.iter().all(|f| *f == Fate::Kept) {
        return;
    }
    let inlines = std::mem::take(&mut p.inlines);
    p.inlines = inlines
        .into_iter()
        .zip(fates)
        .filter_map(|(inline, fate)| match (inline, fate) {
            (_, Fate::Dropped) => None,
            (Inline::Text(mut s), Fate::Unchanged) => {
                s.inserted = None;
                Some(Inline::Text(s))
            }
            (inline, _) => Some(inline),
        })
        .collect();
}

/// The deleted and the inserted text of a group of changed spans.
fn sides(group: &[Inline]) -> (String, String) {
    let (mut deleted, mut inserted) = (String::new(), String::new());
    for inline in group {
        if let Inline::Text(s) = inline {
            if s.deleted.is_some() { deleted.push_str(&s.text) } else { inserted.push_str(&s.text) }
        }
    }
    (deleted, inserted)
}

/// Every revision reference one model element holds.
struct Refs<'a> {
    options: Vec<&'a mut Option<usize>>,
    lists: Vec<&'a mut Vec<usize>>,
}

impl Refs<'_> {
    fn each(&mut self, f: &mut dyn FnMut(usize)) {
        for o in &mut self.options {
            if let Some(r) = **o {
                f(r);
            }
        }
        for l in &mut self.lists {
            l.iter().copied().for_each(&mut *f);
        }
    }

    /// Removes references to the formatting revisions in `revs`.
    fn drop_all(&mut self, revs: &HashSet<usize>) {
        for o in &mut self.options {
            if o.is_some_and(|r| revs.contains(&r)) {
                **o = None;
            }
        }
        for l in &mut self.lists {
            l.retain(|r| !revs.contains(r));
        }
    }

    fn renumber(&mut self, map: &[Option<usize>]) {
        for o in &mut self.options {
            **o = o.and_then(|r| map.get(r).copied().flatten());
        }
        for l in &mut self.lists {
            l.retain_mut(|r| match map.get(*r).copied().flatten() {
                Some(n) => {
                    *r = n;
                    true
                }
                None => false,
            });
        }
    }
}

/// Removes the revisions `gone` (sorted) and renumbers every reference.
fn remove(doc: &mut Document, gone: &[usize]) {
    if gone.is_empty() {
        return;
    }
    let mut map = Vec::with_capacity(doc.revisions.len());
    let mut next = 0;
    for i in 0..doc.revisions.len() {
        if gone.binary_search(&i).is_ok() {
            map.push(None);
        } else {
            map.push(Some(next));
            next += 1;
        }
    }
    let mut index = 0;
    doc.revisions.retain(|_| {
        index += 1;
        gone.binary_search(&(index - 1)).is_err()
    });
    let renumber = |blocks: &mut Vec<Block>| {
        for_each_block_revisions(blocks, &mut |refs| refs.renumber(&map));
    };
    renumber(&mut doc.body);
    for story in &mut doc.stories {
        renumber(&mut story.blocks);
    }
}

/// Calls `f` with the revision references of every element of `blocks`:
/// paragraphs (marks, formatting, spans, note references), tables, rows
/// and cells.
fn for_each_block_revisions(blocks: &mut [Block], f: &mut dyn FnMut(&mut Refs<'_>)) {
    for block in blocks {
        match block {
            Block::Paragraph(p) => {
                let mut refs = Refs {
                    options: vec![&mut p.mark_inserted, &mut p.mark_deleted],
                    lists: vec![&mut p.format_changes],
                };
                for inline in &mut p.inlines {
                    match inline {
                        Inline::Text(s) => {
                            refs.options.extend([&mut s.inserted, &mut s.deleted, &mut s.format])
                        }
                        Inline::NoteRef { inserted, deleted, .. }
                        | Inline::Picture { inserted, deleted, .. } => {
                            refs.options.extend([inserted, deleted])
                        }
                        _ => {}
                    }
                }
                f(&mut refs);
            }
            Block::Table(t) => {
                f(&mut Refs { options: Vec::new(), lists: vec![&mut t.format_changes] });
                for row in &mut t.rows {
                    f(&mut Refs {
                        options: vec![&mut row.inserted, &mut row.deleted],
                        lists: vec![&mut row.format_changes],
                    });
                    for cell in &mut row.cells {
                        f(&mut Refs {
                            options: vec![&mut cell.inserted, &mut cell.deleted],
                            lists: vec![&mut cell.format_changes],
                        });
                        for_each_block_revisions(&mut cell.blocks, f);
                    }
                }
            }
        }
    }
}
