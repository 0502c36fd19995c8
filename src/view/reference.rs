//! The reference view: what RedlineBench's judges read, without redjury's
//! extensions — `[p-NNN]` paragraph ids, `~~deleted~~` / `++inserted++`
//! (`~~old~~++new++` for a replacement), `{cmt-N}` anchors and the comments
//! listed at the bottom by id; no authors, no list labels, no moves,
//! formatting or property changes, no revision summary.
//!
//! Owns: that grammar, for re-judging a run with a judge input equivalent
//! to the reference's (`--prompts prompts/reference`). Must never emit
//! document text that could read as markup (the same escaping as the
//! annotated view).

use std::fmt::Write;

use super::annotated::escape;
use crate::docx::{Block, Document, Inline, Paragraph};

/// Renders the reference view.
pub(crate) fn render(doc: &Document, title: &str) -> String {
    let mut out = format!("# {}\n\n", escape(title));
    for block in &doc.body {
        match block {
            Block::Paragraph(p) => {
                let Some(i) = p.body_index else { continue };
                let line = paragraph(p);
                if !line.trim().is_empty() {
                    let _ = writeln!(out, "[p-{i:03}] {line}");
                }
            }
            Block::Table(t) => {
                for row in &t.rows {
                    let cells: Vec<String> = row
                        .cells
                        .iter()
                        .map(|c| {
                            c.blocks
                                .iter()
                                .filter_map(|b| match b {
                                    Block::Paragraph(p) => Some(paragraph(p)),
                                    Block::Table(_) => None,
                                })
                                .collect::<Vec<_>>()
                                .join(" ")
                        })
                        .collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
            }
        }
    }
    if !doc.comments.is_empty() {
        out.push_str("\n## Comments\n\n");
        for c in &doc.comments {
            let _ = writeln!(out, "{{cmt-{}}}: {}", escape(&c.id), escape(&c.text));
        }
    }
    out
}

fn paragraph(p: &Paragraph) -> String {
    let mut line = String::new();
    for inline in &p.inlines {
        match inline {
            Inline::Text(s) => {
                let text = escape(&s.text);
                match (s.inserted, s.deleted) {
                    (_, Some(_)) => {
                        let _ = write!(line, "~~{text}~~");
                    }
                    (Some(_), None) => {
                        let _ = write!(line, "++{text}++");
                    }
                    (None, None) => line.push_str(&text),
                }
            }
            Inline::CommentEnd { id } | Inline::CommentRef { id }
                if !line.contains(&format!("{{cmt-{}}}", escape(id))) =>
            {
                let _ = write!(line, "{{cmt-{}}}", escape(id));
            }
            _ => {}
        }
    }
    line.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docx::{Comment, Span};

    #[test]
    fn markup_without_authors_or_labels() {
        let mut p = Paragraph { body_index: Some(3), ..Default::default() };
        p.label.accepted = Some("7.2".into());
        p.inlines = vec![
            Inline::Text(Span { text: "Cap: ".into(), ..Default::default() }),
            Inline::Text(Span { text: "100%".into(), deleted: Some(0), ..Default::default() }),
            Inline::Text(Span { text: "150%".into(), inserted: Some(1), ..Default::default() }),
            Inline::CommentEnd { id: "2".into() },
        ];
        let mut doc = Document::default();
        doc.body = vec![Block::Paragraph(p)];
        doc.comments = vec![Comment {
            id: "2".into(),
            author: Some("Buyer".into()),
            initials: None,
            date: None,
            text: "Too low.".into(),
            anchor: String::new(),
            parent: None,
            resolved: false,
            anchored: true,
            last_para_id: None,
        }];
        let v = render(&doc, "t");
        assert_eq!(
            v,
            "# t\n\n[p-003] Cap: ~~100%~~++150%++{cmt-2}\n\n## Comments\n\n{cmt-2}: Too low.\n"
        );
    }
}
