//! `annotations`: stamps, highlights and notes — how many per page, their
//! text, colour and position, whether they cover page text, and which
//! text lines highlights cover (line-level F1 against given ranges).

use std::collections::BTreeSet;

use super::{chosen, page_list};
use crate::check::{Outcome, verdict};
use crate::pdf::{Annotation, AnnotationKind, Page, Pdf, Rect};
use crate::task::check_spec::{AnnotationSort, AnnotationsSpec, CompiledPdf, HighlightLines};

/// Whether `a` is a shown annotation of `kind` (a hidden one counts as
/// absent: viewers do not show it).
fn of_kind(a: &Annotation, kind: AnnotationSort) -> bool {
    !a.hidden
        && matches!(
            (&a.kind, kind),
            (AnnotationKind::Stamp { .. }, AnnotationSort::Stamp)
                | (AnnotationKind::Highlight { .. }, AnnotationSort::Highlight)
                | (AnnotationKind::Note, AnnotationSort::Note)
        )
}

/// What a regex reads of an annotation: what a stamp shows (its drawn
/// text and icon name — not its contents, which a reader sees only in a
/// pop-up); another's contents.
fn text_of(a: &Annotation) -> String {
    match &a.kind {
        AnnotationKind::Stamp { name, appearance_text } => {
            let mut parts = vec![appearance_text.clone()];
            parts.extend(name.clone());
            parts.join(" ")
        }
        _ => a.contents.clone().unwrap_or_default(),
    }
}

/// Whether `r`, shrunk by 1 pt, covers a glyph of the page's text.
fn over_text(page: &Page, r: &Rect) -> Option<String> {
    let inner = Rect { x0: r.x0 + 1.0, y0: r.y0 + 1.0, x1: r.x1 - 1.0, y1: r.y1 - 1.0 };
    let line = page.lines.iter().find(|l| {
        l.glyphs
            .iter()
            .filter_map(|i| page.glyphs.get(*i))
            .any(|g| !g.text.trim().is_empty() && g.rect.overlaps(&inner))
    })?;
    Some(line.text.clone())
}

pub(super) fn evaluate(pdf: &Pdf, spec: &AnnotationsSpec, c: &CompiledPdf) -> Outcome {
    let pages = match chosen(pdf, &spec.pages) {
        Ok(p) => p,
        Err(outcome) => return outcome,
    };
    let noun = format!("{:?}", spec.kind).to_lowercase();
    // With no bound and no line ranges, at least one per page is asked
    // for: a check an empty page passes would pass an output that did
    // nothing.
    let unbounded = spec.max_per_page.is_none() && spec.highlights.is_empty();
    let min = spec.min_per_page.or(unbounded.then_some(1));
    let mut total = 0;
    for page in &pages {
        let n = page.number;
        let found: Vec<&Annotation> =
            page.annotations.iter().filter(|a| of_kind(a, spec.kind)).collect();
        let count = found.len() as u32;
        if min.is_some_and(|m| count < m) || spec.max_per_page.is_some_and(|m| count > m) {
            let bounds = match (min, spec.max_per_page) {
                (Some(a), Some(b)) if a == b => format!("{a}"),
                (Some(a), Some(b)) => format!("{a}–{b}"),
                (Some(a), None) => format!("at least {a}"),
                (_, Some(b)) => format!("at most {b}"),
                _ => String::new(),
            };
            return verdict(false, format!("page {n} has {count} {noun}(s), expected {bounds}"));
        }
        for a in found {
            total += 1;
            if let Some(re) = c.regexes.first()
                && !re.is_match(&text_of(a))
            {
                return verdict(
                    false,
                    format!(
                        "page {n}: a {noun} reads {:?}, not matching /{}/",
                        text_of(a),
                        re.as_str()
                    ),
                );
            }
            if let Some(want) = &c.colour {
                match a.colour {
                    Some(got) if got.distance(want) <= 0.1 => {}
                    got => {
                        let got = got.map(|g| g.hex()).unwrap_or_else(|| "no colour".into());
                        return verdict(
                            false,
                            format!("page {n}: a {noun} is {got}, not {}", want.hex()),
                        );
                    }
                }
            }
            if let Some(region) = &spec.region {
                let area = region.on_page(page, spec.unit);
                if !area.contains(&a.rect, 1.0) {
                    return verdict(
                        false,
                        format!(
                            "page {n}: a {noun} at {} lies outside the region {}",
                            show(&a.rect),
                            show(&area)
                        ),
                    );
                }
            }
            if spec.not_over_text
                && let Some(line) = over_text(page, &a.rect)
            {
                return verdict(false, format!("page {n}: a {noun} covers the page text {line:?}"));
            }
        }
    }
    if !spec.highlights.is_empty() {
        return highlights(pdf, &spec.highlights, spec.min_f1.unwrap_or(1.0));
    }
    let numbers: Vec<u32> = pages.iter().map(|p| p.number).collect();
    verdict(true, format!("{total} {noun}(s) on {} as required", page_list(&numbers)))
}

fn show(r: &Rect) -> String {
    format!("[{:.0}, {:.0}, {:.0}, {:.0}]", r.x0, r.y0, r.x1, r.y1)
}

/// The lines (1-based, top to bottom) a page's highlights cover: a quad
/// overlapping a line across half its height.
fn highlighted(page: &Page) -> BTreeSet<u32> {
    let quads: Vec<Rect> = page
        .annotations
        .iter()
        .flat_map(|a| match &a.kind {
            AnnotationKind::Highlight { quads } if !quads.is_empty() => quads.clone(),
            AnnotationKind::Highlight { .. } => vec![a.rect],
            _ => Vec::new(),
        })
        .collect();
    page.lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            quads.iter().any(|q| {
                let overlap = (q.y1.min(l.rect.y1) - q.y0.max(l.rect.y0)).max(0.0);
                q.overlaps(&l.rect) && overlap >= 0.5 * l.rect.height()
            })
        })
        .map(|(i, _)| i as u32 + 1)
        .collect()
}

fn highlights(pdf: &Pdf, wanted: &[HighlightLines], min_f1: f64) -> Outcome {
    let (mut hit, mut got_total, mut want_total) = (0usize, 0usize, 0usize);
    let mut worst = String::new();
    let mut listed: BTreeSet<u32> = BTreeSet::new();
    for w in wanted {
        listed.insert(w.page);
        let Some(page) = pdf.pages.iter().find(|p| p.number == w.page) else {
            return verdict(false, format!("no page {} to find highlights on", w.page));
        };
        let want: BTreeSet<u32> = w.lines.iter().flat_map(|[a, b]| *a..=*b).collect();
        let got = highlighted(page);
        hit += want.intersection(&got).count();
        got_total += got.len();
        want_total += want.len();
        if got != want && worst.is_empty() {
            let fmt =
                |s: &BTreeSet<u32>| s.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
            worst = format!(
                "; page {}: lines {} highlighted, expected {}",
                w.page,
                fmt(&got),
                fmt(&want)
            );
        }
    }
    // Highlights on pages the ranges do not name count against precision.
    got_total += pdf
        .pages
        .iter()
        .filter(|p| !listed.contains(&p.number))
        .map(|p| highlighted(p).len())
        .sum::<usize>();
    let f1 = if got_total + want_total == 0 {
        1.0
    } else {
        2.0 * hit as f64 / (got_total + want_total) as f64
    };
    verdict(f1 >= min_f1 - 1e-9, format!("highlighted lines F1 {f1:.3} (at least {min_f1}){worst}"))
}
