//! `bookmarks` (the outline against a list, or against the pages that
//! start a section) and `links` (a table of contents whose entries link
//! to the pages they print, which are the pages the entries start on).

use super::collapse;
use crate::check::{Outcome, verdict};
use crate::pdf::{AnnotationKind, Bookmark, LinkTarget, Pdf, Rect};
use crate::task::check_spec::{BookmarksSpec, CompiledPdf, LinksSpec};

/// A bookmark as a check expects it.
struct Want<'a> {
    title: Option<String>,
    pattern: Option<&'a regex::Regex>,
    level: Option<u32>,
    page: Option<u32>,
}

impl Want<'_> {
    fn matches(&self, b: &Bookmark) -> bool {
        let title = collapse(&b.title);
        self.title.as_ref().is_none_or(|t| collapse(t) == title)
            && self.pattern.is_none_or(|p| p.is_match(&title))
            && self.level.is_none_or(|l| l == b.level)
            && self.page.is_none_or(|p| b.page() == Some(p))
    }
    fn describe(&self) -> String {
        let title = match (&self.title, self.pattern) {
            (Some(t), _) => format!("{t:?}"),
            (None, Some(p)) => format!("one matching /{}/", p.as_str()),
            _ => "any".into(),
        };
        let page = self.page.map(|p| format!(" → page {p}")).unwrap_or_default();
        let level = self.level.map(|l| format!(" at level {l}")).unwrap_or_default();
        format!("{title}{level}{page}")
    }
}

fn describe(b: &Bookmark) -> String {
    let to = match &b.target {
        Some(LinkTarget::Page { page }) => format!("page {page}"),
        Some(other) => format!("{other:?}"),
        None => "nowhere".into(),
    };
    format!("{:?} at level {} → {to}", b.title, b.level)
}

pub(super) fn bookmarks(pdf: &Pdf, spec: &BookmarksSpec, c: &CompiledPdf) -> Outcome {
    let wants: Vec<Want<'_>> = match &spec.of_pages_matching {
        Some(_) => {
            let Some(re) = c.regexes.first() else {
                return verdict(false, "no pattern compiled".into());
            };
            pdf.pages
                .iter()
                .filter_map(|p| {
                    let first = p.lines.first()?;
                    re.is_match(&first.text).then(|| Want {
                        title: Some(collapse(&first.text)),
                        pattern: None,
                        level: Some(1),
                        page: Some(p.number),
                    })
                })
                .collect()
        }
        None => spec
            .expected
            .iter()
            .zip(&c.regexes)
            .map(|(e, re)| Want {
                title: e.title.clone(),
                pattern: e.pattern.as_ref().map(|_| re),
                level: e.level,
                page: e.page,
            })
            .collect(),
    };
    if wants.is_empty() {
        return verdict(false, "no page starts with a line the check's pattern matches".into());
    }
    let have = &pdf.bookmarks;
    if spec.only && have.len() != wants.len() {
        return verdict(false, format!("{} bookmarks, expected {}", have.len(), wants.len()));
    }
    let mut at = 0;
    for (i, want) in wants.iter().enumerate() {
        let found = if spec.only {
            have.get(i).filter(|b| want.matches(b)).map(|_| i)
        } else {
            have.iter().skip(at).position(|b| want.matches(b)).map(|k| at + k)
        };
        match found {
            Some(k) => at = k + 1,
            None => {
                let there = have.get(i).map(describe).unwrap_or_else(|| "none".into());
                return verdict(
                    false,
                    format!("bookmark {}: expected {}, found {there}", i + 1, want.describe()),
                );
            }
        }
    }
    verdict(true, format!("{} bookmarks as expected", wants.len()))
}

/// The first page after `after` whose text holds `title`.
fn starts_on(pdf: &Pdf, title: &str, after: u32) -> Option<u32> {
    let title = collapse(title).to_lowercase();
    pdf.pages
        .iter()
        .filter(|p| p.number > after)
        .find(|p| p.lines.iter().any(|l| collapse(&l.text).to_lowercase().contains(&title)))
        .map(|p| p.number)
}

/// Whether a link's rectangle covers a line: it overlaps it across half
/// the line's height at least.
fn covers(link: &Rect, line: &Rect) -> bool {
    let overlap = (link.y1.min(line.y1) - link.y0.max(line.y0)).max(0.0);
    link.overlaps(line) && overlap >= 0.5 * line.height()
}

pub(super) fn links(pdf: &Pdf, spec: &LinksSpec, c: &CompiledPdf) -> Outcome {
    let Some(re) = c.regexes.first() else { return verdict(false, "no pattern compiled".into()) };
    let Some(toc) = pdf.pages.iter().find(|p| p.number == spec.toc_page) else {
        return verdict(false, format!("no page {} for the table of contents", spec.toc_page));
    };
    let entries: Vec<(String, u32, Rect)> = toc
        .lines
        .iter()
        .filter_map(|l| {
            let caps = re.captures(&l.text)?;
            let title = collapse(caps.name("title")?.as_str());
            let page = caps.name("page")?.as_str().trim().parse().ok()?;
            Some((title, page, l.rect))
        })
        .collect();
    if entries.len() != spec.entries as usize {
        return verdict(
            false,
            format!(
                "{} table-of-contents entries on page {}, expected {}",
                entries.len(),
                toc.number,
                spec.entries
            ),
        );
    }
    // A hidden link is no link: a reader cannot click it.
    let link_target = |a: &crate::pdf::Annotation| match &a.kind {
        AnnotationKind::Link { target } if !a.hidden => Some(target.clone()),
        _ => None,
    };
    let mut used = Vec::new();
    for (title, printed, rect) in &entries {
        match starts_on(pdf, title, toc.number) {
            Some(real) if real == *printed => {}
            Some(real) => {
                return verdict(
                    false,
                    format!("the contents give {title:?} page {printed}; it starts on page {real}"),
                );
            }
            None => {
                return verdict(
                    false,
                    format!("{title:?} is listed in the contents but no later page shows it"),
                );
            }
        }
        let over: Vec<(usize, LinkTarget)> = toc
            .annotations
            .iter()
            .enumerate()
            .filter(|(_, a)| covers(&a.rect, rect))
            .filter_map(|(i, a)| Some((i, link_target(a)?)))
            .collect();
        match over.as_slice() {
            [] => return verdict(false, format!("no link over the contents entry {title:?}")),
            [(i, LinkTarget::Page { page })] if page == printed => used.push(*i),
            [(_, t)] => {
                return verdict(
                    false,
                    format!("the link over {title:?} leads to {t}, not page {printed}"),
                );
            }
            _ => {
                return verdict(
                    false,
                    format!("{} links over the contents entry {title:?}", over.len()),
                );
            }
        }
    }
    if spec.only {
        for page in &pdf.pages {
            for (i, a) in page.annotations.iter().enumerate() {
                let is_used = page.number == toc.number && used.contains(&i);
                if let Some(t) = link_target(a).filter(|_| !is_used) {
                    return verdict(
                        false,
                        format!(
                            "a link on page {} outside the contents entries (to {t})",
                            page.number
                        ),
                    );
                }
            }
        }
    }
    verdict(
        true,
        format!("{} contents entries, each linked to the page it starts on", entries.len()),
    )
}
