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
                if let Some(parent_para) = attr(&e, "paraIdParent") {
                    match by_para.get(&parent_para) {
                        Some(&p) if p != i => comments[i].parent = Some(comments[p].id.clone()),
                        _ => warnings.push(format!(
                            "{part}: comment {} replies to paragraph {parent_para}, which ends no comment; shown as a top-level comment",
                            comments[i].id
                        )),
                    }
                }
                done[i] = attr(&e, "done").is_some_and(|d| d == "1" || d == "true");
            }
            Ev::Eof => break,
            _ => {}
        }
    }
    // Resolved: done itself, or any ancestor done (threads are shallow; the
    // walk is bounded so a cycle in hostile input cannot loop).
    let index: HashMap<String, usize> =
        comments.iter().enumerate().map(|(i, c)| (c.id.clone(), i)).collect();
    for i in 0..comments.len() {
        let mut resolved = done[i];
        let mut cursor = comments[i].parent.clone();
        let mut steps = 0;
        while let (false, Some(p)) = (resolved, cursor) {
            steps += 1;
            if steps > comments.len() {
                break;
            }
            let Some(&j) = index.get(&p) else { break };
            resolved = done[j];
            cursor = comments[j].parent.clone();
        }
        comments[i].resolved = resolved;
    }
    Ok(())
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
