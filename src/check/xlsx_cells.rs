//! `xlsx_cells`: a spreadsheet output (a term sheet, a checklist) against
//! a key — cells compared exactly, normalised, numerically or as dates,
//! multi-value cells as sets; a list-like range's rows matched as a set
//! (recall); and the template's shape (sheets, header row, data
//! validation) intact.

use std::collections::BTreeSet;

use serde_json::Value;

use super::text::preview;
use super::{Outcome, verdict};
use crate::task::check_spec::{CellMatch, RowSet, TemplateSpec, XlsxMatch, XlsxSpec, range};
use crate::xlsx::{Cell, Sheet, Workbook, a1};

/// An expected value as text ("2026-01-31", "132000", "TRUE").
fn expected_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        Value::Number(n) => n.to_string(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Whether a cell matches an expected value.
fn matches(cell: Option<&Cell>, want: &Value, spec: &XlsxSpec) -> bool {
    let got = cell.map(Cell::text).unwrap_or_default();
    let want_text = expected_text(want);
    if let Some(sep) = &spec.separator {
        let set = |s: &str| -> BTreeSet<String> {
            s.split(sep.as_str())
                .map(|p| super::text::normalise_ws(p).to_lowercase())
                .filter(|p| !p.is_empty())
                .collect()
        };
        return set(&got) == set(&want_text);
    }
    // A date cell equals its ISO date whatever the comparison.
    if let Some(Cell::Date(d)) = cell
        && d.starts_with(want_text.trim())
        && !want_text.trim().is_empty()
    {
        return true;
    }
    match spec.compare {
        XlsxMatch::Exact => super::table::cells_match(&got, &want_text, CellMatch::Exact),
        XlsxMatch::Normalized => super::table::cells_match(&got, &want_text, CellMatch::Normalized),
        XlsxMatch::Date => match (calendar_day(&got), calendar_day(&want_text)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
        XlsxMatch::Numeric => {
            let number = |c: Option<&Cell>, s: &str| match c {
                Some(Cell::Number(n)) => Some(*n),
                Some(Cell::Duration(h)) => Some(*h),
                _ => super::table::number(s),
            };
            match (number(cell, &got), want.as_f64().or_else(|| number(None, &want_text))) {
                (Some(a), Some(b)) => {
                    let tol = spec.tolerance.unwrap_or(1e-9 * a.abs().max(b.abs()).max(1.0));
                    (a - b).abs() <= tol
                }
                _ => super::table::cells_match(&got, &want_text, CellMatch::Normalized),
            }
        }
    }
}

/// A written date as (year, month, day), or None when it is not one or
/// could be two ("03/04/2025"). Times after the date are ignored.
fn calendar_day(text: &str) -> Option<(i32, u32, u32)> {
    const MONTHS: [&str; 12] =
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    let month_named = |w: &str| {
        let w = w.trim_end_matches('.').to_lowercase();
        (w.len() >= 3).then_some(())?;
        MONTHS.iter().position(|m| w.starts_with(m)).map(|i| i as u32 + 1)
    };
    let valid = |y: i32, m: u32, d: u32| {
        let days = [
            31,
            if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        ((1..=12).contains(&m) && d >= 1 && d <= days[m as usize - 1]).then_some((y, m, d))
    };
    let date = text.trim().split(['T', ' ']).next().unwrap_or_default();
    let parts: Vec<&str> = date.split(['-', '/', '.']).collect();
    if let [a, b, c] = parts[..] {
        let n = |s: &str| s.parse::<u32>().ok();
        let (a, b, c) = (n(a)?, n(b)?, n(c)?);
        if a > 999 {
            return valid(a as i32, b, c);
        }
        let year = c as i32;
        return match (valid(year, b, a), valid(year, a, b)) {
            (Some(x), Some(y)) if x != y => None,
            (Some(x), _) | (None, Some(x)) => Some(x),
            (None, None) => None,
        };
    }
    let words: Vec<&str> =
        text.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
    let day = |w: &str| w.trim_end_matches(|c: char| c.is_ascii_alphabetic()).parse::<u32>().ok();
    match words[..] {
        [d, m, y, ..] if day(d).is_some() && month_named(m).is_some() => {
            valid(y.parse().ok()?, month_named(m)?, day(d)?)
        }
        [m, d, y, ..] if month_named(m).is_some() => {
            valid(y.parse().ok()?, month_named(m)?, day(d)?)
        }
        _ => None,
    }
}

fn sheet<'b>(book: &'b Workbook, name: Option<&str>) -> Result<&'b Sheet, String> {
    match name {
        None => book.sheets.first().ok_or_else(|| "the workbook has no sheet".to_string()),
        Some(n) => {
            book.sheets.iter().find(|s| s.name.trim().eq_ignore_ascii_case(n.trim())).ok_or_else(
                || {
                    let names: Vec<&str> = book.sheets.iter().map(|s| s.name.as_str()).collect();
                    format!("no sheet named {n:?} (sheets: {})", names.join(", "))
                },
            )
        }
    }
}

/// Runs the check on the workbook as a person sees it (hidden sheets left
/// out, cells holding what their number format shows), unless the spec
/// asks for the hidden sheets or the stored values.
pub(super) fn evaluate_seen(book: &Workbook, spec: &XlsxSpec) -> Outcome {
    use crate::task::check_spec::{CellValues, HiddenText};
    use crate::xlsx::{KeepHidden, ShownValues};
    let keep = match spec.hidden {
        HiddenText::Included => KeepHidden::Yes,
        HiddenText::Excluded => KeepHidden::No,
    };
    let values = match spec.values {
        CellValues::Shown => ShownValues::Shown,
        CellValues::Stored => ShownValues::Stored,
    };
    if keep == KeepHidden::No
        && let Some(name) = spec.sheet.as_deref()
        && let Some(hidden) = book.sheets.iter().find(|s| {
            s.name.trim().eq_ignore_ascii_case(name.trim())
                && s.state != crate::xlsx::SheetState::Visible
        })
    {
        return verdict(
            false,
            format!(
                "sheet {:?} is hidden: a person opening the workbook does not see it (\"hidden\": \"included\" reads it)",
                hidden.name
            ),
        );
    }
    // The template is the file's structure (a hidden sheet of lists
    // included), checked as stored.
    if let Some(t) = &spec.template
        && let Err(why) = template(book, spec.sheet.as_deref(), t)
    {
        return verdict(false, why);
    }
    evaluate(&book.as_seen(keep, values), spec)
}

fn evaluate(book: &Workbook, spec: &XlsxSpec) -> Outcome {
    let sheet = match sheet(book, spec.sheet.as_deref()) {
        Ok(s) => s,
        Err(why) => return verdict(false, why),
    };
    let mut reason = Vec::new();
    if !spec.cells.is_empty() {
        let mut wrong = Vec::new();
        for (address, want) in &spec.cells {
            let cell = a1(address).and_then(|(row, col)| sheet.value_at(row, col));
            if !matches(cell, want, spec) {
                wrong.push((
                    address,
                    cell.map(Cell::text).unwrap_or_default(),
                    expected_text(want),
                ));
            }
        }
        let n = spec.cells.len();
        let right = n - wrong.len();
        let share = right as f64 / n as f64;
        let need = spec.min_correct.unwrap_or(1.0);
        if share + 1e-12 < need {
            let (a, got, want) = &wrong[0];
            let needed = (need * n as f64 - 1e-9).ceil() as usize;
            return verdict(
                false,
                format!(
                    "{right} of {n} cells match the key (need {needed}); first: {a} reads {}, the key {}",
                    preview(got),
                    preview(want)
                ),
            );
        }
        reason.push(format!("{right} of {n} cells match the key"));
    }
    if let Some(rows) = &spec.rows {
        match row_recall(sheet, rows, spec) {
            Ok(r) => reason.push(r),
            Err(why) => return verdict(false, why),
        }
    }
    if spec.template.is_some() {
        reason.push("the template is intact".into());
    }
    verdict(true, reason.join("; "))
}

/// Share of expected rows found among the range's rows (each found once).
fn row_recall(sheet: &Sheet, rows: &RowSet, spec: &XlsxSpec) -> Result<String, String> {
    let Some(((r0, c0), (r1, c1))) = range(&rows.range) else {
        return Err(format!("bad range {}", rows.range));
    };
    // Walk the sheet's cells in the range, not the range's addresses: a
    // range of "A1:XFD1048576" costs what the sheet holds.
    let width = rows.expected.iter().map(Vec::len).max().unwrap_or(0).min((c1 - c0 + 1) as usize);
    let mut by_row: std::collections::BTreeMap<u32, Vec<Option<&Cell>>> = Default::default();
    for (&(r, c), cell) in sheet.cells.range((r0, c0)..=(r1, c1)) {
        let Some(at) = c.checked_sub(c0).map(|d| d as usize).filter(|&d| c <= c1 && d < width)
        else {
            continue;
        };
        by_row.entry(r).or_insert_with(|| vec![None; width])[at] = Some(cell);
    }
    let mut present: Vec<Vec<Option<&Cell>>> = by_row.into_values().collect();
    let mut found = 0;
    for want in &rows.expected {
        let hit = present.iter().position(|row| {
            want.iter().enumerate().all(|(i, w)| matches(row.get(i).copied().flatten(), w, spec))
        });
        if let Some(i) = hit {
            present.swap_remove(i);
            found += 1;
        }
    }
    let n = rows.expected.len().max(1);
    let recall = found as f64 / n as f64;
    let need = rows.min_recall.unwrap_or(1.0);
    let text = format!(
        "{found} of {} expected rows found in {} (recall {recall:.3})",
        rows.expected.len(),
        rows.range
    );
    if recall + 1e-12 < need { Err(format!("{text}, below {need}")) } else { Ok(text) }
}

fn template(book: &Workbook, sheet_name: Option<&str>, t: &TemplateSpec) -> Result<(), String> {
    for name in &t.sheets {
        if !book.sheets.iter().any(|s| s.name.trim().eq_ignore_ascii_case(name.trim())) {
            return Err(format!("the template's sheet {name:?} is missing"));
        }
    }
    let s = sheet(book, sheet_name)?;
    if !t.header.is_empty() {
        let row = t.header_row.unwrap_or(1);
        for (i, want) in t.header.iter().enumerate() {
            let got = s.cells.get(&(row, i as u32 + 1)).map(Cell::text).unwrap_or_default();
            if !super::table::cells_match(&got, want, CellMatch::Normalized) {
                return Err(format!(
                    "header row {row} column {} reads {}, the template {}",
                    i + 1,
                    preview(&got),
                    preview(want)
                ));
            }
        }
    }
    match t.data_validation {
        Some(true) if s.validations == 0 => {
            Err(format!("sheet {:?} lost its data validation", s.name))
        }
        Some(false) if s.validations > 0 => Err(format!("sheet {:?} has data validation", s.name)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::calendar_day;

    #[test]
    fn dates_are_read_however_written_but_never_guessed() {
        let jan31 = Some((2025, 1, 31));
        for written in [
            "2025-01-31",
            "2025-01-31T00:00:00",
            "31 January 2025",
            "31st Jan. 2025",
            "January 31, 2025",
            "Jan 31 2025",
            "31/01/2025",
            "01/31/2025",
            "31.01.2025",
        ] {
            assert_eq!(calendar_day(written), jan31, "{written}");
        }
        assert_eq!(calendar_day("03/04/2025"), None, "day-month order unknown");
        assert_eq!(calendar_day("04/04/2025"), Some((2025, 4, 4)), "both orders agree");
        assert_eq!(calendar_day("2025-02-29"), None);
        assert_eq!(calendar_day("2024-02-29"), Some((2024, 2, 29)));
        assert_eq!(calendar_day("36 months"), None);
        assert_eq!(calendar_day("Mayday 2025"), None);
    }
}
