//! `table`: a table of the body, after accepting the changes, against a
//! gold table or expected cells, and the tracked row and cell changes an
//! author made to it.

use super::text::{normalise_ws, preview};
use super::{Facts, Outcome, by, verdict};
use crate::docx::{Block, Document, Inline, Paragraph, State, Table, visit_paragraphs};
use crate::task::check_spec::{CellMatch, Count, PreparedCheck, TableSpec, cell_address};

/// The body's top-level tables, in order.
fn tables(doc: &Document) -> Vec<&Table> {
    doc.body
        .iter()
        .filter_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// A table's text in the accepted state: rows of cells.
pub(super) fn accepted_grid(t: &Table) -> Vec<Vec<String>> {
    t.rows
        .iter()
        .filter(|r| r.present(State::Accepted))
        .map(|r| {
            // Empty grid columns before the row's first cell (w:gridBefore)
            // keep "R2C3" on the column a reader sees as the third.
            let before = (0..r.grid_before).map(|_| String::new());
            let cells = r.cells.iter().filter(|c| c.present(State::Accepted)).map(|c| {
                let mut text = Vec::new();
                visit_paragraphs(&c.blocks, &mut |p: &Paragraph| {
                    if p.present(State::Accepted) {
                        text.push(crate::view::plain::paragraph_text(p, State::Accepted));
                    }
                });
                normalise_ws(&text.join(" "))
            });
            before.chain(cells).collect()
        })
        .collect()
}

/// The table the spec names in `doc` (`gold` picks `gold_index` first).
fn locate<'d>(
    facts: &Facts<'_>,
    doc: &'d Document,
    spec: &TableSpec,
    index: Option<usize>,
) -> Result<&'d Table, String> {
    let all = tables(doc);
    if let Some(i) = index {
        return all
            .get(i - 1)
            .copied()
            .ok_or_else(|| format!("the document has {} tables, not {i}", all.len()));
    }
    if let Some(h) = &spec.header {
        let want = h.to_lowercase();
        return all
            .iter()
            .find(|t| {
                accepted_grid(t)
                    .first()
                    .is_some_and(|row| row.join(" | ").to_lowercase().contains(&want))
            })
            .copied()
            .ok_or_else(|| format!("no table has a header row with {h:?}"));
    }
    if let Some(s) = &spec.section {
        let sections = if std::ptr::eq(doc, facts.doc) {
            None
        } else {
            Some(super::sections::Sections::of(doc))
        };
        let sections = sections.as_ref().unwrap_or(&facts.sections);
        let label = sections.resolve(s)?;
        for t in &all {
            let mut first: Option<*const Paragraph> = None;
            for row in &t.rows {
                for cell in &row.cells {
                    visit_paragraphs(&cell.blocks, &mut |p: &Paragraph| {
                        first.get_or_insert(p as *const Paragraph);
                    });
                }
            }
            let at = first
                .and_then(|f| sections.paragraphs.iter().position(|(p, _)| std::ptr::eq(*p, f)));
            if at.is_some_and(|i| sections.in_section(i, &label)) {
                return Ok(t);
            }
        }
        return Err(format!("no table in section {s}"));
    }
    Err("no table named".into())
}

/// A number read from a cell: currency signs, thousands separators and %
/// ignored ("£132,000.00" → 132000).
pub(super) fn number(s: &str) -> Option<f64> {
    let cleaned: String =
        s.chars().filter(|c| c.is_ascii_digit() || matches!(c, '.' | '-')).collect();
    if cleaned.is_empty() || !s.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    // Anything else left besides symbols and a word or two means it is text.
    let letters = s.chars().filter(|c| c.is_alphabetic()).count();
    (letters <= 3).then(|| cleaned.parse().ok()).flatten()
}

fn normalized(s: &str) -> String {
    normalise_ws(s).trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase()
}

/// Whether a cell matches the expected text under `how`.
pub(super) fn cells_match(got: &str, want: &str, how: CellMatch) -> bool {
    match how {
        CellMatch::Exact => normalise_ws(got) == normalise_ws(want),
        CellMatch::Normalized => normalized(got) == normalized(want),
        CellMatch::Numeric => match (number(got), number(want)) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0),
            _ => normalized(got) == normalized(want),
        },
    }
}

fn within(n: u32, c: &Count) -> bool {
    c.min.is_none_or(|m| n >= m) && c.max.is_none_or(|m| n <= m)
}

fn bounds(c: &Count) -> String {
    super::revisions::bounds(c.min, c.max)
}

pub(super) fn evaluate(facts: &Facts<'_>, check: &PreparedCheck, spec: &TableSpec) -> Outcome {
    let table = match locate(facts, facts.doc, spec, spec.index) {
        Ok(t) => t,
        Err(why) => return verdict(false, why),
    };
    let grid = accepted_grid(table);
    if let Some(gold) = &check.gold {
        let theirs = match locate(facts, gold, spec, spec.gold_index.or(spec.index)) {
            Ok(t) => accepted_grid(t),
            Err(why) => return verdict(false, format!("the gold: {why}")),
        };
        if let Err(why) = same_grid(&grid, &theirs, spec.compare) {
            return verdict(false, why);
        }
    }
    for (address, want) in &spec.cells {
        let Some((r, c)) = cell_address(address) else { continue };
        let got = grid.get(r - 1).and_then(|row| row.get(c - 1));
        match got {
            Some(g) if cells_match(g, want, spec.compare) => {}
            Some(g) => {
                return verdict(
                    false,
                    format!("cell {address} reads {}, not {}", preview(g), preview(want)),
                );
            }
            None => return verdict(false, format!("the table has no cell {address}")),
        }
    }
    let author = spec.author.as_deref().unwrap_or(facts.task_author);
    let counts = changes(facts.doc, table, author);
    for (name, n, want) in [
        ("rows inserted", counts.0, &spec.rows_inserted),
        ("rows deleted", counts.1, &spec.rows_deleted),
        ("cells changed", counts.2, &spec.cells_changed),
    ] {
        if let Some(c) = want
            && !within(n, c)
        {
            return verdict(false, format!("{n} {name} by {author} (wanted {})", bounds(c)));
        }
    }
    let compared = match (check.gold.is_some(), spec.cells.len()) {
        (true, _) => "matches the gold table".to_string(),
        (false, 0) => "is there".to_string(),
        (false, n) => format!("matches the {n} cells given"),
    };
    verdict(
        true,
        format!(
            "the table ({} rows) {compared}; by {author}: {} rows inserted, {} deleted, {} cells changed",
            grid.len(),
            counts.0,
            counts.1,
            counts.2
        ),
    )
}

fn same_grid(ours: &[Vec<String>], gold: &[Vec<String>], how: CellMatch) -> Result<(), String> {
    for (r, (a, b)) in ours.iter().zip(gold).enumerate() {
        if a.len() != b.len() {
            return Err(format!("row {} has {} cells, the gold's {}", r + 1, a.len(), b.len()));
        }
        for (c, (x, y)) in a.iter().zip(b).enumerate() {
            if !cells_match(x, y, how) {
                return Err(format!(
                    "row {} column {} reads {}, the gold {}",
                    r + 1,
                    c + 1,
                    preview(x),
                    preview(y)
                ));
            }
        }
    }
    if ours.len() != gold.len() {
        return Err(format!(
            "the table has {} rows after accepting the changes, the gold {}",
            ours.len(),
            gold.len()
        ));
    }
    Ok(())
}

/// (rows inserted, rows deleted, cells changed) by `author` in `table`.
fn changes(doc: &Document, table: &Table, author: &str) -> (u32, u32, u32) {
    let mine = |rev: Option<usize>| {
        rev.is_some_and(|r| {
            by(Some(author), doc.revisions.get(r).and_then(|x| x.author.as_deref()))
        })
    };
    let (mut ins, mut del, mut cells) = (0, 0, 0);
    for row in &table.rows {
        ins += u32::from(mine(row.inserted));
        del += u32::from(mine(row.deleted));
        if mine(row.inserted) || mine(row.deleted) {
            continue; // a whole row is one change, not one per cell
        }
        for cell in &row.cells {
            let mut changed = mine(cell.inserted) || mine(cell.deleted);
            visit_paragraphs(&cell.blocks, &mut |p: &Paragraph| {
                changed |= p
                    .inlines
                    .iter()
                    .any(|i| matches!(i, Inline::Text(s) if mine(s.inserted) || mine(s.deleted)));
            });
            cells += u32::from(changed);
        }
    }
    (ins, del, cells)
}
