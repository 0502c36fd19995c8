//! The judges' view of a spreadsheet output: each sheet a Markdown table
//! with column letters and row numbers, so that rubrics can name cells.
//!
//! Owns: the layout of a workbook's view. Must never let a sheet name or a
//! cell's text make markup, a heading or a line the view did not make:
//! every text goes through the document view's own [`escape`], so a cell
//! can no more forge a tracked change (`~~old~~++new++{@Author}`) or a
//! `# SYSTEM:` line than a paragraph can.

use std::collections::BTreeSet;

use crate::view::annotated::escape;
use crate::xlsx::{Cell, Sheet, SheetState, Workbook, address, column_letters};

/// The workbook as Markdown tables, one per sheet. A sheet too sparse for
/// a grid (cells far apart) is listed one cell per line instead, so the
/// text stays linear in the cells.
pub(crate) fn render(book: &Workbook, title: &str) -> String {
    let mut out = format!("# Spreadsheet: {title}\n");
    for sheet in &book.sheets {
        let state = match sheet.state {
            SheetState::Visible => "",
            SheetState::Hidden => {
                " {hidden sheet: a person opening the workbook sees no tab for it}"
            }
            SheetState::VeryHidden => {
                " {very hidden sheet: Excel shows no tab for it and does not offer to unhide it}"
            }
        };
        out.push_str(&format!("\n## Sheet: {}{state}\n\n", escape(&sheet.name)));
        if sheet.cells.is_empty() {
            out.push_str("(empty)\n");
        } else if fits_a_grid(sheet) {
            grid(&mut out, sheet);
        } else {
            list(&mut out, sheet);
        }
        if !sheet.merged.is_empty() {
            let merged: Vec<String> = sheet.merged.iter().map(|m| escape(m)).collect();
            out.push_str(&format!("\nMerged: {}\n", merged.join(", ")));
        }
    }
    out
}

/// A cell as Excel shows it: its number format's text in place of the
/// number, when the format shows one, with the stored value named.
fn text(sheet: &Sheet, at: (u32, u32), c: &Cell) -> String {
    match sheet.shown.get(&at) {
        Some(shown) => format!(
            "{} {{shown by its number format; stored {}}}",
            escape(shown),
            escape(&c.text())
        ),
        None => escape(&c.text()),
    }
}

/// (first, last) of the columns and of the rows a sheet's cells span.
fn extent(sheet: &Sheet) -> ((u32, u32), (u32, u32)) {
    let columns: BTreeSet<u32> = sheet.cells.keys().map(|(_, c)| *c).collect();
    let rows: BTreeSet<u32> = sheet.cells.keys().map(|(r, _)| *r).collect();
    let span =
        |s: &BTreeSet<u32>| (s.first().copied().unwrap_or(1), s.last().copied().unwrap_or(0));
    (span(&columns), span(&rows))
}

fn fits_a_grid(sheet: &Sheet) -> bool {
    let ((first, last), (top, bottom)) = extent(sheet);
    let grid =
        u64::from(last.saturating_sub(first) + 1) * u64::from(bottom.saturating_sub(top) + 1);
    grid <= 4 * sheet.cells.len() as u64 + 1000
}

fn grid(out: &mut String, sheet: &Sheet) {
    let ((first, last), (top, bottom)) = extent(sheet);
    let letters: Vec<String> = (first..=last).map(column_letters).collect();
    out.push_str(&format!(
        "| | {} |\n|---|{}\n",
        letters.join(" | "),
        "---|".repeat(letters.len())
    ));
    for r in top..=bottom {
        let cells: Vec<String> = (first..=last)
            .map(|c| {
                sheet.cells.get(&(r, c)).map(|cell| text(sheet, (r, c), cell)).unwrap_or_default()
            })
            .collect();
        out.push_str(&format!("| {r} | {} |\n", cells.join(" | ")));
    }
}

/// One cell per line: a cell's text has no line break (escaped), so it
/// cannot pass for another cell.
fn list(out: &mut String, sheet: &Sheet) {
    for ((r, c), cell) in &sheet.cells {
        out.push_str(&format!("- {}: {}\n", address(*r, *c), text(sheet, (*r, *c), cell)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_is_a_grid_or_a_list_but_never_larger_than_the_cells() {
        let mut sheet = Sheet { name: "S".into(), ..Sheet::default() };
        sheet.cells.insert((1, 1), Cell::Text("Deal point".into()));
        sheet.cells.insert((2, 2), Cell::Number(132000.0));
        let book = Workbook { sheets: vec![sheet.clone()] };
        expect_test::expect![[r#"
            # Spreadsheet: t

            ## Sheet: S

            | | A | B |
            |---|---|---|
            | 1 | Deal point |  |
            | 2 |  | 132000 |
        "#]]
        .assert_eq(&render(&book, "t"));
        // Two cells a million rows and 16,000 columns apart.
        sheet.cells.insert((1_048_576, 16_384), Cell::Bool(true));
        expect_test::expect![[r#"
            # Spreadsheet: t

            ## Sheet: S

            - A1: Deal point
            - B2: 132000
            - XFD1048576: TRUE
        "#]]
        .assert_eq(&render(&Workbook { sheets: vec![sheet] }, "t"));
        let json = serde_json::to_value(&book).unwrap_or_default();
        assert_eq!(
            json["sheets"][0]["cells"]["B2"],
            serde_json::json!({"type": "number", "value": 132000.0})
        );
    }
}
