//! `contains` / `not_contains`: a regex over inserted, deleted or accepted
//! text, in the body or in the stories named (headers, footers, notes,
//! comments, text boxes); a reason names the story and the text matched.
//! The text is searched as a person reads it unless the check asks for the
//! stored characters.

use super::sections::Sections;
use super::text::{normalise_ws, preview};
use super::{Expect, Facts, Outcome, by, verdict};
use crate::docx::{Document, Inline, State, StoryKind, visit_paragraphs};
use crate::task::check_spec::{Characters, HiddenText, Pattern, PreparedCheck, StoryName, Target};
use crate::view::characters::as_read;

pub(super) fn evaluate(
    facts: &Facts<'_>,
    check: &PreparedCheck,
    p: &Pattern,
    expect: Expect,
) -> Outcome {
    let section = match facts.section(p.section.as_deref()) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let section = section.as_deref();
    let stored;
    let (doc, sections) = match p.hidden {
        HiddenText::Included if !std::ptr::eq(facts.stored, facts.doc) => {
            stored = Sections::of(facts.stored);
            (facts.stored, &stored)
        }
        _ => (facts.doc, &facts.sections),
    };
    let stories = stories(&p.stories);
    // Each story searched on its own, so a match says where it was.
    let mut hays: Vec<(StoryName, String)> = Vec::new();
    for name in &stories {
        let text = match (name, p.target) {
            (StoryName::Body, Target::Accepted) => sections.accepted_text(section),
            (StoryName::Body, _) => {
                changed_text(doc, sections, p.target, section, p.author.as_deref())
            }
            _ => story_text(doc, *name, p.target, p.author.as_deref()),
        };
        // As read, and as stored too: a rubric's pattern written with a
        // character the reading folds (`m²`, a Cyrillic word) still
        // matches the text that holds it.
        if p.characters == Characters::AsRead {
            let read = normalise_ws(&as_read(&text));
            let stored = normalise_ws(&text);
            if read != stored {
                hays.push((*name, stored));
            }
            hays.push((*name, read));
        } else {
            hays.push((*name, normalise_ws(&text)));
        }
    }
    let found = check.regex.as_ref().and_then(|r| {
        hays.iter().find_map(|(name, hay)| r.find(hay).map(|m| (*name, hay.as_str(), m)))
    });
    let which = match p.target {
        Target::Inserted => "inserted",
        Target::Deleted => "deleted",
        Target::Accepted => "accepted",
    };
    let where_ = if p.stories.is_empty() {
        String::new()
    } else {
        let names: Vec<&str> = p.stories.iter().map(|s| story_label(*s)).collect();
        format!(" in {}", names.join(", "))
    };
    let place = format!(
        "{which} text{}{where_}",
        section.map(|s| format!(" of section {s}")).unwrap_or_default()
    );
    match found {
        Some((story, hay, m)) => verdict(
            expect == Expect::Match,
            format!(
                "{place} contains {} (in the {}: {})",
                preview(m.as_str()),
                story_label(story),
                preview(around(hay, m.start(), m.end()))
            ),
        ),
        None => verdict(expect == Expect::NoMatch, format!("{place} has no match for the pattern")),
    }
}

/// Up to 40 bytes of context either side of a match, on char boundaries.
fn around(hay: &str, start: usize, end: usize) -> &str {
    let mut a = start.saturating_sub(40);
    while !hay.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = (end + 40).min(hay.len());
    while !hay.is_char_boundary(b) {
        b += 1;
    }
    &hay[a..b]
}

fn story_label(s: StoryName) -> &'static str {
    match s {
        StoryName::Body => "body",
        StoryName::Headers => "headers",
        StoryName::Footers => "footers",
        StoryName::Footnotes => "footnotes",
        StoryName::Endnotes => "endnotes",
        StoryName::Comments => "comments",
        StoryName::TextBoxes => "text boxes",
        StoryName::All => "all stories",
    }
}

/// The stories asked for (the body by default; `all` is every one).
fn stories(asked: &[StoryName]) -> Vec<StoryName> {
    if asked.is_empty() {
        return vec![StoryName::Body];
    }
    if asked.contains(&StoryName::All) {
        return vec![
            StoryName::Body,
            StoryName::Headers,
            StoryName::Footers,
            StoryName::Footnotes,
            StoryName::Endnotes,
            StoryName::Comments,
            StoryName::TextBoxes,
        ];
    }
    asked.to_vec()
}

/// The text of one story besides the body, a paragraph per line.
fn story_text(doc: &Document, name: StoryName, target: Target, author: Option<&str>) -> String {
    let rev_author = |rev: usize| doc.revisions.get(rev).and_then(|r| r.author.as_deref());
    let mut out = String::new();
    if name == StoryName::Comments {
        if target == Target::Accepted {
            for c in doc.comments.iter().filter(|c| super::comment::shown(c)) {
                out.push_str(&c.text);
                out.push('\n');
            }
        }
        return out;
    }
    for story in &doc.stories {
        let kind = match story.kind {
            StoryKind::Header => StoryName::Headers,
            StoryKind::Footer => StoryName::Footers,
            StoryKind::Footnote => StoryName::Footnotes,
            StoryKind::Endnote => StoryName::Endnotes,
            StoryKind::TextBox => StoryName::TextBoxes,
        };
        if kind != name {
            continue;
        }
        visit_paragraphs(&story.blocks, &mut |p| {
            // The accepted text of every story is built as the body's is:
            // runs split by tracked changes join with no space between.
            let text = match target {
                Target::Accepted => crate::view::plain::paragraph_text(p, State::Accepted),
                Target::Inserted => spans(p, |s| {
                    s.deleted.is_none() && s.inserted.is_some_and(|r| by(author, rev_author(r)))
                }),
                Target::Deleted => {
                    spans(p, |s| s.deleted.is_some_and(|r| by(author, rev_author(r))))
                }
            };
            out.push_str(&text);
            out.push('\n');
        });
    }
    out
}

/// The text of a paragraph's spans that `keep` takes: spans side by side
/// join as they are (an insertion split into runs is one word), and a
/// space stands where text that is not taken came between.
fn spans(p: &crate::docx::Paragraph, keep: impl Fn(&crate::docx::Span) -> bool) -> String {
    let mut out = String::new();
    let mut gap = false;
    for inline in &p.inlines {
        let Inline::Text(s) = inline else { continue };
        if keep(s) {
            if gap && !out.is_empty() {
                out.push(' ');
            }
            out.push_str(&s.text);
            gap = false;
        } else if !s.text.is_empty() {
            gap = true;
        }
    }
    out
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
        out.push_str(&spans(p, |s| {
            let rev = match target {
                Target::Inserted if s.deleted.is_none() => s.inserted,
                Target::Deleted => s.deleted,
                _ => None,
            };
            rev.is_some_and(|rev| by(author, rev_author(rev)))
        }));
        out.push('\n');
    }
    out
}
