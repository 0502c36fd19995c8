//! `scope`: every tracked change by the author lies in the named sections,
//! and (with an input) the accepted text outside them equals the input's.

use std::collections::HashSet;

use super::sections::Sections;
use super::text::{normalise_ws, preview};
use super::{Facts, Outcome, by, verdict};
use crate::docx::{self, State};

pub(super) fn evaluate(facts: &Facts<'_>, wanted: &[String], author: Option<&str>) -> Outcome {
    let author = author.unwrap_or(facts.task_author);
    let mut labels = Vec::with_capacity(wanted.len());
    for s in wanted {
        match facts.section(Some(s)) {
            Ok(Some(label)) => labels.push(label),
            Ok(None) => {}
            Err(outcome) => return outcome,
        }
    }
    let wanted = labels.as_slice();
    let places = places_of_changes(facts, author);
    let total = places.len();
    let outside: Vec<&Place> =
        places.iter().filter(|p| !p.inside(&facts.sections, wanted)).collect();
    let list = wanted.join(", ");
    if let Some(first) = outside.first() {
        let at = first.name(&facts.sections);
        return verdict(
            false,
            format!(
                "{} of {total} changes by {author} fall outside section(s) {list} (first at {at})",
                outside.len()
            ),
        );
    }
    let Some(input) = &facts.input else {
        return verdict(
            true,
            format!(
                "all {total} changes by {author} are in section(s) {list} (no input to compare the rest with)"
            ),
        );
    };
    let (ours, theirs) = (text_outside(&facts.sections, wanted), text_outside(input, wanted));
    if ours.join(" ") == theirs.join(" ") {
        return verdict(
            true,
            format!(
                "all {total} changes by {author} are in section(s) {list}; the text elsewhere is unchanged"
            ),
        );
    }
    let diff = ours.iter().zip(&theirs).find(|(x, y)| x != y).map(|(x, _)| preview(x));
    let diff = diff.unwrap_or_else(|| "paragraphs added or removed".into());
    verdict(
        false,
        format!("the accepted text outside section(s) {list} differs from the input: {diff}"),
    )
}

/// Where one tracked change is: a body paragraph, or another story.
enum Place {
    Paragraph(usize),
    OtherStory,
}

impl Place {
    fn inside(&self, sections: &Sections<'_>, wanted: &[String]) -> bool {
        match self {
            Place::Paragraph(i) => wanted.iter().any(|s| sections.in_section(*i, s)),
            Place::OtherStory => false,
        }
    }

    fn name(&self, sections: &Sections<'_>) -> String {
        match self {
            Place::Paragraph(i) => {
                let label = &sections.paragraphs[*i].0.label;
                label
                    .rejected
                    .clone()
                    .or(label.accepted.clone())
                    .unwrap_or_else(|| format!("paragraph {i}"))
            }
            Place::OtherStory => "a header, note or text box".into(),
        }
    }
}

/// The place of every tracked change by `author`. Revisions in headers,
/// notes and text boxes are outside every body section; revisions with no
/// text anywhere (a field code) have no place and are left out.
fn places_of_changes(facts: &Facts<'_>, author: &str) -> Vec<Place> {
    let at = facts.sections.revision_paragraphs(facts.doc);
    let mut in_stories = HashSet::new();
    for story in &facts.doc.stories {
        docx::visit_paragraphs(&story.blocks, &mut |p| in_stories.extend(p.revision_refs()));
    }
    let mut places = Vec::new();
    for (rev, r) in facts.doc.revisions.iter().enumerate() {
        if !by(Some(author), r.author.as_deref()) {
            continue;
        }
        match at.get(&rev) {
            Some(&i) => places.push(Place::Paragraph(i)),
            None if in_stories.contains(&rev) => places.push(Place::OtherStory),
            None => {}
        }
    }
    places
}

/// The accepted text of each paragraph outside the sections, normalised.
fn text_outside(sections: &Sections<'_>, wanted: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, (p, _)) in sections.paragraphs.iter().enumerate() {
        if !wanted.iter().any(|w| sections.in_section(i, w)) {
            let t = normalise_ws(&crate::view::plain::paragraph_text(p, State::Accepted));
            if !t.is_empty() {
                lines.push(t);
            }
        }
    }
    lines
}
