//! `bates`: one number per page in the stated region, consecutive from
//! the stated start, with the prefix, the digit count and the size asked.

use super::{lines_in, sizes_of, within};
use crate::check::{Outcome, verdict};
use crate::pdf::Pdf;
use crate::task::check_spec::{BatesSpec, CompiledPdf};

pub(super) fn evaluate(pdf: &Pdf, spec: &BatesSpec, c: &CompiledPdf) -> Outcome {
    let Some(re) = c.regexes.first() else { return verdict(false, "no pattern compiled".into()) };
    let shown = |n: u64| format!("{}{:0width$}", spec.prefix, n, width = spec.digits as usize);
    for (i, page) in pdf.pages.iter().enumerate() {
        let want = spec.start + i as u64;
        let region = spec.region.on(&page.media_box, spec.unit);
        let (glyphs, lines) = lines_in(page, &region);
        let found: Vec<(u64, usize)> = lines
            .iter()
            .enumerate()
            .flat_map(|(l, line)| {
                re.captures_iter(&line.text)
                    .filter_map(|c| c.get(1)?.as_str().parse::<u64>().ok())
                    .map(move |n| (n, l))
                    .collect::<Vec<_>>()
            })
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
