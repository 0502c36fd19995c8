//! The checks that read a PDF output: Bates numbers, pages against the
//! inputs, bookmarks, linked tables of contents, annotations, text in a
//! region, and provenance.
//!
//! Owns: their evaluation over the reader's page model. Must never call a
//! judge, and every verdict comes with a one-line reason naming the page.

mod bates;
mod marks;
mod outline;
mod pages;
mod region;

use crate::pdf::{Glyph, Page, Pdf, Rect, TextLine};
use crate::task::check_spec::{CheckSpec, CompiledPdf, PreparedCheck};

use super::{Outcome, verdict};

/// Runs a task's checks on a PDF output; a check that reads a .docx or
/// an .xlsx fails with that reason.
pub fn evaluate_pdf(checks: &[&PreparedCheck], pdf: &Pdf) -> Vec<Outcome> {
    checks.iter().map(|c| evaluate_one(c, pdf)).collect()
}

fn evaluate_one(check: &PreparedCheck, pdf: &Pdf) -> Outcome {
    let empty = CompiledPdf::default();
    let c = check.pdf.as_deref().unwrap_or(&empty);
    match &check.spec {
        CheckSpec::Bates(s) => bates::evaluate(pdf, s, c),
        CheckSpec::Pages(s) => pages::evaluate(pdf, s, c),
        CheckSpec::Bookmarks(s) => outline::bookmarks(pdf, s, c),
        CheckSpec::Links(s) => outline::links(pdf, s, c),
        CheckSpec::Annotations(s) => marks::evaluate(pdf, s, c),
        CheckSpec::TextRegion(s) => region::text_region(pdf, s, c),
        CheckSpec::PdfProvenance(s) => region::provenance(pdf, s, c),
        CheckSpec::XlsxCells(_) => {
            verdict(false, "this check reads a spreadsheet, and the output is a PDF".into())
        }
        _ => verdict(false, "this check reads a .docx, and the output is a PDF".into()),
    }
}

/// The lines made by the glyphs whose centre lies in `rect`, top to
/// bottom, with the glyphs they index.
pub(crate) fn lines_in(page: &Page, rect: &Rect) -> (Vec<Glyph>, Vec<TextLine>) {
    let inside: Vec<Glyph> = page
        .glyphs
        .iter()
        .filter(|g| {
            let (cx, cy) = ((g.rect.x0 + g.rect.x1) / 2.0, (g.rect.y0 + g.rect.y1) / 2.0);
            cx >= rect.x0 && cx <= rect.x1 && cy >= rect.y0 && cy <= rect.y1
        })
        .cloned()
        .collect();
    let lines = crate::pdf::lines(&inside, page.rotation);
    (inside, lines)
}

/// Spaces collapsed, for comparing titles and texts.
pub(crate) fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// "pages 1–3, 5" from page numbers in order.
pub(crate) fn page_list(pages: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(&first) = pages.get(i) {
        let mut last = first;
        while pages.get(i + 1) == Some(&(last + 1)) {
            last += 1;
            i += 1;
        }
        parts.push(if first == last { first.to_string() } else { format!("{first}–{last}") });
        i += 1;
    }
    let noun = if pages.len() == 1 { "page" } else { "pages" };
    format!("{noun} {}", parts.join(", "))
}

/// The pages a check looks at: those listed (that exist), or all.
pub(crate) fn chosen<'p>(pdf: &'p Pdf, listed: &[u32]) -> Result<Vec<&'p Page>, Outcome> {
    if listed.is_empty() {
        return Ok(pdf.pages.iter().collect());
    }
    listed
        .iter()
        .map(|n| {
            pdf.pages.iter().find(|p| p.number == *n).ok_or_else(|| {
                verdict(
                    false,
                    format!("the output has {} pages; the check names page {n}", pdf.pages.len()),
                )
            })
        })
        .collect()
}

/// A glyph's text starts a word it shares with no other glyph run: the
/// sizes of the glyphs that make `text` in a line.
pub(crate) fn sizes_of(glyphs: &[Glyph], line: &TextLine) -> Vec<f64> {
    line.glyphs
        .iter()
        .filter_map(|i| glyphs.get(*i))
        .filter(|g| !g.text.trim().is_empty())
        .map(|g| g.size)
        .collect()
}

/// Whether every size is within the bounds, with 0.5 pt of rounding.
pub(crate) fn within(sizes: &[f64], min: Option<f64>, max: Option<f64>) -> Result<(), String> {
    for s in sizes {
        if min.is_some_and(|m| *s < m - 0.5) || max.is_some_and(|m| *s > m + 0.5) {
            let bounds = match (min, max) {
                (Some(a), Some(b)) => format!("{a}–{b} pt"),
                (Some(a), None) => format!("at least {a} pt"),
                (_, Some(b)) => format!("at most {b} pt"),
                _ => String::new(),
            };
            return Err(format!("set in {s:.1} pt, not {bounds}"));
        }
    }
    Ok(())
}
