//! `comment`: how many comments match an author, a section, a text, a
//! reply or resolved state; in thread mode, whether each thread has a
//! reply by an author and exactly the named threads are marked done.

use super::revisions::bounds;
use super::text::{in_form, normalise_ws};
use super::{Facts, Outcome, by, verdict};
use crate::docx::Comment;
use crate::task::check_spec::{Characters, CommentSpec, PreparedCheck};
use crate::view::characters::as_read;

/// Whether a person sees the comment: anchored somewhere in the document,
/// with text that is more than invisible characters and whitespace. A
/// comment or reply that is not shown counts for no check and no gate.
pub(crate) fn shown(c: &Comment) -> bool {
    c.anchored && !as_read(&c.text).trim().is_empty()
}

pub(super) fn evaluate(facts: &Facts<'_>, check: &PreparedCheck, spec: &CommentSpec) -> Outcome {
    if spec.threaded() {
        return threads(facts, check, spec);
    }
    let section = match facts.section(spec.section.as_deref()) {
        Ok(s) => s,
        Err(outcome) => return outcome,
    };
    let at = facts.sections.comment_paragraphs();
    let in_section = |id: &str| match section.as_deref() {
        None => true,
        Some(s) => at.get(id).is_some_and(|&i| facts.sections.in_section(i, s)),
    };
    let n = facts
        .doc
        .comments
        .iter()
        .filter(|c| shown(c))
        .filter(|c| by(spec.author.as_deref(), c.author.as_deref()) && in_section(&c.id))
        .filter(|c| {
            spec.contains.as_deref().is_none_or(|t| {
                let want = in_form(t, spec.characters).to_lowercase();
                in_form(&c.text, spec.characters).to_lowercase().contains(&want)
            })
        })
        .filter(|c| {
            spec.equals.as_deref().is_none_or(|t| {
                normalise_ws(&in_form(&c.text, spec.characters))
                    == normalise_ws(&in_form(t, spec.characters))
            })
        })
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

/// A thread: its first comment and every reply to it.
struct Thread<'d> {
    root: &'d Comment,
    replies: Vec<&'d Comment>,
}

impl Thread<'_> {
    /// What a regex names a thread by: its first comment's text and the
    /// text it is anchored to.
    fn text(&self, characters: Characters) -> String {
        in_form(&format!("{} {}", self.root.text, self.root.anchor), characters)
    }
}

fn all_threads<'d>(facts: &Facts<'d>) -> Vec<Thread<'d>> {
    let comments = &facts.doc.comments;
    let roots = crate::docx::thread_roots(comments);
    let mut slot = vec![usize::MAX; comments.len()];
    let mut threads: Vec<Thread<'d>> = Vec::new();
    // A reply whose parent is missing (or in a reply cycle) opens a thread
    // of its own rather than vanish from the check.
    for (i, c) in comments.iter().enumerate() {
        if roots.get(i) == Some(&i) {
            slot[i] = threads.len();
            threads.push(Thread { root: c, replies: Vec::new() });
        }
    }
    for (i, (c, &root)) in comments.iter().zip(&roots).enumerate() {
        if root != i
            && let Some(t) = slot.get(root).and_then(|&s| threads.get_mut(s))
        {
            t.replies.push(c);
        }
    }
    threads
}

/// Thread mode: a reply by an author on every thread checked, and the
/// threads marked done being exactly the ones named.
fn threads(facts: &Facts<'_>, check: &PreparedCheck, spec: &CommentSpec) -> Outcome {
    let all = all_threads(facts);
    let chosen: Vec<&Thread<'_>> = all
        .iter()
        .filter(|t| check.regex.as_ref().is_none_or(|r| r.is_match(&t.text(spec.characters))))
        .collect();
    let mut reason = Vec::new();
    if let Some(author) = &spec.replied_by {
        // A thread the author opened needs no reply from the author.
        let chosen: Vec<&&Thread<'_>> =
            chosen.iter().filter(|t| !by(Some(author), t.root.author.as_deref())).collect();
        let missing: Vec<&&&Thread<'_>> = chosen
            .iter()
            .filter(|t| {
                !t.replies.iter().any(|r| shown(r) && by(Some(author), r.author.as_deref()))
            })
            .collect();
        if let Some(first) = missing.first() {
            return verdict(
                false,
                format!(
                    "{} of {} threads opened by others have no reply by {author} (first: {})",
                    missing.len(),
                    chosen.len(),
                    super::text::preview(&first.root.text)
                ),
            );
        }
        reason.push(match chosen.len() {
            0 => format!("no thread opened by another author needs a reply by {author}"),
            n => format!("all {n} threads opened by others have a reply by {author}"),
        });
    }
    if let Some(patterns) = &spec.done_exactly {
        let mut named = std::collections::BTreeSet::new();
        for (pattern, re) in patterns.iter().zip(&check.regexes) {
            let hits: Vec<&String> = all
                .iter()
                .filter(|t| re.is_match(&t.text(spec.characters)))
                .map(|t| &t.root.id)
                .collect();
            if hits.len() != 1 {
                return verdict(
                    false,
                    format!("{pattern:?} names {} threads, not one", hits.len()),
                );
            }
            named.insert(hits[0].clone());
        }
        let done: std::collections::BTreeSet<String> =
            all.iter().filter(|t| t.root.resolved).map(|t| t.root.id.clone()).collect();
        if done != named {
            let extra = done.difference(&named).count();
            let open = named.difference(&done).count();
            return verdict(
                false,
                format!(
                    "{} threads are marked done: {extra} that should not be, {open} named ones still open",
                    done.len()
                ),
            );
        }
        reason.push(format!("exactly the {} named threads are marked done", named.len()));
    }
    verdict(true, reason.join("; "))
}
