//! Comments and their threads: `word/comments.xml`, `commentsExtended.xml`
//! (replies and resolved state) and `people.xml`.
//!
//! Owns: threading (a reply's `w15:paraIdParent` names the `w14:paraId` of
//! its parent's LAST paragraph) and the inheritance of resolved state by
//! replies. Must never guess a thread from dates or order.

use std::collections::{HashMap, HashSet};

use super::DocxError;
use super::model::{Comment, Inline, Person, State, visit_paragraphs};
use super::story::{Ctx, Mode, parse_blocks};
use super::xml::{Ev, Ns, PartReader, attr, local};

pub(crate) fn parse_comments(
    ctx: &mut Ctx,
    part: &str,
    xml: &str,
) -> Result<Vec<Comment>, DocxError> {
    let mut reader = PartReader::new(part, xml);
    let mut out: Vec<Comment> = Vec::new();
    let mut ids: HashSet<String> = HashSet::new();
    loop {
        match reader.next()? {
            Ev::Start(Ns::W, e) if local(&e) == "comment" => {
                let id = attr(&e, "id").unwrap_or_default();
                let author = attr(&e, "author").filter(|a| !a.trim().is_empty());
                let initials = attr(&e, "initials").filter(|a| !a.trim().is_empty());
                let date = attr(&e, "date").filter(|a| !a.trim().is_empty());
                let blocks = parse_blocks(ctx, &mut reader, Mode::Other)?;
                let mut lines = Vec::new();
                let mut last_para_id = None;
                visit_paragraphs(&blocks, &mut |p| {
                    let mut line = String::new();
                    for inline in &p.inlines {
                        if let Inline::Text(span) = inline
                            && span.present(State::Accepted)
                        {
                            line.push_str(&span.text);
                        }
                    }
                    lines.push(line);
                    last_para_id = p.para_id.clone();
                });
                if !ids.insert(id.clone()) {
                    return Err(DocxError::DuplicateComment { id });
                }
                out.push(Comment {
                    id,
                    author,
                    initials,
                    date,
                    text: lines.join("\n").trim().to_string(),
                    anchor: String::new(),
                    parent: None,
                    resolved: false,
                    anchored: false,
                    last_para_id,
                });
            }
            Ev::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// Applies `commentsExtended.xml`: parents and done flags, then inherits
/// resolved state down each thread.
pub(crate) fn apply_extended(
    comments: &mut [Comment],
    part: &str,
    xml: &str,
    warnings: &mut Vec<String>,
) -> Result<(), DocxError> {
    let by_para: HashMap<String, usize> = comments
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.last_para_id.clone().map(|p| (p, i)))
        .collect();
    let mut reader = PartReader::new(part, xml);
    let mut done = vec![false; comments.len()];
    loop {
        match reader.next()? {
            Ev::Start(_, e) | Ev::Empty(_, e) if local(&e) == "commentEx" => {
                let Some(para) = attr(&e, "paraId") else { continue };
                let Some(&i) = by_para.get(&para) else {
                    warnings.push(format!(
                        "{part}: commentEx {para} matches no comment's last paragraph; ignored"
                    ));
                    continue;
                };
                // Looked up before `comments` is borrowed mutably below.
                let parent = attr(&e, "paraIdParent").map(|parent_para| {
                    let id = by_para
                        .get(&parent_para)
                        .filter(|&&p| p != i)
                        .and_then(|&p| comments.get(p))
                        .map(|c| c.id.clone());
                    (parent_para, id)
                });
                // `by_para` indexes `comments`, and `done` is as long.
                let (Some(comment), Some(is_done)) = (comments.get_mut(i), done.get_mut(i)) else {
                    continue;
                };
                match parent {
                    Some((_, Some(id))) => comment.parent = Some(id),
                    Some((parent_para, None)) => warnings.push(format!(
                        "{part}: comment {} replies to paragraph {parent_para}, which ends no comment; shown as a top-level comment",
                        comment.id
                    )),
                    None => {}
                }
                *is_done = attr(&e, "done").is_some_and(|d| d == "1" || d == "true");
            }
            Ev::Eof => break,
            _ => {}
        }
    }
    // Resolved: done itself, or any ancestor done.
    let is_done = |i: usize| done.get(i).copied().unwrap_or(false);
    let resolved = fold_threads(comments, is_done, |up, i| up || is_done(i));
    for (c, r) in comments.iter_mut().zip(resolved) {
        c.resolved = r;
    }
    Ok(())
}

/// Each comment's thread root: its own index for a first comment, its
/// first ancestor's for a reply. A reply to a comment that is not there is
/// its own root; in a cycle of replies (hostile input) the root is one
/// comment of the cycle.
pub fn thread_roots(comments: &[Comment]) -> Vec<usize> {
    fold_threads(comments, |i| i, |root, _| root)
}

/// A value per comment computed down each reply chain: `top` for a comment
/// without a parent, `step(parent's value, i)` for a reply. Each comment is
/// visited a bounded number of times however long or cyclic the chains, so
/// a file of a million chained replies costs a million steps, not a
/// million squared.
fn fold_threads<T: Copy>(
    comments: &[Comment],
    top: impl Fn(usize) -> T,
    step: impl Fn(T, usize) -> T,
) -> Vec<T> {
    let index: HashMap<&str, usize> =
        comments.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
    let parent = |i: usize| {
        comments.get(i)?.parent.as_deref().and_then(|p| index.get(p).copied()).filter(|&p| p != i)
    };
    let mut value: Vec<Option<T>> = vec![None; comments.len()];
    let mut on_path = vec![false; comments.len()];
    let mut path = Vec::new();
    for start in 0..comments.len() {
        let mut at = start;
        let mut above = None;
        loop {
            if let Some(&Some(v)) = value.get(at) {
                above = Some(v);
                break;
            }
            match on_path.get_mut(at) {
                Some(seen) if !*seen => *seen = true,
                _ => break, // a cycle: the walk's last comment stands for its top
            }
            path.push(at);
            match parent(at) {
                Some(p) => at = p,
                None => break,
            }
        }
        for &i in path.iter().rev() {
            let v = match above {
                Some(up) => step(up, i),
                None => top(i),
            };
            if let Some(slot) = value.get_mut(i) {
                *slot = Some(v);
            }
            above = Some(v);
            if let Some(seen) = on_path.get_mut(i) {
                *seen = false;
            }
        }
        path.clear();
    }
    value.into_iter().enumerate().map(|(i, v)| v.unwrap_or_else(|| top(i))).collect()
}

pub(crate) fn parse_people(part: &str, xml: &str) -> Result<Vec<Person>, DocxError> {
    let mut reader = PartReader::new(part, xml);
    let mut out = Vec::new();
    let mut current: Option<Person> = None;
    loop {
        match reader.next()? {
            Ev::Start(_, e) | Ev::Empty(_, e) => match local(&e) {
                "person" => {
                    if let Some(p) = current.take() {
                        out.push(p);
                    }
                    if let Some(author) = attr(&e, "author") {
                        current = Some(Person { author, provider: None });
                    }
                }
                "presenceInfo" => {
                    if let Some(p) = current.as_mut() {
                        p.provider = attr(&e, "providerId");
                    }
                }
                _ => {}
            },
            Ev::Eof => break,
            _ => {}
        }
    }
    if let Some(p) = current.take() {
        out.push(p);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::indexing_slicing)]
    use super::*;

    fn comment(id: usize, parent: Option<usize>) -> Comment {
        Comment {
            id: id.to_string(),
            author: None,
            initials: None,
            date: None,
            text: String::new(),
            anchor: String::new(),
            parent: parent.map(|p| p.to_string()),
            resolved: false,
            anchored: true,
            last_para_id: None,
        }
    }

    #[test]
    fn a_long_reply_chain_has_one_root_and_inherits_done_from_any_ancestor() {
        // 200,000 chained replies: a walk to the top from each would take
        // 2·10^10 steps; the fold takes one pass.
        let n = 200_000;
        let comments: Vec<Comment> = (0..n).map(|i| comment(i, i.checked_sub(1))).collect();
        let roots = thread_roots(&comments);
        assert!(roots.iter().all(|&r| r == 0));
        let done: Vec<bool> = (0..n).map(|i| i == 1000).collect();
        let resolved = fold_threads(&comments, |i| done[i], |up, i| up || done[i]);
        assert!(!resolved[999] && resolved[1000] && resolved[n - 1]);
    }

    #[test]
    fn reply_cycles_and_missing_parents_end() {
        // 0 ← 1 ← 2 ← 0 (a cycle), 3 replies to a comment that is not there,
        // 4 replies to itself.
        let mut comments = vec![comment(0, Some(2)), comment(1, Some(0)), comment(2, Some(1))];
        comments.push(Comment { parent: Some("99".into()), ..comment(3, None) });
        comments.push(comment(4, Some(4)));
        let roots = thread_roots(&comments);
        let cycle_root = roots[0];
        assert!(cycle_root <= 2 && roots[1] == cycle_root && roots[2] == cycle_root);
        assert_eq!(&roots[3..], &[3, 4]);
    }
}
