//! `text_region` (a legend or footer in a region, with its size and
//! colour, and what the output was made from still in place) and
//! `pdf_provenance` (producer, creator, a text layer on every page).

use std::collections::HashSet;

use super::{chosen, lines_in, page_list, sizes_of, within};
use crate::check::{Outcome, verdict};
use crate::pdf::{Page, Pdf};
use crate::task::check_spec::{CompiledPdf, PdfProvenanceSpec, TextRegionSpec};

pub(super) fn text_region(pdf: &Pdf, spec: &TextRegionSpec, c: &CompiledPdf) -> Outcome {
    let Some(re) = c.regexes.first() else { return verdict(false, "no pattern compiled".into()) };
    let pages = match chosen(pdf, &spec.pages) {
        Ok(p) => p,
        Err(outcome) => return outcome,
    };
    for page in &pages {
        let n = page.number;
        let area = spec.region.on_page(page, spec.unit);
        let (glyphs, lines) = lines_in(page, &area);
        let Some(line) = lines.iter().find(|l| re.is_match(&l.text)) else {
            let elsewhere = page.lines.iter().any(|l| re.is_match(&l.text));
            let why = if elsewhere { " (it stands elsewhere on the page)" } else { "" };
            return verdict(
                false,
                format!("page {n}: no text matching /{}/ in the region{why}", re.as_str()),
            );
        };
        if let Err(why) = within(&sizes_of(&glyphs, line), spec.min_size, spec.max_size) {
            return verdict(false, format!("page {n}: {:?} is {why}", line.text));
        }
        if let Some(want) = &c.colour {
            let off = line
                .glyphs
                .iter()
                .filter_map(|i| glyphs.get(*i))
                .filter(|g| !g.text.trim().is_empty())
                .find(|g| g.colour.is_none_or(|got| got.distance(want) > 0.1));
            if let Some(g) = off {
                let got =
                    g.colour.map(|c| c.hex()).unwrap_or_else(|| "an unconverted colour".into());
                return verdict(
                    false,
                    format!("page {n}: {:?} is set in {got}, not {}", line.text, want.hex()),
                );
            }
        }
    }
    if let Some((name, source)) = c.inputs.first()
        && let Some(why) = moved(pdf, name, source)
    {
        return verdict(false, why);
    }
    let numbers: Vec<u32> = pages.iter().map(|p| p.number).collect();
    verdict(true, format!("/{}/ in the region on {}", re.as_str(), page_list(&numbers)))
}

/// The first text of `source` not found in the same place on the same
/// page of `out` (within 1 pt), as a reason. Places are compared as the
/// pages are shown: a page re-saved in landscape instead of turned by
/// `/Rotate` keeps its text where it was.
fn moved(out: &Pdf, name: &str, source: &Pdf) -> Option<String> {
    if out.pages.len() != source.pages.len() {
        return Some(format!("{} pages, and {name} has {}", out.pages.len(), source.pages.len()));
    }
    for (o, s) in out.pages.iter().zip(&source.pages) {
        let at = placed(o);
        for line in &s.lines {
            let lost = line.glyphs.iter().filter_map(|i| s.glyphs.get(*i)).find(|g| {
                let (x, y) = s.shown_point(g.x, g.y);
                let (x, y) = (x.round() as i64, y.round() as i64);
                !g.text.trim().is_empty()
                    && !g.hidden
                    && !(-1..=1)
                        .any(|dx| (-1..=1).any(|dy| at.contains(&(g.text.clone(), x + dx, y + dy))))
            });
            if lost.is_some() {
                return Some(format!(
                    "page {}: {:?} of {name} is no longer where it was",
                    o.number, line.text
                ));
            }
        }
    }
    None
}

/// The glyphs that show, by text and rounded place as the page is shown.
fn placed(page: &Page) -> HashSet<(String, i64, i64)> {
    let shown = page.glyphs.iter().filter(|g| !g.hidden);
    shown
        .map(|g| {
            let (x, y) = page.shown_point(g.x, g.y);
            (g.text.clone(), x.round() as i64, y.round() as i64)
        })
        .collect()
}

pub(super) fn provenance(pdf: &Pdf, spec: &PdfProvenanceSpec, c: &CompiledPdf) -> Outcome {
    let mut regexes = c.regexes.iter();
    let m = &pdf.metadata;
    let mut said = Vec::new();
    for (given, found, what) in [
        (&spec.producer, [&m.producer, &m.xmp_producer], "producer"),
        (&spec.creator, [&m.creator, &m.xmp_creator_tool], "creator"),
    ] {
        if given.is_none() {
            continue;
        }
        let Some(re) = regexes.next() else { continue };
        let values: Vec<&str> = found.iter().filter_map(|v| v.as_deref()).collect();
        match values.iter().find(|v| re.is_match(v)) {
            Some(v) => said.push(format!("{what} {v:?}")),
            None if values.is_empty() => {
                return verdict(false, format!("the file names no {what}"));
            }
            None => {
                return verdict(
                    false,
                    format!("{what} {:?} does not match /{}/", values.join(" / "), re.as_str()),
                );
            }
        }
    }
    if spec.text_layer {
        let bare: Vec<u32> = pdf
            .pages
            .iter()
            .filter(|p| p.text_error.is_some() || p.glyphs.iter().all(|g| g.text.trim().is_empty()))
            .map(|p| p.number)
            .collect();
        if !bare.is_empty() {
            return verdict(false, format!("no text layer on {}", page_list(&bare)));
        }
        said.push(format!("text on all {} pages", pdf.pages.len()));
    }
    verdict(true, said.join("; "))
}
