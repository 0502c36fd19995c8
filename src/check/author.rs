//! `author`: who made the tracked changes and comments.

use super::{Facts, Outcome, verdict};
use crate::check::gate::same_author;
use crate::task::check_spec::AuthorMode;

pub(super) fn evaluate(
    facts: &Facts<'_>,
    authors: &[String],
    mode: AuthorMode,
    include_comments: bool,
) -> Outcome {
    let doc = facts.doc;
    let mut names: Vec<Option<&str>> = doc.revisions.iter().map(|r| r.author.as_deref()).collect();
    if include_comments {
        names.extend(doc.comments.iter().map(|c| c.author.as_deref()));
    }
    let theirs = |n: &Option<&str>| n.is_some_and(|n| authors.iter().any(|a| same_author(a, n)));
    let mine = names.iter().filter(|n| theirs(n)).count();
    let mut others: Vec<String> = names
        .iter()
        .filter(|n| !theirs(n))
        .map(|n| n.unwrap_or("(no author)").to_string())
        .collect();
    others.sort();
    others.dedup();
    let who = authors.join(", ");
    match mode {
        AuthorMode::All => {
            let reason = if mine == 0 {
                format!("no tracked change or comment by {who}")
            } else if others.is_empty() {
                format!("all {mine} tracked changes and comments are by {who}")
            } else {
                format!("{} are by others: {}", names.len() - mine, others.join(", "))
            };
            verdict(mine > 0 && others.is_empty(), reason)
        }
        AuthorMode::Only => {
            let reason = if others.is_empty() {
                format!("none by anyone but {who}")
            } else {
                format!("changes or comments by others: {}", others.join(", "))
            };
            verdict(others.is_empty(), reason)
        }
        AuthorMode::Any => {
            verdict(mine > 0, format!("{mine} tracked change(s) or comment(s) by {who}"))
        }
    }
}
