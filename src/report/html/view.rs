//! The annotated view (what a judge read) as an HTML document: insertions
//! and deletions in each author's colour with the author named, moves and
//! formatting changes marked, comments in the margin beside the paragraph
//! that anchors them, paragraph ids and clause numbers kept.
//!
//! Owns: reading the view's markup (docs/annotated-view.md) back into
//! spans. Must never let document text through unescaped: every character
//! of the view that is not markup goes through [`escape`], and markup only
//! ever produces the fixed set of tags written here.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::escape;

/// One piece of a line.
#[derive(Debug, Clone, PartialEq)]
enum Span {
    Text(String),
    Inserted(Vec<Span>, Option<String>),
    Deleted(Vec<Span>, Option<String>),
    /// `{@…}` on its own: a formatting or property change.
    Note(String),
    /// `{cmt-N}`: where comment N's range ends.
    Anchor(String),
}

/// Builds an insertion or a deletion from its children and tag.
type MakeSpan = fn(Vec<Span>, Option<String>) -> Span;

/// Parses the markup of one line (or part of one) up to `stop`.
fn parse(s: &str, stop: Option<&str>) -> (Vec<Span>, usize) {
    let mut out: Vec<Span> = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    let flush = |text: &mut String, out: &mut Vec<Span>| {
        if !text.is_empty() {
            out.push(Span::Text(std::mem::take(text)));
        }
    };
    while i < s.len() {
        let rest = &s[i..];
        if let Some(stop) = stop
            && rest.starts_with(stop)
        {
            flush(&mut text, &mut out);
            return (out, i + stop.len());
        }
        if let Some(escaped) = rest.strip_prefix('\\')
            && let Some(c) = escaped.chars().next()
        {
            text.push(c);
            i += 1 + c.len_utf8();
            continue;
        }
        let marks: [(&str, MakeSpan); 2] = [("++", Span::Inserted), ("~~", Span::Deleted)];
        if let Some((mark, make)) = marks.iter().find(|(m, _)| rest.starts_with(m)) {
            flush(&mut text, &mut out);
            let (children, used) = parse(&rest[mark.len()..], Some(mark));
            i += mark.len() + used;
            let tag = tag_at(&s[i..]);
            if let Some((t, len)) = &tag {
                i += len;
                // A replacement's one tag names the deletion's author too.
                if *mark == "++"
                    && let Some(Span::Deleted(_, who @ None)) = out.last_mut()
                {
                    *who = Some(t.clone());
                }
            }
            out.push(make(children, tag.map(|(t, _)| t)));
            continue;
        }
        if let Some((t, len)) = tag_at(rest) {
            flush(&mut text, &mut out);
            out.push(Span::Note(t));
            i += len;
            continue;
        }
        if let Some(after) = rest.strip_prefix("{cmt-")
            && let Some(end) = after.find('}')
        {
            flush(&mut text, &mut out);
            out.push(Span::Anchor(after[..end].to_string()));
            i += 5 + end + 1;
            continue;
        }
        // Plain text up to the next character that may open markup, at once.
        let first = rest.chars().next().map_or(1, char::len_utf8);
        let run = rest[first..].find(['\\', '+', '~', '{']).map_or(rest.len(), |n| n + first);
        text.push_str(&rest[..run]);
        i += run;
    }
    flush(&mut text, &mut out);
    (out, s.len())
}

/// A `{@…}` tag at the start of `s`: its text and length.
fn tag_at(s: &str) -> Option<(String, usize)> {
    let body = s.strip_prefix("{@")?;
    let mut text = String::new();
    let mut chars = body.char_indices();
    while let Some((j, c)) = chars.next() {
        match c {
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    text.push(n);
                }
            }
            '}' => return Some((text, 2 + j + 1)),
            _ => text.push(c),
        }
    }
    None
}

/// The author a tag names ("Vendor Counsel moved from m1" → "Vendor Counsel").
fn author_of(tag: &str) -> &str {
    let cut = [", earlier round", " moved ", " changed ", " deleted ", " inserted "]
        .iter()
        .filter_map(|m| tag.find(m))
        .min()
        .unwrap_or(tag.len());
    tag[..cut].trim()
}

/// Authors in order of first appearance: each gets a colour.
#[derive(Default)]
struct Palette(Vec<String>);

impl Palette {
    fn class(&mut self, author: &str) -> usize {
        match self.0.iter().position(|a| a == author) {
            Some(i) => i % 8,
            None => {
                self.0.push(author.to_string());
                (self.0.len() - 1) % 8
            }
        }
    }
}

fn render(spans: &[Span], palette: &mut Palette, out: &mut String) {
    for span in spans {
        match span {
            Span::Text(t) => out.push_str(&escape(t)),
            Span::Inserted(children, tag) | Span::Deleted(children, tag) => {
                let inserted = matches!(span, Span::Inserted(..));
                let (el, verb) = if inserted { ("ins", "inserted") } else { ("del", "deleted") };
                let tag = tag.as_deref().unwrap_or("unknown author");
                let k = palette.class(author_of(tag));
                let moved = if tag.contains(" moved ") { " moved" } else { "" };
                let earlier = if tag.contains("earlier round") { " earlier" } else { "" };
                let _ = write!(
                    out,
                    r#"<{el} class="a{k}{moved}{earlier}" title="{verb}: {}">"#,
                    escape(tag)
                );
                render(children, palette, out);
                let _ = write!(out, r#"</{el}><span class="who a{k}">{}</span>"#, escape(tag));
            }
            Span::Note(t) => {
                let k = palette.class(author_of(t));
                let _ =
                    write!(out, r#"<span class="note a{k}" title="{0}">✎ {0}</span>"#, escape(t));
            }
            Span::Anchor(id) => {
                let _ = write!(
                    out,
                    r##"<sup class="anchor"><a href="#c-{0}">c{0}</a></sup>"##,
                    escape(id)
                );
            }
        }
    }
}

fn anchors(spans: &[Span], into: &mut Vec<String>) {
    for s in spans {
        match s {
            Span::Anchor(id) => into.push(id.clone()),
            Span::Inserted(c, _) | Span::Deleted(c, _) => anchors(c, into),
            _ => {}
        }
    }
}

/// `[p-12]`, `[t1.r2]`, `[t3]`: a line's id and the rest.
fn split_id(line: &str) -> Option<(&str, &str)> {
    let body = line.strip_prefix('[')?;
    let end = body.find(']')?;
    let id = &body[..end];
    let ok = id.starts_with("p-")
        || id.starts_with('t')
        || id.starts_with("fn-")
        || id.starts_with("en-");
    ok.then(|| (id, body[end + 1..].trim_start()))
}

/// The annotated view `text` as HTML.
pub(crate) fn to_html(text: &str) -> String {
    let mut palette = Palette::default();
    let comments = comment_map(text, &mut palette);
    let mut out = String::from(r#"<div class="doc">"#);
    let mut section = "";
    let mut table_open = false;
    let mut summary_open = false;
    for line in text.lines() {
        let is_row =
            split_id(line).is_some_and(|(id, rest)| id.contains(".r") && rest.starts_with('|'));
        if table_open && !is_row {
            out.push_str("</table>");
            table_open = false;
        }
        if section == "summary" && !line.starts_with('|') && summary_open {
            out.push_str("</tbody></table>");
            summary_open = false;
        }
        if let Some(h) = line.strip_prefix("## ") {
            section = if h.starts_with("Comments") {
                "comments"
            } else if h.starts_with("Revision summary") {
                "summary"
            } else {
                "other"
            };
            if section != "comments" {
                let _ = write!(out, "<h3>{}</h3>", escape(h));
            }
            continue;
        }
        if let Some(h) = line.strip_prefix("# ") {
            let _ = write!(out, "<h2>{}</h2>", escape(h));
            continue;
        }
        if line.trim().is_empty() || section == "comments" {
            continue;
        }
        if section == "summary" {
            summary_row(line, &mut out, &mut summary_open);
            continue;
        }
        let (spans, _) = parse(line, None);
        let mut here = Vec::new();
        anchors(&spans, &mut here);
        let margin: String =
            here.iter().filter_map(|id| comments.get(id)).map(String::as_str).collect();
        match split_id(line) {
            Some((id, rest)) if is_row => {
                if !table_open {
                    out.push_str(r#"<table class="doc-table">"#);
                    table_open = true;
                }
                let _ =
                    write!(out, r#"<tr id="v-{}"><th class="pid">{}</th>"#, escape(id), escape(id));
                for cell in split_cells(rest) {
                    let (cell_spans, _) = parse(cell, None);
                    out.push_str("<td>");
                    render(&cell_spans, &mut palette, &mut out);
                    out.push_str("</td>");
                }
                let _ = write!(out, r#"<td class="margin">{margin}</td></tr>"#);
            }
            Some((id, rest)) => {
                let (rest_spans, _) = parse(rest, None);
                let _ = write!(
                    out,
                    r#"<div class="para"><span class="pid">[{}]</span><div class="text">"#,
                    escape(id)
                );
                render(&rest_spans, &mut palette, &mut out);
                close_para(&margin, &mut out);
            }
            None => {
                out.push_str(r#"<div class="para"><span class="pid"></span><div class="text">"#);
                render(&spans, &mut palette, &mut out);
                close_para(&margin, &mut out);
            }
        }
    }
    if table_open {
        out.push_str("</table>");
    }
    if summary_open {
        out.push_str("</tbody></table>");
    }
    legend(&palette, &mut out);
    out.push_str("</div>");
    out
}

/// Ends a paragraph, with its comments in the margin when it anchors any
/// (most paragraphs anchor none: no empty margin is written for them).
fn close_para(margin: &str, out: &mut String) {
    out.push_str("</div>");
    if !margin.is_empty() {
        let _ = write!(out, r#"<aside class="margin">{margin}</aside>"#);
    }
    out.push_str("</div>");
}

/// The cells of a table row `| a | b |`, splitting on unescaped bars.
fn split_cells(row: &str) -> Vec<&str> {
    let inner = row.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in inner.char_indices() {
        match (c, escaped) {
            ('\\', false) => escaped = true,
            ('|', false) => {
                cells.push(inner[start..i].trim());
                start = i + 1;
            }
            _ => escaped = false,
        }
    }
    cells.push(inner[start..].trim());
    cells
}

/// One line of the revision summary: its table (the header row opens
/// it) or a line of text. It was a row of bare spans that read as one run
/// of words.
fn summary_row(line: &str, out: &mut String, open: &mut bool) {
    if line.starts_with("|---") {
        return;
    }
    if !line.starts_with('|') {
        let _ = write!(out, "<p>{}</p>", escape(line));
        return;
    }
    let cells = split_cells(line);
    if !*open {
        out.push_str(r#"<table class="revision-summary"><thead><tr>"#);
        for cell in cells {
            let _ = write!(out, r#"<th scope="col">{}</th>"#, escape(cell));
        }
        out.push_str("</tr></thead><tbody>");
        *open = true;
        return;
    }
    out.push_str("<tr>");
    for (i, cell) in cells.into_iter().enumerate() {
        let class = if i == 0 { "" } else { r#" class="num""# };
        let _ = write!(out, "<td{class}>{}</td>", escape(cell));
    }
    out.push_str("</tr>");
}

/// The Comments appendix: id → the comment as margin HTML.
fn comment_map(text: &str, palette: &mut Palette) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            inside = h.starts_with("Comments");
            continue;
        }
        let trimmed = line.trim_start();
        let reply = trimmed.len() < line.len();
        if !inside {
            continue;
        }
        let Some(after) = trimmed.strip_prefix("{cmt-") else { continue };
        let Some(end) = after.find('}') else { continue };
        let id = after[..end].to_string();
        let body = after[end + 1..].trim_start();
        let author = body.strip_prefix('@').and_then(|b| b.split(',').next()).unwrap_or("");
        let k = palette.class(author.trim());
        let (spans, _) = parse(body, None);
        let mut html = format!(
            r#"<div class="comment a{k}{}" id="c-{}"><b>c{}</b> "#,
            if reply { " reply" } else { "" },
            escape(&id),
            escape(&id)
        );
        render(&spans, palette, &mut html);
        html.push_str("</div>");
        out.entry(id).or_insert_with(String::new).push_str(&html);
    }
    out
}

fn legend(palette: &Palette, out: &mut String) {
    if palette.0.is_empty() {
        return;
    }
    out.push_str(r#"<p class="legend">Authors: "#);
    for (i, a) in palette.0.iter().enumerate() {
        let _ = write!(out, r#"<span class="who a{}">{}</span> "#, i % 8, escape(a));
    }
    out.push_str(r#" · <ins>inserted</ins> <del>deleted</del> <ins class="moved">moved</ins> <span class="note">✎ formatting or properties</span></p>"#);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_authors_and_comments() {
        let view = "# Annotated redline: t\n\n[p-001] 4.2 Fees{cmt-1} ~~annually~~++quarterly++{@Vendor Counsel} and ~~++x++{@A}~~{@B}.\n\n## Comments\n\n{cmt-1} @Customer Counsel, 2025-03-10, on \"Fees\": too high\n";
        let html = to_html(view);
        assert!(
            html.contains(r#"<del class="a1" title="deleted: Vendor Counsel">annually</del>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<ins class="a1" title="inserted: Vendor Counsel">quarterly</ins>"#),
            "{html}"
        );
        assert!(
            html.contains(
                r#"<del class="a2" title="deleted: B"><ins class="a3" title="inserted: A">x</ins>"#
            ),
            "{html}"
        );
        assert!(html.contains(r#"<aside class="margin"><div class="comment a0" id="c-1"><b>c1</b> @Customer Counsel"#), "{html}");
        assert!(html.contains("[p-001]</span>") && html.contains("4.2 Fees"));
    }

    #[test]
    fn escaped_markup_stays_text_and_html_is_escaped() {
        let html = to_html(
            "[p-000] a \\+\\+not inserted\\+\\+ <script>alert(1)</script> & \"q\" \\{@fake\\}",
        );
        assert!(html.contains("++not inserted++"), "{html}");
        assert!(!html.contains("<ins"));
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot; {@fake}"),
            "{html}"
        );
    }

    #[test]
    fn table_rows_moves_and_notes() {
        let html = to_html(
            "[t1.r1] | a | ++b++{@A moved from m1} |\n[t1.r2] | c\\|d | e{@A changed formatting: bold} |\n[p-002] after",
        );
        assert!(html.contains(r#"<table class="doc-table"><tr id="v-t1.r1">"#), "{html}");
        assert!(
            html.contains(r#"<ins class="a0 moved" title="inserted: A moved from m1">b</ins>"#),
            "{html}"
        );
        assert!(html.contains("<td>c|d</td>"), "{html}");
        assert!(
            html.contains(r#"<span class="note a0" title="A changed formatting: bold">"#),
            "{html}"
        );
        assert!(html.contains("</table><div class=\"para\"><span class=\"pid\">[p-002]"), "{html}");
    }
}
