//! `bates`: one number per page in the stated region, consecutive from
//! the stated start, with the prefix, the digit count and the size asked.

use super::{lines_in, sizes_of, within};
use crate::check::{Outcome, verdict};
use crate::pdf::Pdf;
use crate::task::check_spec::{BatesSpec, CompiledPdf};

/// The numbers `re` (prefix, then the digits as group 1) finds in `text`,
/// each standing alone: no letter or digit just before the prefix, no
/// digit just after the digits.
fn numbers(re: &regex::Regex, text: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(c) = text.get(from..).and_then(|rest| re.captures(rest)) {
        let (Some(whole), Some(digits)) = (c.get(0), c.get(1)) else { break };
        let (start, end) = (from + whole.start(), from + whole.end());
        let before = text.get(..start).and_then(|t| t.chars().next_back());
        let after = text.get(end..).and_then(|t| t.chars().next());
        if !before.is_some_and(char::is_alphanumeric)
            && !after.is_some_and(|a| a.is_ascii_digit())
            && let Ok(n) = digits.as_str().parse()
        {
            out.push(n);
        }
        from = start + whole.as_str().chars().next().map_or(1, char::len_utf8);
    }
    out
}

pub(super) fn evaluate(pdf: &Pdf, spec: &BatesSpec, c: &CompiledPdf) -> Outcome {
    let Some(re) = c.regexes.first() else { return verdict(false, "no pattern compiled".into()) };
    let shown = |n: u64| format!("{}{:0width$}", spec.prefix, n, width = spec.digits as usize);
    for (i, page) in pdf.pages.iter().enumerate() {
        let want = spec.start + i as u64;
        let region = spec.region.on_page(page, spec.unit);
        let (glyphs, lines) = lines_in(page, &region);
        let found: Vec<(u64, usize)> = lines
            .iter()
            .enumerate()
            .flat_map(|(l, line)| numbers(re, &line.text).into_iter().map(move |n| (n, l)))
            .collect();
        let n = page.number;
        match found.as_slice() {
            [] => {
                let elsewhere = page.lines.iter().any(|l| re.is_match(&l.text));
                let why =
                    if elsewhere { "one stands outside the region" } else { "none on the page" };
                return verdict(
                    false,
                    format!("page {n}: no Bates number {} in the region ({why})", shown(want)),
                );
            }
            [(got, line)] => {
                if *got != want {
                    return verdict(
                        false,
                        format!("page {n} is numbered {}, expected {}", shown(*got), shown(want)),
                    );
                }
                if let Some(line) = lines.get(*line)
                    && let Err(why) = within(&sizes_of(&glyphs, line), spec.min_size, spec.max_size)
                {
                    return verdict(false, format!("page {n}: {} is {why}", shown(want)));
                }
            }
            more => {
                let all: Vec<String> = more.iter().map(|(g, _)| shown(*g)).collect();
                return verdict(
                    false,
                    format!("page {n} carries {} Bates numbers: {}", more.len(), all.join(", ")),
                );
            }
        }
    }
    let last = spec.start + pdf.pages.len() as u64 - 1;
    verdict(
        true,
        format!("{}–{} on pages 1–{}, in order", shown(spec.start), shown(last), pdf.pages.len()),
    )
}
