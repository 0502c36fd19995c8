//! Sections of a document, addressed by list label ("9", "7.3", "8.1(a)")
//! as numbered with every tracked change rejected: the document as it stood
//! before this round of changes — or by the heading or title of a numbered
//! paragraph ("Termination", "Schedule B – Fees"), ignoring case and
//! spacing. A section includes its subsections.

use std::collections::HashMap;

use crate::docx::{Block, Document, Inline, Paragraph, State};

/// Every body paragraph in order (tables included) with the sections it
/// belongs to.
pub(crate) struct Sections<'d> {
    /// Each body paragraph with the section addresses it lies in.
    pub paragraphs: Vec<(&'d Paragraph, Vec<String>)>,
}

/// Whether `s` reads as a list label ("9", "7.3", "8.1(a)", "(b)", "iv")
/// rather than a one-word title ("Termination").
fn looks_like_label(s: &str) -> bool {
    let s = s.trim().trim_end_matches('.');
    s.contains(|c: char| c.is_ascii_digit())
        || s.starts_with('(')
        || s.chars().count() <= 2
        || (s.len() <= 6 && s.chars().all(|c| "ivxlcdmIVXLCDM".contains(c)))
}

/// "9." and "9" address the same section; case is ignored.
pub(crate) fn normalise_section(s: &str) -> String {
    s.trim().trim_end_matches('.').to_lowercase()
}

impl<'d> Sections<'d> {
    /// Maps `doc`'s body paragraphs to their sections.
    pub(crate) fn of(doc: &'d Document) -> Sections<'d> {
        // (list definition, level, label): a label replaces the entries of
        // its own list at its level or deeper; a label from another list
        // (a separately defined "(a)" list inside clause 9) nests.
        let mut stack: Vec<(Option<String>, u8, String)> = Vec::new();
        let mut paragraphs = Vec::new();
        doc.for_each_body_paragraph(&mut |p| {
            // Bullets are list items, not sections: they never address one.
            if let Some(label) =
                p.label.rejected.as_ref().filter(|l| l.chars().any(char::is_alphanumeric))
            {
                let level = p.label.level.unwrap_or(0);
                if let Some(i) =
                    stack.iter().position(|(list, l, _)| *list == p.label.list && *l >= level)
                {
                    stack.truncate(i);
                }
                stack.push((p.label.list.clone(), level, normalise_section(label)));
            }
            paragraphs.push((p, addresses(&stack)));
        });
        Sections { paragraphs }
    }

    /// Whether paragraph `i` lies in `section`.
    pub(crate) fn in_section(&self, i: usize, section: &str) -> bool {
        let want = normalise_section(section);
        self.paragraphs[i].1.contains(&want)
    }

    /// Whether any paragraph lies in `section`.
    pub(crate) fn known(&self, section: &str) -> bool {
        let want = normalise_section(section);
        self.paragraphs.iter().any(|(_, a)| a.contains(&want))
    }

    /// The section `s` names: a label ("9.2") as it is, or a heading or
    /// title ("Limitation of Liability", "Schedule B – Fees") matched case-
    /// and space-insensitively against the text of each labelled
    /// paragraph (with or without its label). `Err` says why, naming the
    /// candidates.
    pub(crate) fn resolve(&self, s: &str) -> Result<String, String> {
        if self.known(s) {
            return Ok(normalise_section(s));
        }
        let want = heading_key(s);
        let (mut found, all) = self.titled(&want);
        match found.len() {
            1 => Ok(found.swap_remove(0).0),
            0 if looks_like_label(s) => {
                Err(format!("section {s} is not in the document's numbering"))
            }
            0 => {
                let mut close: Vec<&String> = all
                    .iter()
                    .filter(|h| {
                        let k = heading_key(h);
                        want.split(' ').any(|w| w.len() > 3 && k.contains(w))
                    })
                    .take(5)
                    .collect();
                if close.is_empty() {
                    close = all.iter().take(5).collect();
                }
                let close: Vec<String> =
                    close.iter().map(|c| format!("{:?}", text_preview(c))).collect();
                Err(format!(
                    "no section is labelled or titled {s:?}; sections include {}",
                    close.join(", ")
                ))
            }
            _ => Err(format!(
                "{s:?} names {} sections: {}; use the label",
                found.len(),
                found
                    .iter()
                    .map(|(a, t)| format!("{a} ({:?})", text_preview(t)))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The labelled paragraphs whose text (with or without its label) is
    /// `want` (a heading key): (address, text). And every short heading,
    /// as candidates to name.
    fn titled(&self, want: &str) -> (Vec<(String, String)>, Vec<String>) {
        let mut found: Vec<(String, String)> = Vec::new();
        let mut all: Vec<String> = Vec::new();
        for (p, addresses) in &self.paragraphs {
            let Some(label) =
                p.label.rejected.as_ref().filter(|l| l.chars().any(char::is_alphanumeric))
            else {
                continue;
            };
            let text = crate::view::plain::paragraph_text(p, State::Rejected);
            let title = heading_key(&text);
            let with_label = heading_key(&format!("{label} {text}"));
            // Headings (short titles) are the candidates worth naming.
            if text.trim().chars().count() <= 60 {
                all.push(format!("{label} {}", text.trim()));
            }
            if want == title || want == with_label {
                let address = addresses.last().cloned().unwrap_or_else(|| normalise_section(label));
                if !found.iter().any(|(a, _)| *a == address) {
                    found.push((address, text.trim().to_string()));
                }
            }
        }
        (found, all)
    }

    /// Whether `s` is a label this document lacks and no heading has: a
    /// clause an output may add.
    pub(crate) fn label_to_come(&self, s: &str) -> bool {
        looks_like_label(s) && !self.known(s) && self.titled(&heading_key(s)).0.is_empty()
    }

    /// The paragraph index each revision is found in; row and cell
    /// revisions are placed at their row's first paragraph.
    pub(crate) fn revision_paragraphs(&self, doc: &Document) -> HashMap<usize, usize> {
        let mut at = HashMap::new();
        let index: HashMap<*const Paragraph, usize> = self
            .paragraphs
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (*p as *const Paragraph, i))
            .collect();
        for (i, (p, _)) in self.paragraphs.iter().enumerate() {
            for rev in p.revision_refs() {
                at.entry(rev).or_insert(i);
            }
        }
        for block in &doc.body {
            let Block::Table(t) = block else { continue };
            let mut table_first = None;
            for row in &t.rows {
                let first = row.cells.iter().flat_map(|c| c.blocks.iter()).find_map(|b| match b {
                    Block::Paragraph(p) => index.get(&(p as *const Paragraph)).copied(),
                    _ => None,
                });
                let Some(first) = first else { continue };
                table_first.get_or_insert(first);
                let cells = row.cells.iter().flat_map(|c| {
                    [c.inserted, c.deleted]
                        .into_iter()
                        .flatten()
                        .chain(c.format_changes.iter().copied())
                });
                let own = [row.inserted, row.deleted]
                    .into_iter()
                    .flatten()
                    .chain(row.format_changes.iter().copied());
                for rev in own.chain(cells) {
                    at.entry(rev).or_insert(first);
                }
            }
            // Table-wide changes belong where the table starts.
            if let Some(first) = table_first {
                for &rev in &t.format_changes {
                    at.entry(rev).or_insert(first);
                }
            }
        }
        at
    }

    /// The paragraph index where each comment is anchored.
    pub(crate) fn comment_paragraphs(&self) -> HashMap<String, usize> {
        let mut at = HashMap::new();
        for (i, (p, _)) in self.paragraphs.iter().enumerate() {
            for inline in &p.inlines {
                if let Inline::CommentStart { id } | Inline::CommentRef { id } = inline {
                    at.entry(id.clone()).or_insert(i);
                }
            }
        }
        at
    }

    /// Accepted text of the paragraphs in `section` (all, if `None`).
    pub(crate) fn accepted_text(&self, section: Option<&str>) -> String {
        let mut out = Vec::new();
        for (i, (p, _)) in self.paragraphs.iter().enumerate() {
            if section.is_none_or(|s| self.in_section(i, s)) {
                let text = crate::view::plain::paragraph_text(p, State::Accepted);
                if !text.trim().is_empty() {
                    out.push(text);
                }
            }
        }
        out.join("\n")
    }
}

/// A heading as compared: lower case, one space, one kind of dash, no
/// trailing punctuation.
fn heading_key(s: &str) -> String {
    let unified: String =
        s.chars().map(|c| if matches!(c, '–' | '—' | '‐' | '‑' | '−') { '-' } else { c }).collect();
    unified
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches(['.', ':', ';', ','])
        .to_lowercase()
}

fn text_preview(s: &str) -> String {
    let t: String = s.trim().chars().take(60).collect();
    t
}

/// A paragraph is in every section on the stack, addressed by a label
/// ("8.1", "(a)") or a run of them ("8.1(a)").
fn addresses(stack: &[(Option<String>, u8, String)]) -> Vec<String> {
    let mut addresses = Vec::new();
    for i in 0..stack.len() {
        let mut joined = String::new();
        for (_, _, label) in &stack[i..] {
            joined.push_str(label);
            addresses.push(joined.clone());
        }
    }
    addresses
}
