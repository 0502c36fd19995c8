//! `pages`: the output's pages are the inputs' pages in the stated order,
//! matched by content (a page stamped by adding a stream still matches
//! its original; a page re-rendered does not), with only the inserted
//! pages the task allows.

use super::page_list;
use crate::check::{Outcome, verdict};
use crate::pdf::{Page, Pdf};
use crate::task::check_spec::{CompiledPdf, PagesSpec};

/// Whether `out` shows the page `src`: the same content, every stream of
/// `src` in order inside `out` (a stream added over or under), or all
/// `src` draws as one unit of `out` (the page made a form under an
/// overlay, or one stream with its stamp), with every text line of `src`.
/// Its text must read as `src`'s too: the hashes cover what is drawn,
/// not the fonts that map codes to letters, so a font swapped to show
/// other digits is caught by the text.
fn same_page(out: &Page, src: &Page) -> bool {
    let n = src.stream_hashes.len();
    let drawn = out.content_hash == src.content_hash
        || (n > 0 && out.stream_hashes.windows(n).any(|w| w == src.stream_hashes.as_slice()))
        || (!src.drawing_hash.is_empty() && out.stream_hashes.contains(&src.drawing_hash));
    drawn && (src.lines.is_empty() || shows_text_of(out, src))
}

/// Whether every text line of `src` is a line of `out` (a stamp may add
/// lines): `out` reads like `src` whatever its drawing.
fn shows_text_of(out: &Page, src: &Page) -> bool {
    !src.lines.is_empty() && src.lines.iter().all(|l| out.lines.iter().any(|o| o.text == l.text))
}

pub(super) fn evaluate(pdf: &Pdf, spec: &PagesSpec, c: &CompiledPdf) -> Outcome {
    let expected: Vec<(&str, &Page)> = c
        .inputs
        .iter()
        .flat_map(|(name, p)| p.pages.iter().map(move |pg| (name.as_str(), pg)))
        .collect();
    let inserted_re = c.regexes.first();
    let mut next = 0;
    let mut inserted = Vec::new();
    for page in &pdf.pages {
        if let Some((_, want)) = expected.get(next)
            && same_page(page, want)
        {
            next += 1;
            continue;
        }
        let heading = page.lines.first().map(|l| l.text.as_str()).unwrap_or_default();
        if inserted_re.is_some_and(|r| r.is_match(heading)) {
            inserted.push(page.number);
            continue;
        }
        let n = page.number;
        let why = match expected.get(next) {
            Some((name, want)) if shows_text_of(page, want) => format!(
                "page {n} shows the text of page {} of {name} but not its content (re-rendered or altered)",
                want.number
            ),
            Some((name, want)) => {
                let elsewhere = expected.iter().position(|(_, p)| same_page(page, p));
                let shown_later = || pdf.pages.iter().any(|p| same_page(p, want));
                match elsewhere {
                    Some(k) if k < next => format!("page {n} repeats an earlier input page"),
                    Some(k) if !shown_later() => format!(
                        "page {} of {name} is missing: page {n} is {}",
                        want.number,
                        expected
                            .get(k)
                            .map(|(other, p)| format!("page {} of {other}", p.number))
                            .unwrap_or_default()
                    ),
                    Some(_) => format!(
                        "page {n} is out of order: page {} of {name} should come first",
                        want.number
                    ),
                    None => format!(
                        "page {n} is not page {} of {name}, nor an allowed inserted page",
                        want.number
                    ),
                }
            }
            None => format!("page {n} is extra: every input page came before it"),
        };
        return verdict(false, why);
    }
    if let Some((name, want)) = expected.get(next) {
        let missing = expected.len() - next;
        return verdict(
            false,
            format!("{missing} input page(s) missing, from page {} of {name}", want.number),
        );
    }
    if let Some(want) = spec.inserted_count
        && inserted.len() != want as usize
    {
        return verdict(false, format!("{} inserted page(s), expected {want}", inserted.len()));
    }
    if let Some(want) = spec.count
        && pdf.pages.len() != want as usize
    {
        return verdict(false, format!("{} pages, expected {want}", pdf.pages.len()));
    }
    let extra = if inserted.is_empty() {
        String::new()
    } else {
        format!(", inserted at {}", page_list(&inserted))
    };
    verdict(true, format!("all {} input pages in order{extra}", expected.len()))
}
