//! The judges' view of a PDF output: each page's text in reading order,
//! headed by its number, label and any Bates number found, then the
//! bookmarks and the annotations with their pages.
//!
//! Owns: the layout of a PDF's view. Must never let a PDF's text make a
//! line or markup the view did not make: every text goes through the
//! document view's own [`escape`], each text line starts with the view's
//! own line id, and an id-like `[pg` in the text is escaped too.

use crate::pdf::{Annotation, AnnotationKind, LinkTarget, Page, Pdf};
use crate::view::annotated::escape;

/// What a Bates number looks like to the view: letters (and digits) then
/// at least five digits.
static BATES: std::sync::LazyLock<Option<regex::Regex>> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"\b([A-Z][A-Z0-9]*[-_ ]?\d{5,})\b").ok());

/// The Bates number found in the top or bottom 12% of the page as shown:
/// the last one.
fn bates(page: &Page) -> Option<String> {
    let re = BATES.as_ref()?;
    let (_, height) = page.shown_size();
    let band = 0.12 * height;
    let in_band = |r: crate::pdf::Rect| r.y1 <= band || r.y0 >= height - band;
    page.lines.iter().filter(|l| in_band(page.shown(&l.rect))).rev().find_map(|l| {
        re.captures_iter(&l.text).last().and_then(|c| Some(c.get(1)?.as_str().to_string()))
    })
}

/// PDF text for the view: the document text's escaping, and every `[`
/// escaped, so no text can open anything like the view's line ids
/// (`[pg1 l2]`, `[PG1 L2]`, or split by invisible characters).
fn text(s: &str) -> String {
    let pieces: Vec<String> = s.split('[').map(escape).collect();
    pieces.join("\\[")
}

/// The view of `pdf`, titled `title`.
pub(crate) fn render(pdf: &Pdf, title: &str) -> String {
    let annotations: usize = pdf.pages.iter().map(|p| p.annotations.len()).sum();
    let mut out = format!(
        "# PDF: {}\n\n{} page(s), {} bookmark(s), {annotations} annotation(s). Each text line is headed [pgN lM]: page N, line M from the top.\n",
        text(title),
        pdf.pages.len(),
        pdf.bookmarks.len()
    );
    for page in &pdf.pages {
        out.push_str(&format!("\n## Page {}", page.number));
        if let Some(label) = &page.label {
            out.push_str(&format!(" (label {})", text(label)));
        }
        if let Some(b) = bates(page) {
            out.push_str(&format!(" · Bates {}", text(&b)));
        }
        out.push_str("\n\n");
        let hidden = page.glyphs.iter().filter(|g| g.hidden).count();
        if hidden > 0 {
            out.push_str(&format!(
                "({hidden} glyph(s) drawn so that they do not show — invisible, transparent, off the page, painted over or in the colour beneath — are left out)\n"
            ));
        }
        if let Some(why) = &page.text_error {
            out.push_str(&format!("(text not extracted: {})\n", text(why)));
        } else if page.lines.is_empty() {
            out.push_str("(no text on this page)\n");
        }
        for (i, line) in page.lines.iter().enumerate() {
            out.push_str(&format!("[pg{} l{}] {}\n", page.number, i + 1, text(&line.text)));
        }
    }
    if !pdf.bookmarks.is_empty() {
        out.push_str("\n## Bookmarks\n\n");
        for b in &pdf.bookmarks {
            let indent = "  ".repeat(b.level.saturating_sub(1).min(8) as usize);
            out.push_str(&format!(
                "{indent}- {} → {}\n",
                text(&b.title),
                target(b.target.as_ref())
            ));
        }
    }
    if annotations > 0 {
        out.push_str("\n## Annotations\n\n");
        for page in &pdf.pages {
            for a in &page.annotations {
                out.push_str(&format!("- page {}: {}\n", page.number, annotation(page, a)));
            }
        }
    }
    out
}

fn target(t: Option<&LinkTarget>) -> String {
    match t {
        Some(LinkTarget::Page { page }) => format!("page {page}"),
        Some(LinkTarget::Uri { uri }) => format!("web address {}", text(uri)),
        Some(LinkTarget::Remote { file, page }) => {
            let at = page.map(|p| format!(", page {p}")).unwrap_or_default();
            format!("file {}{at}", text(file))
        }
        Some(LinkTarget::Unresolved { what }) => format!("nowhere ({})", text(what)),
        None => "nowhere".into(),
    }
}

fn annotation(page: &Page, a: &Annotation) -> String {
    let r = &a.rect;
    let at = format!("at [{:.0}, {:.0}, {:.0}, {:.0}]", r.x0, r.y0, r.x1, r.y1);
    let contents =
        a.contents.as_deref().map(|c| format!(", contents \"{}\"", text(c))).unwrap_or_default();
    let colour = a.colour.map(|c| format!(", colour {}", c.hex())).unwrap_or_default();
    let what = match &a.kind {
        AnnotationKind::Link { target: t } => {
            let covered: Vec<&str> =
                page.lines.iter().filter(|l| l.rect.overlaps(r)).map(|l| l.text.as_str()).collect();
            format!("link to {} {at}, over \"{}\"", target(Some(t)), text(&covered.join(" / ")))
        }
        AnnotationKind::Stamp { name, appearance_text } => {
            let name = name.as_deref().map(|n| format!(" ({})", text(n))).unwrap_or_default();
            format!("stamp \"{}\"{name} {at}", text(appearance_text))
        }
        AnnotationKind::Highlight { quads } => {
            let lines: Vec<String> = page
                .lines
                .iter()
                .enumerate()
                .filter(|(_, l)| quads.iter().any(|q| q.overlaps(&l.rect)))
                .map(|(i, _)| format!("l{}", i + 1))
                .collect();
            format!(
                "highlight over {} {at}",
                if lines.is_empty() { "no text line".into() } else { lines.join(", ") }
            )
        }
        AnnotationKind::Note => format!("note {at}"),
        AnnotationKind::FreeText => format!("text box {at}"),
        AnnotationKind::Other { subtype } => format!("{} annotation {at}", text(subtype)),
    };
    let hidden = if a.hidden { " (hidden: viewers do not show it)" } else { "" };
    format!("{what}{colour}{contents}{hidden}")
}
