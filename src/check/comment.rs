//! `comment`: how many comments match an author, a section, a text, a
//! reply or resolved state.

use super::revisions::bounds;
use super::text::normalise_ws;
use super::{Facts, Outcome, by, unknown_section, verdict};
use crate::task::check_spec::CommentSpec;

pub(super) fn evaluate(facts: &Facts<'_>, spec: &CommentSpec) -> Outcome {
    if let Some(s) = spec.section.as_deref().filter(|s| !facts.sections.known(s)) {
        return unknown_section(s);
    }
    let at = facts.sections.comment_paragraphs();
    let in_section = |id: &str| match spec.section.as_deref() {
        None => true,
        Some(s) => at.get(id).is_some_and(|&i| facts.sections.in_section(i, s)),
    };
    let n = facts
        .doc
        .comments
        .iter()
        .filter(|c| by(spec.author.as_deref(), c.author.as_deref()) && in_section(&c.id))
        .filter(|c| {
            spec.contains
                .as_deref()
                .is_none_or(|t| c.text.to_lowercase().contains(&t.to_lowercase()))
        })
        .filter(|c| spec.equals.as_deref().is_none_or(|t| normalise_ws(&c.text) == normalise_ws(t)))
        .filter(|c| spec.reply.is_none_or(|r| c.parent.is_some() == r))
        .filter(|c| spec.resolved.is_none_or(|r| c.resolved == r))
        .count() as u32;
    let lo = spec.min.unwrap_or(1);
    let ok = n >= lo && spec.max.is_none_or(|m| n <= m);
    verdict(
        ok,
        format!("{n} comment(s) {} (wanted {})", describe(spec), bounds(Some(lo), spec.max)),
    )
}

/// "by A, in section 9, containing "x"": what the comments must be.
fn describe(spec: &CommentSpec) -> String {
    let mut what = vec![];
    if let Some(a) = &spec.author {
        what.push(format!("by {a}"));
    }
    if let Some(s) = &spec.section {
        what.push(format!("in section {s}"));
    }
    if let Some(t) = &spec.contains {
        what.push(format!("containing \"{t}\""));
    }
    if let Some(t) = &spec.equals {
        what.push(format!("reading \"{t}\""));
    }
    if let Some(r) = spec.reply {
        what.push(if r { "replies".into() } else { "not replies".into() });
    }
    if let Some(r) = spec.resolved {
        what.push(if r { "resolved".into() } else { "unresolved".into() });
    }
    what.join(", ")
}
