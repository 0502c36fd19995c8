//! `contains` / `not_contains`: a regex over inserted, deleted or accepted
//! text.

use super::sections::Sections;
use super::text::{normalise_ws, preview};
use super::{Expect, Facts, Outcome, by, unknown_section, verdict};
use crate::docx::{Document, Inline};
use crate::task::check_spec::{Pattern, PreparedCheck, Target};

pub(super) fn evaluate(
    facts: &Facts<'_>,
    check: &PreparedCheck,
    p: &Pattern,
    expect: Expect,
) -> Outcome {
    let section = p.section.as_deref();
    if let Some(s) = section.filter(|s| !facts.sections.known(s)) {
        return unknown_section(s);
    }
    let hay = match p.target {
        Target::Accepted => facts.sections.accepted_text(section),
        _ => changed_text(facts.doc, &facts.sections, p.target, section, p.author.as_deref()),
    };
    let hay = normalise_ws(&hay);
    let found = check.regex.as_ref().and_then(|r| r.find(&hay)).map(|m| m.as_str().to_string());
    let which = match p.target {
        Target::Inserted => "inserted",
        Target::Deleted => "deleted",
        Target::Accepted => "accepted",
    };
    let place =
        format!("{which} text{}", section.map(|s| format!(" of section {s}")).unwrap_or_default());
    match found {
        Some(m) => verdict(expect == Expect::Match, format!("{place} contains {}", preview(&m))),
        None => verdict(expect == Expect::NoMatch, format!("{place} has no match for the pattern")),
    }
}

/// Inserted or deleted text of the body, a paragraph per line.
fn changed_text(
    doc: &Document,
    sections: &Sections<'_>,
    target: Target,
    section: Option<&str>,
    author: Option<&str>,
) -> String {
    let rev_author = |rev: usize| doc.revisions.get(rev).and_then(|r| r.author.as_deref());
    let mut out = String::new();
    for (i, (p, _)) in sections.paragraphs.iter().enumerate() {
        if section.is_some_and(|s| !sections.in_section(i, s)) {
            continue;
        }
        for inline in &p.inlines {
            let Inline::Text(s) = inline else { continue };
            let rev = match target {
                Target::Inserted if s.deleted.is_none() => s.inserted,
                Target::Deleted => s.deleted,
                _ => None,
            };
            if let Some(rev) = rev
                && by(author, rev_author(rev))
            {
                out.push_str(&s.text);
                out.push(' ');
            }
        }
        out.push('\n');
    }
    out
}
