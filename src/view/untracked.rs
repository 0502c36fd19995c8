//! What an output changed without tracking, found by comparing it with its
//! task's input as a person would compare the two: the output with every
//! tracked change rejected must read as the input with each of the input's
//! own changes accepted or rejected; any other difference was typed over
//! the text with tracking off.
//!
//! Owns: the paragraph alignment (in order, resynchronising within a
//! window) and the word-level comparison of paired paragraphs (longest
//! common subsequence over the words as read, after their common prefix
//! and suffix). Must never cost more than linear in the documents times a
//! fixed bound: a paired paragraph whose differing middle is too long to
//! compare word by word is reported as rewritten whole.

use crate::docx::{Block, Document, Paragraph, State, Story, StoryKind, visit_paragraphs};

use super::characters::as_read;
use super::plain::paragraph_text;

/// How many paragraphs ahead the alignment looks for the next match.
const WINDOW: usize = 24;
/// The largest (words × words) middle compared word by word.
const MAX_CELLS: usize = 250_000;

/// One stretch of text changed without tracking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    /// Text in the output that neither state of the input holds.
    Inserted(String),
    /// Text of the input (in both its states) the output lost.
    Deleted(String),
}

/// The untracked edits of an output, by its body paragraph (in the order
/// `visit_paragraphs` walks them).
#[derive(Debug, Default)]
pub(crate) struct Untracked {
    /// Edits inside an output paragraph (including a paragraph the input
    /// does not hold at all: one insertion of its text), by paragraph.
    pub within: std::collections::BTreeMap<usize, Vec<Edit>>,
    /// Input paragraphs the output lost whole, each placed after the
    /// output paragraph it followed (`None`: before the first).
    pub lost: Vec<(Option<usize>, String)>,
}

impl Untracked {
    /// How many edits: stretches inserted or deleted, and paragraphs lost.
    pub(crate) fn count(&self) -> usize {
        self.within.values().map(Vec::len).sum::<usize>() + self.lost.len()
    }

    fn push(&mut self, paragraph: usize, edit: Edit) {
        self.within.entry(paragraph).or_default().push(edit);
    }

    /// Each edit, in a reader's words, in document order.
    pub(crate) fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .within
            .values()
            .flatten()
            .map(|e| match e {
                Edit::Inserted(t) => format!("inserted \"{t}\""),
                Edit::Deleted(t) => format!("deleted \"{t}\""),
            })
            .collect();
        out.extend(self.lost.iter().map(|(_, t)| format!("deleted the paragraph \"{t}\"")));
        out
    }

    /// The edits within output paragraph `i`.
    pub(crate) fn of(&self, i: usize) -> impl Iterator<Item = &Edit> {
        self.within.get(&i).into_iter().flatten()
    }
}

/// A paragraph's words as read, in one state.
fn words(p: &Paragraph, state: State) -> Vec<String> {
    as_read(&paragraph_text(p, state)).split_whitespace().map(str::to_string).collect()
}

/// Compares `output` with `input`.
pub(crate) fn compare(output: &Document, input: &Document) -> Untracked {
    compare_blocks(&output.body, &input.body)
}

/// The untracked edits of each header, footer, footnote and endnote: a
/// story of the output paired with the input's of the same kind and part
/// (or note id), one the other side lacks compared with nothing. (Text
/// boxes are left out: their ordinals move when one is added; so are
/// parts no section shows.)
#[derive(Debug, Default)]
pub(crate) struct StoryEdits {
    /// By index into the output's stories, those with an edit.
    pub within: Vec<(usize, Untracked)>,
    /// By index into the input's stories, those the output lacks.
    pub lost: Vec<(usize, Untracked)>,
}

/// Compares the stories of `output` with those of `input`.
pub(crate) fn compare_stories(output: &Document, input: &Document) -> StoryEdits {
    let counted = |s: &Story| !matches!(s.kind, StoryKind::TextBox) && s.hidden.is_none();
    let key = |s: &Story| (s.kind, s.id.clone());
    let mut out = StoryEdits::default();
    for (i, s) in output.stories.iter().enumerate().filter(|(_, s)| counted(s)) {
        let theirs = input.stories.iter().filter(|s| counted(s)).find(|i| key(i) == key(s));
        let found = compare_blocks(&s.blocks, theirs.map_or(&[], |i| i.blocks.as_slice()));
        if found.count() > 0 {
            out.within.push((i, found));
        }
    }
    for (i, s) in input.stories.iter().enumerate().filter(|(_, s)| counted(s)) {
        if !output.stories.iter().filter(|s| counted(s)).any(|o| key(o) == key(s)) {
            let found = compare_blocks(&[], &s.blocks);
            if found.count() > 0 {
                out.lost.push((i, found));
            }
        }
    }
    out
}

/// Where a story stands, in a reader's words.
pub(crate) fn place(s: &Story) -> String {
    match s.kind {
        StoryKind::Header => format!("in the header ({})", s.id),
        StoryKind::Footer => format!("in the footer ({})", s.id),
        StoryKind::Footnote => format!("in footnote {}", s.id),
        StoryKind::Endnote => format!("in endnote {}", s.id),
        StoryKind::TextBox => format!("in text box {}", s.id),
    }
}

/// The untracked edits in the headers, footers, footnotes and endnotes, in
/// a reader's words, each saying where (see [`compare_stories`]).
pub(crate) fn story_edits(output: &Document, input: &Document) -> Vec<String> {
    let found = compare_stories(output, input);
    let mut out = Vec::new();
    let sides = [(&found.within, output), (&found.lost, input)];
    for (edits, doc) in sides {
        for (i, edits) in edits {
            let Some(s) = doc.stories.get(*i) else { continue };
            let place = place(s);
            out.extend(edits.describe().into_iter().map(|e| format!("{place}: {e}")));
        }
    }
    out
}

/// The untracked edits of the output's `output` blocks against the input's.
fn compare_blocks(output: &[Block], input: &[Block]) -> Untracked {
    // A paragraph whose mark was inserted (a tracked split) is one with
    // the next in the rejected state: the units compared are the
    // rejected state's paragraphs, each named by its first paragraph.
    let mut outs: Vec<(usize, Vec<String>)> = Vec::new();
    let (mut index, mut pending): (usize, Option<(usize, Vec<String>)>) = (0, None);
    visit_paragraphs(output, &mut |p| {
        let (_, w) = pending.get_or_insert_with(|| (index, Vec::new()));
        w.extend(words(p, State::Rejected));
        if p.mark_inserted.is_none()
            && let Some((at, w)) = pending.take()
            && !w.is_empty()
        {
            outs.push((at, w));
        }
        index += 1;
    });
    outs.extend(pending.filter(|(_, w)| !w.is_empty()));
    let mut ins: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    let mut open: Option<(Vec<String>, Vec<String>)> = None;
    visit_paragraphs(input, &mut |p| {
        let (r, a) = open.get_or_insert_with(Default::default);
        r.extend(words(p, State::Rejected));
        a.extend(words(p, State::Accepted));
        if p.mark_inserted.is_none()
            && let Some((r, a)) = open.take()
            && (!r.is_empty() || !a.is_empty())
        {
            ins.push((r, a));
        }
    });
    ins.extend(open.filter(|(r, a)| !r.is_empty() || !a.is_empty()));
    // Only a paragraph both states of the input hold can be lost: one the
    // other side inserted or deleted whole is settled by its absence.
    let lose = |found: &mut Untracked, at: Option<usize>, p: &(Vec<String>, Vec<String>)| {
        if !p.0.is_empty() && !p.1.is_empty() {
            found.lost.push((at, p.0.join(" ")));
        }
    };
    let same = |o: &[String], i: &(Vec<String>, Vec<String>)| o == i.0 || o == i.1;
    let mut found = Untracked::default();
    let (mut i, mut j) = (0, 0);
    let mut last_out: Option<usize> = None;
    while i < ins.len() || j < outs.len() {
        match (ins.get(i), outs.get(j)) {
            (Some(p), Some((q, o))) if same(o, p) => {
                last_out = Some(*q);
                i += 1;
                j += 1;
            }
            (Some(p), Some((q, o))) => {
                // Input paragraphs lost, or output paragraphs added, before
                // the next pair that matches; else the two were edited.
                let mut lost = (1..WINDOW).find(|&k| ins.get(i + k).is_some_and(|p| same(o, p)));
                let mut added =
                    (1..WINDOW).find(|&k| outs.get(j + k).is_some_and(|(_, o)| same(o, p)));
                if lost.is_none() && added.is_none() {
                    // No exact match near: an edited paragraph pairs with the
                    // nearby one it shares most words with.
                    let here = likeness(o, p);
                    let best = |scores: Vec<(usize, f64)>| {
                        scores
                            .into_iter()
                            .filter(|&(_, s)| s >= 0.5 && s > here)
                            .fold(None, |b: Option<(usize, f64)>, x| match b {
                                Some(b) if b.1 >= x.1 => Some(b),
                                _ => Some(x),
                            })
                            .map(|(k, _)| k)
                    };
                    let in_scores = (1..WINDOW)
                        .filter_map(|k| ins.get(i + k).map(|p| (k, likeness(o, p))))
                        .collect();
                    let out_scores = (1..WINDOW)
                        .filter_map(|k| outs.get(j + k).map(|(_, o)| (k, likeness(o, p))))
                        .collect();
                    lost = best(in_scores);
                    added = if lost.is_none() { best(out_scores) } else { None };
                }
                match (lost, added) {
                    (Some(k), a) if a.is_none_or(|a| k <= a) => {
                        for p in ins.get(i..i + k).unwrap_or_default() {
                            lose(&mut found, last_out, p);
                        }
                        i += k;
                    }
                    (_, Some(k)) => {
                        for (q, o) in outs.get(j..j + k).unwrap_or_default() {
                            found.push(*q, Edit::Inserted(o.join(" ")));
                        }
                        j += k;
                    }
                    _ => {
                        for e in edits(o, p) {
                            found.push(*q, e);
                        }
                        last_out = Some(*q);
                        i += 1;
                        j += 1;
                    }
                }
            }
            (Some(p), None) => {
                lose(&mut found, last_out, p);
                i += 1;
            }
            (None, Some((q, o))) => {
                found.push(*q, Edit::Inserted(o.join(" ")));
                j += 1;
            }
            (None, None) => break,
        }
    }
    found
}

/// How alike an output paragraph and an input paragraph are: the share of
/// the longer one's words the other holds too (as multisets), against the
/// closer of the input's two states.
fn likeness(o: &[String], input: &(Vec<String>, Vec<String>)) -> f64 {
    let score = |x: &[String]| {
        let mut counts: std::collections::HashMap<&str, i64> = std::collections::HashMap::new();
        for w in x {
            *counts.entry(w).or_default() += 1;
        }
        let mut common = 0usize;
        for w in o {
            if let Some(c) = counts.get_mut(w.as_str())
                && *c > 0
            {
                *c -= 1;
                common += 1;
            }
        }
        let longest = o.len().max(x.len()).max(1);
        common as f64 / longest as f64
    };
    score(&input.0).max(score(&input.1))
}

/// The untracked edits of one output paragraph `o` against the input
/// paragraph's rejected and accepted words: words of `o` in neither are
/// inserted, words in both the output lacks are deleted.
fn edits(o: &[String], input: &(Vec<String>, Vec<String>)) -> Vec<Edit> {
    let (r, a) = input;
    let (o_in_r, r_in_o) = matched(o, r);
    let (o_in_a, a_in_o) = if r == a { (o_in_r.clone(), r_in_o.clone()) } else { matched(o, a) };
    let inserted: Vec<bool> = o_in_r.iter().zip(&o_in_a).map(|(x, y)| !x && !y).collect();
    // A word the output lost from both states: each lost word of the
    // rejected state that the accepted state lost too (as a multiset).
    let mut lost_from_a: Vec<&str> =
        a.iter().zip(&a_in_o).filter(|(_, m)| !**m).map(|(w, _)| w.as_str()).collect();
    let deleted: Vec<bool> = r
        .iter()
        .zip(&r_in_o)
        .map(|(w, m)| {
            if *m {
                return false;
            }
            match lost_from_a.iter().position(|x| x == w) {
                Some(k) => {
                    lost_from_a.swap_remove(k);
                    true
                }
                None => false,
            }
        })
        .collect();
    let mut out: Vec<Edit> = runs(r, &deleted).into_iter().map(Edit::Deleted).collect();
    out.extend(runs(o, &inserted).into_iter().map(Edit::Inserted));
    out
}

/// The stretches of consecutive words marked in `flags`.
fn runs(words: &[String], flags: &[bool]) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for (w, &f) in words.iter().zip(flags) {
        if f {
            current.push(w);
        } else if !current.is_empty() {
            out.push(current.join(" "));
            current.clear();
        }
    }
    if !current.is_empty() {
        out.push(current.join(" "));
    }
    out
}

/// Which words of `x` and of `y` a longest common subsequence keeps. The
/// common prefix and suffix are kept first; a middle larger than
/// [`MAX_CELLS`] is kept by neither (rewritten whole).
fn matched(x: &[String], y: &[String]) -> (Vec<bool>, Vec<bool>) {
    let prefix = x.iter().zip(y).take_while(|(a, b)| a == b).count();
    let max_suffix = x.len().min(y.len()) - prefix;
    let suffix =
        x.iter().rev().zip(y.iter().rev()).take(max_suffix).take_while(|(a, b)| a == b).count();
    let ends = |n: usize| -> Vec<bool> { (0..n).map(|k| k < prefix || k >= n - suffix).collect() };
    let (mut kx, mut ky) = (ends(x.len()), ends(y.len()));
    let xm = x.get(prefix..x.len() - suffix).unwrap_or_default();
    let ym = y.get(prefix..y.len() - suffix).unwrap_or_default();
    if xm.is_empty() || ym.is_empty() || xm.len().saturating_mul(ym.len()) > MAX_CELLS {
        return (kx, ky);
    }
    // lengths[i][j]: LCS of xm[i..] and ym[j..], one row of (ym + 1) per i.
    let width = ym.len() + 1;
    let mut lengths = vec![0u32; (xm.len() + 1) * width];
    for i in (0..xm.len()).rev() {
        for j in (0..ym.len()).rev() {
            let here = if xm.get(i) == ym.get(j) {
                lengths.get((i + 1) * width + j + 1).copied().unwrap_or(0) + 1
            } else {
                let down = lengths.get((i + 1) * width + j).copied().unwrap_or(0);
                let right = lengths.get(i * width + j + 1).copied().unwrap_or(0);
                down.max(right)
            };
            if let Some(cell) = lengths.get_mut(i * width + j) {
                *cell = here;
            }
        }
    }
    let (mut i, mut j) = (0, 0);
    let at = |i: usize, j: usize| lengths.get(i * width + j).copied().unwrap_or(0);
    while i < xm.len() && j < ym.len() {
        if xm.get(i) == ym.get(j) {
            if let Some(k) = kx.get_mut(prefix + i) {
                *k = true;
            }
            if let Some(k) = ky.get_mut(prefix + j) {
                *k = true;
            }
            i += 1;
            j += 1;
        } else if at(i + 1, j) >= at(i, j + 1) {
            i += 1;
        } else {
            j += 1;
        }
    }
    (kx, ky)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn words_typed_over_the_input_are_found_both_ways() {
        let input = (
            w("The Supplier is liable up to 150% of the fees."),
            w("The Supplier is liable up to 150% of the fees."),
        );
        let e = edits(&w("The Supplier is liable up to 100% of the fees."), &input);
        assert_eq!(e, [Edit::Deleted("150%".into()), Edit::Inserted("100%".into())]);
        assert!(edits(&input.0, &input).is_empty());
    }

    #[test]
    fn accepting_or_rejecting_the_inputs_own_changes_is_not_an_untracked_edit() {
        // The input holds a tracked replacement: "30" → "60" days.
        let input = (w("payment within 30 days"), w("payment within 60 days"));
        assert!(edits(&w("payment within 60 days"), &input).is_empty());
        assert!(edits(&w("payment within 30 days"), &input).is_empty());
        // "90" is typed over: an insertion. Losing "30" or "60" is settling
        // the input's own change (rejecting or accepting it), not an edit.
        assert_eq!(edits(&w("payment within 90 days"), &input), [Edit::Inserted("90".into())]);
    }

    #[test]
    fn a_long_rewrite_is_reported_whole_without_comparing_word_by_word() {
        let long_a: Vec<String> = (0..1000).map(|i| format!("a{i}")).collect();
        let long_b: Vec<String> = (0..1000).map(|i| format!("b{i}")).collect();
        let (x, y) = matched(&long_a, &long_b);
        assert!(x.iter().all(|m| !m) && y.iter().all(|m| !m));
    }
}
