//! Accepted and rejected views: the document's plain text as it would read
//! after accepting (or rejecting) every revision.
//!
//! Owns: paragraph merging when a paragraph mark is deleted (accepted) or
//! inserted (rejected), and the one-line-per-paragraph layout. Must never
//! show comments, and never let a table row swallow a neighbouring paragraph.

use crate::docx::{Block, Document, Inline, Paragraph, Row, State};

#[cfg(test)]
mod corpus_oracle;

/// Whether lines carry their list labels.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Labels {
    Shown,
    #[cfg(test)]
    Hidden,
}

/// The body's lines in `state`: one paragraph per line, list label as a
/// prefix, a table row as its cells joined by " | ".
pub(crate) fn lines(doc: &Document, state: State) -> Vec<String> {
    let mut out = Vec::new();
    push_blocks_with(&doc.body, state, Labels::Shown, &mut out);
    out
}

/// [`lines`] joined with newlines.
pub(crate) fn render(doc: &Document, state: State) -> String {
    let mut text = lines(doc, state).join("\n");
    text.push('\n');
    text
}

/// Text of one paragraph's inlines in `state`, without its label.
pub(crate) fn paragraph_text(p: &Paragraph, state: State) -> String {
    let mut text = String::new();
    for inline in &p.inlines {
        match inline {
            Inline::Text(span) if span.present(state) => text.push_str(&span.text),
            Inline::NoteRef { mark, inserted, deleted, .. } => {
                let present = match state {
                    State::Accepted => deleted.is_none(),
                    State::Rejected => inserted.is_none(),
                };
                if present {
                    text.push_str(mark);
                }
            }
            _ => {}
        }
    }
    text.replace('\n', " ")
}

fn push_blocks_with(blocks: &[Block], state: State, labels: Labels, out: &mut Vec<String>) {
    // Text of paragraphs whose mark vanished in this state: it joins the next
    // paragraph of the same container.
    let mut carry: Option<String> = None;
    for block in blocks {
        match block {
            Block::Paragraph(p) => {
                let mut text = carry.take().unwrap_or_default();
                text.push_str(&paragraph_text(p, state));
                if p.mark_present(state) && !p.drop_cap {
                    out.push(if labels == Labels::Shown {
                        with_label(p.label_in(state), text)
                    } else {
                        text
                    });
                } else {
                    carry = Some(text);
                }
            }
            Block::Table(table) => {
                if let Some(text) = carry.take()
                    && !text.is_empty()
                {
                    out.push(text);
                }
                for row in table.rows.iter().filter(|r| r.present(state)) {
                    out.push(row_text(row, state, labels));
                }
            }
        }
    }
    if let Some(text) = carry
        && !text.trim().is_empty()
    {
        out.push(text);
    }
}

/// A row's cells joined by " | ", with the empty grid columns Word leaves
/// before and after them (`w:gridBefore`, `w:gridAfter`), so that columns
/// line up with the other rows.
fn row_text(row: &Row, state: State, labels: Labels) -> String {
    let cells = row.cells.iter().filter(|c| c.present(state) && !c.merged_continue).map(|c| {
        let mut inner = Vec::new();
        push_blocks_with(&c.blocks, state, labels, &mut inner);
        inner.join(" ").trim().to_string()
    });
    let before = std::iter::repeat_n(String::new(), row.grid_before as usize);
    let after = std::iter::repeat_n(String::new(), row.grid_after as usize);
    before.chain(cells).chain(after).collect::<Vec<_>>().join(" | ")
}

fn with_label(label: Option<&str>, text: String) -> String {
    match label {
        Some(label) if text.is_empty() => label.to_string(),
        Some(label) => format!("{label} {text}"),
        None => text,
    }
}

/// [`lines`] without list labels (for comparisons where labels are checked
/// separately: the LibreOffice oracle).
#[cfg(test)]
fn lines_without_labels(doc: &Document, state: State) -> Vec<String> {
    let mut out = Vec::new();
    push_blocks_with(&doc.body, state, Labels::Hidden, &mut out);
    out
}
