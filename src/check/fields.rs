//! `fields`: cross-references resolve (every REF, PAGEREF and NOTEREF
//! field points at a bookmark that exists, and none shows Word's
//! unresolved-reference text), a named bookmark is where it should be,
//! and tables of contents list exactly the headings.

use super::text::{normalise_ws, preview};
use super::{Facts, Outcome, verdict};
use crate::docx::{BookmarkSpan, Field, State};
use crate::task::check_spec::FieldsSpec;

/// What Word shows when a field's target is gone.
const UNRESOLVED: [&str; 3] = [
    "Error! Reference source not found",
    "Error! Bookmark not defined",
    "Error! No text of specified style in document",
];

pub(super) fn evaluate(facts: &Facts<'_>, spec: &FieldsSpec) -> Outcome {
    let doc = facts.doc;
    let live: Vec<&Field> = doc.fields.iter().filter(|f| !f.deleted).collect();
    let refs = live.iter().filter(|f| f.target().is_some()).count();
    if spec.references {
        let missing: Vec<String> = live
            .iter()
            .filter_map(|f| f.target())
            .filter(|t| !doc.bookmarks.iter().any(|b| b.name == *t))
            .map(str::to_string)
            .collect();
        if let Some(first) = missing.first() {
            return verdict(
                false,
                format!(
                    "{} of {refs} cross-references point at no bookmark (first: {first})",
                    missing.len()
                ),
            );
        }
        let wrong = |f: &&Field| deleted_target(facts, f).or_else(|| stale_number(facts, f));
        if let Some(why) = live.iter().find_map(wrong) {
            return verdict(false, why);
        }
    }
    if spec.resolved_text {
        let accepted = facts.sections.accepted_text(None);
        let shown =
            live.iter().map(|f| f.result.as_str()).chain(std::iter::once(accepted.as_str()));
        for text in shown {
            if let Some(e) = UNRESOLVED.iter().find(|e| text.contains(*e)) {
                return verdict(false, format!("the document shows Word's \"{e}.\""));
            }
        }
    }
    if let Some(name) = &spec.bookmark
        && let Err(why) = bookmark(facts, name, spec)
    {
        return verdict(false, why);
    }
    if spec.toc {
        let tocs: Vec<&&Field> =
            live.iter().filter(|f| f.kind() == "TOC" && !f.instruction.contains("\\c")).collect();
        if tocs.is_empty() {
            return verdict(false, "the document has no table of contents".into());
        }
        for toc in tocs {
            if let Err(why) = toc_matches(facts, toc) {
                return verdict(false, why);
            }
        }
    }
    let mut said = Vec::new();
    if spec.references {
        said.push(format!("{refs} cross-references resolve and show their targets' numbers"));
    }
    if spec.resolved_text {
        said.push("no unresolved-reference text".to_string());
    }
    if let Some(name) = &spec.bookmark {
        said.push(format!("bookmark {name} is where it should be"));
    }
    if spec.toc {
        said.push("the table of contents lists the headings".to_string());
    }
    verdict(true, said.join("; "))
}

/// The body paragraph (index into `facts.sections.paragraphs`) a bookmark
/// starts in.
fn bookmarked_paragraph(facts: &Facts<'_>, name: &str) -> Option<usize> {
    let b = facts.doc.bookmarks.iter().find(|b| b.name == name)?;
    let bi = b.body_index?;
    facts.sections.paragraphs.iter().position(|(p, _)| p.body_index == Some(bi))
}

/// Why a REF, PAGEREF or NOTEREF points at a bookmark that is gone once
/// every change is accepted: its paragraph is deleted, or all the text it
/// spans is. (Only numbered REFs were caught; a plain REF or PAGEREF to a
/// deleted clause passed.)
fn deleted_target(facts: &Facts<'_>, f: &Field) -> Option<String> {
    let name = f.target()?;
    let paragraph =
        bookmarked_paragraph(facts, name).and_then(|i| facts.sections.paragraphs.get(i));
    let (what, gone) = match paragraph {
        Some((p, _)) if !p.present(State::Accepted) => ("a paragraph", true),
        // A bookmark over deleted text only, in a paragraph that stays (a
        // deleted sentence): accepting removes it all the same.
        _ => (
            "a bookmark whose text is all",
            facts.doc.bookmarks.iter().any(|b| b.name == name && b.span == BookmarkSpan::Deleted),
        ),
    };
    gone.then(|| {
        format!(
            "the {} cross-reference to {name} points at {what} deleted in the accepted state (shown as {:?})",
            f.kind(),
            f.result.trim()
        )
    })
}

/// Why a REF field that shows its target's clause number (`\r`, `\n`,
/// `\w`) shows the wrong one: its target renumbered by a deletion before
/// it while the field kept the old number.
fn stale_number(facts: &Facts<'_>, f: &Field) -> Option<String> {
    let numbered = f.kind() == "REF"
        && f.instruction
            .split_whitespace()
            .any(|w| matches!(w.to_ascii_lowercase().as_str(), "\\r" | "\\n" | "\\w"));
    let name = f.target().filter(|_| numbered)?;
    let (p, _) = facts.sections.paragraphs.get(bookmarked_paragraph(facts, name)?)?;
    let label = p.label_in(State::Accepted)?;
    let key = |s: &str| s.trim().trim_end_matches(['.', ':']).to_lowercase();
    let (shown, want) = (key(&f.result), key(label));
    // "\w" gives the full context ("7.4(b)") where the label is "(b)".
    let ends = |long: &str, short: &str| {
        long.strip_suffix(short).is_some_and(|head| !head.ends_with(|c: char| c.is_alphanumeric()))
    };
    (!(shown == want || ends(&shown, &want) || ends(&want, &shown))).then(|| {
        format!(
            "the cross-reference to {name} shows {:?}, but its target is now numbered {label}",
            f.result.trim()
        )
    })
}

/// The named bookmark exists and lies where the check says.
fn bookmark(facts: &Facts<'_>, name: &str, spec: &FieldsSpec) -> Result<(), String> {
    if !facts.doc.bookmarks.iter().any(|b| b.name == name) {
        return Err(format!("no bookmark named {name}"));
    }
    let Some(i) = bookmarked_paragraph(facts, name) else {
        return Err(format!("bookmark {name} is not in a body paragraph"));
    };
    if let Some(s) = &spec.target_section {
        let label = facts.sections.resolve(s)?;
        if !facts.sections.in_section(i, &label) {
            return Err(format!("bookmark {name} is not in section {s}"));
        }
    }
    if let Some(t) = &spec.target_text {
        let text =
            crate::view::plain::paragraph_text(facts.sections.paragraphs[i].0, State::Accepted);
        if !text.to_lowercase().contains(&t.to_lowercase()) {
            return Err(format!(
                "the paragraph of bookmark {name} reads {}, without {t:?}",
                preview(&text)
            ));
        }
    }
    Ok(())
}

/// A TOC's levels (`\o "1-3"`), default 1 to 9.
fn toc_levels(instruction: &str) -> (u8, u8) {
    let after = instruction.split("\\o").nth(1).unwrap_or("");
    let quoted = after.split('"').nth(1).unwrap_or("1-9");
    let (a, b) = quoted.split_once('-').unwrap_or(("1", "9"));
    (a.trim().parse().unwrap_or(1), b.trim().parse().unwrap_or(9))
}

/// A heading's level from its style id ("Heading2", "heading 2").
fn heading_level(style: &str) -> Option<u8> {
    let s = style.to_ascii_lowercase().replace(' ', "");
    s.strip_prefix("heading")?.parse().ok()
}

/// One entry's text: tabs as spaces, the page number dropped.
fn entry_text(line: &str) -> String {
    let line = line.trim_end();
    let cut = match line.rsplit_once('\t') {
        Some((before, page))
            if page.trim().chars().all(|c| c.is_ascii_alphanumeric()) && page.len() < 8 =>
        {
            before
        }
        _ => line,
    };
    normalise_ws(&cut.replace('\t', " "))
}

fn toc_matches(facts: &Facts<'_>, toc: &Field) -> Result<(), String> {
    let (lo, hi) = toc_levels(&toc.instruction);
    let entries: Vec<String> =
        toc.result.lines().map(entry_text).filter(|e| !e.is_empty()).collect();
    let mut headings = Vec::new();
    for (p, _) in &facts.sections.paragraphs {
        if !p.present(State::Accepted) {
            continue;
        }
        let level = p.props_in(State::Accepted).style.as_deref().and_then(heading_level);
        if level.is_some_and(|l| (lo..=hi).contains(&l)) {
            let label = p.label_in(State::Accepted).map(|l| format!("{l} ")).unwrap_or_default();
            let text = crate::view::plain::paragraph_text(p, State::Accepted);
            headings.push(normalise_ws(&format!("{label}{text}")));
        }
    }
    let key = |s: &str| s.to_lowercase();
    for (i, h) in headings.iter().enumerate() {
        match entries.get(i) {
            Some(e) if key(e) == key(h) => {}
            Some(e) => {
                return Err(format!(
                    "table of contents entry {} reads {}, the heading {}",
                    i + 1,
                    preview(e),
                    preview(h)
                ));
            }
            None => {
                return Err(format!(
                    "the table of contents lists {} entries; heading {} is missing from it",
                    entries.len(),
                    preview(h)
                ));
            }
        }
    }
    if entries.len() > headings.len() {
        return Err(format!(
            "the table of contents lists {}, which no heading reads",
            preview(&entries[headings.len()])
        ));
    }
    Ok(())
}
