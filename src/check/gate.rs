//! The validity gate: an output counts only if it is a loadable .docx with at
//! least one tracked change or comment by the task's author.
//!
//! Owns: author-name matching (see [`same_author`]) and the gate's reasons.
//! Must never load the file itself: callers hand it a parsed document or the
//! load error, so the gate and the scorer can never disagree on loadability.

use std::collections::BTreeMap;

use super::text::normalise_ws;
use crate::docx::{Document, DocxError};

/// The gate's decision and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GateResult {
    pub passed: bool,
    pub reason: String,
    /// Tracked changes by the author.
    #[serde(default)]
    pub revisions: usize,
    /// Comments and replies by the author.
    #[serde(default)]
    pub comments: usize,
}

impl GateResult {
    /// A failed gate with its reason.
    pub fn failed(reason: impl Into<String>) -> GateResult {
        GateResult { passed: false, reason: reason.into(), revisions: 0, comments: 0 }
    }
}

/// Whether two author names are the same person: surrounding whitespace is
/// ignored and inner runs of whitespace (including non-breaking spaces)
/// count as one space. Case is kept: "Vendor Counsel" and "vendor counsel"
/// differ, as they do in Word's review pane.
pub fn same_author(a: &str, b: &str) -> bool {
    normalise_ws(a) == normalise_ws(b)
}

/// What identifies a tracked change or comment across two versions of a
/// document (ids are renumbered by every save): kind, author, date, text.
fn signatures(doc: &Document) -> Vec<(String, Option<String>)> {
    let mut text: Vec<String> = vec![String::new(); doc.revisions.len()];
    let mut visit = |p: &crate::docx::Paragraph| {
        for inline in &p.inlines {
            if let crate::docx::Inline::Text(span) = inline {
                for rev in [span.inserted, span.deleted, span.format].into_iter().flatten() {
                    if let Some(t) = text.get_mut(rev) {
                        t.push_str(&span.text);
                    }
                }
            }
        }
    };
    crate::docx::visit_paragraphs(&doc.body, &mut visit);
    for story in &doc.stories {
        crate::docx::visit_paragraphs(&story.blocks, &mut visit);
    }
    let mut out: Vec<(String, Option<String>)> = doc
        .revisions
        .iter()
        .enumerate()
        .map(|(i, r)| (format!("rev\u{1f}{:?}\u{1f}{}\u{1f}{}", r.kind, r.date.as_deref().unwrap_or(""), text[i]), r.author.clone()))
        .collect();
    out.extend(doc.comments.iter().map(|c| (format!("cmt\u{1f}{}\u{1f}{}", c.date.as_deref().unwrap_or(""), c.text), c.author.clone())));
    out
}

/// Applies the gate to a load result.
pub fn check(loaded: &Result<Document, DocxError>, author: &str) -> GateResult {
    check_against(loaded, author, None)
}

/// Applies the gate counting only what the output adds to `input`: a
/// turn-3 output must not pass on the same author's turn-1 changes that it
/// merely carried over.
pub fn check_against(loaded: &Result<Document, DocxError>, author: &str, input: Option<&Document>) -> GateResult {
    let doc = match loaded {
        Ok(doc) => doc,
        Err(e) => {
            return GateResult::failed(e.to_string());
        }
    };
    let want = normalise_ws(author);
    let mine = |a: &Option<String>| a.as_deref().is_some_and(|a| normalise_ws(a) == want);
    // Signatures present in the input, as a multiset to consume.
    let mut inherited: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    if let Some(input) = input {
        for (sig, a) in signatures(input) {
            if mine(&a) {
                *inherited.entry(sig).or_default() += 1;
            }
        }
    }
    let (mut revisions, mut comments, mut carried) = (0, 0, 0);
    for (sig, a) in signatures(doc) {
        if !mine(&a) {
            continue;
        }
        match inherited.get_mut(&sig) {
            Some(n) if *n > 0 => {
                *n -= 1;
                carried += 1;
            }
            _ if sig.starts_with("cmt") => comments += 1,
            _ => revisions += 1,
        }
    }
    let carried_note = if carried > 0 { format!(" ({carried} more carried over from the input)") } else { String::new() };
    if revisions + comments > 0 {
        let new = if input.is_some() { "new " } else { "" };
        return GateResult {
            passed: true,
            reason: format!("{revisions} {new}tracked change(s) and {comments} {new}comment(s) by '{want}'{carried_note}"),
            revisions,
            comments,
        };
    }
    if carried > 0 {
        return GateResult {
            passed: false,
            reason: format!("no new tracked change or comment by '{want}': its {carried} are all carried over from the input"),
            revisions: 0,
            comments: 0,
        };
    }
    // Say what the file does contain, so a near miss is obvious.
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    for a in doc.revisions.iter().map(|r| r.author.as_deref()).chain(doc.comments.iter().map(|c| c.author.as_deref())) {
        *others.entry(a.map(normalise_ws).unwrap_or_else(|| "(no author)".into())).or_default() += 1;
    }
    let reason = if others.is_empty() {
        format!("no tracked change or comment at all (edits made without Track Changes?); expected some by '{want}'")
    } else {
        let found: Vec<String> = others.iter().map(|(a, n)| format!("{n} by '{a}'")).collect();
        let hint = others
            .keys()
            .find(|a| a.to_lowercase() == want.to_lowercase())
            .map(|a| format!(" ('{a}' differs only in letter case)"))
            .unwrap_or_default();
        format!("no tracked change or comment by '{want}'; found {}{hint}", found.join(", "))
    };
    GateResult { passed: false, reason, revisions: 0, comments: 0 }
}
