//! `accepted_text_equals` and `revision_set_f1`: the text after accepting
//! the changes, and the changes themselves, against a gold.

use super::sections::Sections;
use super::text::{normalise_ws, token_f1, tokens};
use super::{Facts, Outcome, by, verdict};
use crate::docx::{Document, Inline, State};
use crate::task::check_spec::PreparedCheck;

pub(super) fn text_equals(
    facts: &Facts<'_>,
    check: &PreparedCheck,
    section: Option<&str>,
    text: Option<&str>,
    min_f1: Option<f64>,
) -> Outcome {
    let named = section;
    let section = match facts.section(named) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let section = section.as_deref();
    let ours = accepted(facts.doc, &facts.sections, section);
    let want = match (text, &check.gold) {
        (Some(t), _) => t.to_string(),
        (None, Some(g)) => {
            let gold = Sections::of(g);
            // The gold's section of the same name (its label may differ).
            let theirs = match named {
                Some(n) => match gold.resolve(n) {
                    Ok(l) => Some(l),
                    Err(why) => return verdict(false, format!("the gold: {why}")),
                },
                None => None,
            };
            accepted(g, &gold, theirs.as_deref())
        }
        (None, None) => String::new(),
    };
    let (a, b) = (normalise_ws(&ours), normalise_ws(&want));
    let place = section.map(|s| format!("section {s}")).unwrap_or_else(|| "the document".into());
    match min_f1 {
        Some(t) => {
            let f = token_f1(&tokens(&b), &tokens(&a));
            verdict(
                f >= t,
                format!(
                    "accepted text of {place}: token F1 {f:.3} against the gold (threshold {t})"
                ),
            )
        }
        None if a == b => verdict(true, format!("accepted text of {place} equals the gold text")),
        None => {
            let at = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
            let ctx: String = a.chars().skip(at.saturating_sub(20)).take(60).collect();
            verdict(
                false,
                format!(
                    "accepted text of {place} differs from the gold from character {at}: \"…{ctx}…\""
                ),
            )
        }
    }
}

/// The accepted text of a section, or of the whole document.
fn accepted(doc: &Document, sections: &Sections<'_>, section: Option<&str>) -> String {
    match section {
        Some(s) => sections.accepted_text(Some(s)),
        None => crate::view::plain::lines(doc, State::Accepted).join("\n"),
    }
}

pub(super) fn revision_set_f1(
    facts: &Facts<'_>,
    check: &PreparedCheck,
    min_f1: f64,
    author: Option<&str>,
) -> Outcome {
    // The same author filter on both sides: from turn 2 on the gold also
    // carries the other side's changes.
    let ours = revision_tokens(facts.doc, author);
    let gold = check.gold.as_deref().map(|g| revision_tokens(g, author)).unwrap_or_default();
    let f = token_f1(&gold, &ours);
    verdict(
        f >= min_f1,
        format!(
            "inserted/deleted tokens: F1 {f:.3} against the gold redline (threshold {min_f1}; {} vs {} tokens)",
            ours.len(),
            gold.len()
        ),
    )
}

/// Inserted ("+") and deleted ("-") tokens, optionally by one author.
fn revision_tokens(doc: &Document, author: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    let rev_author = |rev: usize| doc.revisions.get(rev).and_then(|r| r.author.as_deref());
    doc.for_each_body_paragraph(&mut |p| {
        for inline in &p.inlines {
            let Inline::Text(s) = inline else { continue };
            let (sign, rev) = match (s.inserted, s.deleted) {
                (_, Some(d)) => ("-", d),
                (Some(i), None) => ("+", i),
                _ => continue,
            };
            if by(author, rev_author(rev)) {
                out.extend(tokens(&s.text).into_iter().map(|t| format!("{sign}{t}")));
            }
        }
    });
    out
}
