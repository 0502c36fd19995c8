//! The readers' fuzzer: seeded, structure-aware mutation of the example
//! outputs and the hostile builders — .docx and .xlsx members (XML
//! elements duplicated, dropped, nested, attributes set to extreme
//! numbers), PDF objects (numbers, nesting, font programs and CMaps
//! injected inline), content streams (operators repeated, matrices
//! extreme, forms drawn) and bytes — each read by the reader children
//! under their default bounds, as `score` and `serve` read them.
//!
//! What it asserts is the wall: every input ends in a model or a reason
//! within the bound, no child pool stops serving, no reason is empty.
//! What it reports is where the first wall fails: each input a child
//! crashed, ran out of memory or time on, minimised (chunks dropped
//! while the outcome holds) and written to `target/fuzz/` with its
//! outcome, to become a fixture and a regression test named after its
//! class. It prints executions per second and the children's peak memory.
//!
//! `REDJURY_FUZZ_SECS` (default 20; CI runs 120) and `REDJURY_FUZZ_SEED`
//! (default: the clock; printed, so a run can be repeated).
//! A binary of its own: it keeps both cores busy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// The shared test code: this binary uses only some of it.
#[allow(dead_code, unused_imports)]
#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::hostile;
use common::pdfs::pdf_of;
use redjury::READER_MODE;
use redjury::isolated::{Bounds, Pool, Reader};

/// xorshift64*: a seeded generator, so a run can be repeated.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Document,
    Workbook,
    Pdf,
}

const EXTREME: &[&str] = &[
    "0",
    "-1",
    "4294967295",
    "17179869184",
    "9223372036854775807",
    "1e308",
    "-1e308",
    "NaN",
    "0.0000001",
    "99999999999999999999",
];

/// The example outputs and the hostile builders, by kind.
fn seeds() -> Vec<(Kind, Vec<u8>)> {
    let root = common::root();
    let mut out = Vec::new();
    for dir in [
        "scenarios/outputs/strong",
        "scenarios/outputs/weak",
        "scenarios/s5-exhibits/outputs/strong",
        "scenarios/s5-exhibits/inputs",
    ] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let kind = match e.path().extension().and_then(|x| x.to_str()) {
                Some("docx") => Kind::Document,
                Some("xlsx") => Kind::Workbook,
                Some("pdf") => Kind::Pdf,
                _ => continue,
            };
            out.push((kind, std::fs::read(e.path()).unwrap()));
        }
    }
    for depth in [70, 500] {
        out.push((Kind::Pdf, hostile::type1_through_inline_descriptor(depth)));
        out.push((Kind::Pdf, hostile::type0_encoding_cmap(depth)));
        out.push((Kind::Pdf, hostile::inline_tounicode(depth)));
    }
    out
}

/// The members of a zip package, or none.
fn unzip(bytes: &[u8]) -> Option<Vec<(String, Vec<u8>)>> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).ok()?;
    let mut members = Vec::new();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).ok()?;
        let mut data = Vec::new();
        f.read_to_end(&mut data).ok()?;
        members.push((f.name().ok()?.to_string(), data));
    }
    Some(members)
}

fn rezip(members: &[(String, Vec<u8>)], rng: &mut Rng) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    for (name, data) in members {
        let method = if rng.below(4) == 0 {
            zip::CompressionMethod::Stored
        } else {
            zip::CompressionMethod::Deflated
        };
        let options = zip::write::SimpleFileOptions::default().compression_method(method);
        if zip.start_file(name.as_str(), options).is_ok() {
            zip.write_all(data).unwrap();
        }
    }
    zip.finish().unwrap();
    out.into_inner()
}

/// The spans `<tag …>…</tag>` of an XML text, by byte offsets.
fn elements(xml: &str, rng: &mut Rng) -> Option<(usize, usize)> {
    let starts: Vec<usize> = xml.match_indices('<').map(|(i, _)| i).collect();
    for _ in 0..8 {
        let at = *rng.pick(&starts);
        let rest = &xml[at + 1..];
        let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == ':').collect();
        if name.is_empty() {
            continue;
        }
        let close = format!("</{name}>");
        if let Some(end) = rest.find(&close) {
            return Some((at, at + 1 + end + close.len()));
        }
    }
    None
}

/// One mutation of an XML member, as a policy could write it.
fn mutate_xml(xml: &str, rng: &mut Rng) -> String {
    let Some((a, b)) = elements(xml, rng) else { return xml.to_string() };
    let span = &xml[a..b];
    match rng.below(6) {
        // An element repeated (many paragraphs, revisions, cells).
        0 => format!("{}{}{}", &xml[..b], span.repeat(1 + rng.below(2000)), &xml[b..]),
        // An element dropped.
        1 => format!("{}{}", &xml[..a], &xml[b..]),
        // An element nested in itself.
        2 => {
            let open_end = span.find('>').map(|i| i + 1).unwrap_or(0);
            let (open, inner) = span.split_at(open_end);
            let n = 1 + rng.below(600);
            let close = &span[span.rfind("</").unwrap_or(span.len())..];
            format!("{}{}{}{}{}", &xml[..a], open.repeat(n), inner, close.repeat(n - 1), &xml[b..])
        }
        // Every number of the span made extreme.
        3 => {
            let extreme = rng.pick(EXTREME).to_string();
            let changed: String = span
                .split('"')
                .enumerate()
                .map(|(i, part)| {
                    if i % 2 == 1 && part.parse::<f64>().is_ok() {
                        extreme.clone()
                    } else {
                        part.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\"");
            format!("{}{}{}", &xml[..a], changed, &xml[b..])
        }
        // Two spans swapped in order (a reference before its definition).
        4 => {
            let (c, d) = elements(xml, rng).unwrap_or((a, b));
            if d <= a {
                format!("{}{}{}{}{}", &xml[..c], span, &xml[d..a], &xml[c..d], &xml[b..])
            } else {
                xml.to_string()
            }
        }
        // The span cut in half: malformed XML.
        _ => {
            let mut half = a + (b - a) / 2;
            while !xml.is_char_boundary(half) {
                half -= 1;
            }
            format!("{}{}", &xml[..half], &xml[b..])
        }
    }
}

fn mutate_package(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let Some(mut members) = unzip(bytes) else { return mutate_bytes(bytes, rng) };
    let xml: Vec<usize> = (0..members.len())
        .filter(|i| members[*i].0.ends_with(".xml") || members[*i].0.ends_with(".rels"))
        .collect();
    match rng.below(8) {
        0 if !members.is_empty() => {
            // A member twice, or dropped.
            let i = rng.below(members.len());
            if rng.below(2) == 0 {
                // Another case: zip refuses the same name twice, and the
                // reader must see two copies of one part.
                let (name, data) = members[i].clone();
                members.push((name.to_uppercase(), data));
            } else {
                members.remove(i);
            }
        }
        _ if !xml.is_empty() => {
            let i = *rng.pick(&xml);
            if let Ok(text) = String::from_utf8(members[i].1.clone()) {
                let mut text = text;
                for _ in 0..1 + rng.below(3) {
                    text = mutate_xml(&text, rng);
                }
                members[i].1 = text.into_bytes();
            }
        }
        _ => return mutate_bytes(bytes, rng),
    }
    rezip(&members, rng)
}

/// The objects of a PDF written without object streams (the examples
/// and builders are), in order; `None` for another kind of file.
fn objects(bytes: &[u8]) -> Option<Vec<Vec<u8>>> {
    let text = String::from_utf8_lossy(bytes);
    let mut out = Vec::new();
    let mut rest: &str = &text;
    while let Some(at) = rest.find(" 0 obj") {
        let body = &rest[at + 6..];
        let end = body.find("endobj")?;
        out.push(body[..end].trim().as_bytes().to_vec());
        rest = &body[end..];
    }
    (!out.is_empty()).then_some(out)
}

const CONTENT: &[&str] = &[
    "q ",
    "Q ",
    "BT /F1 12 Tf (x) Tj ET ",
    "1e308 0 0 1e308 0 0 cm ",
    "0 0 0 0 0 0 cm ",
    "/X1 Do ",
    "[(a) -1e9 (b)] TJ ",
    "1 0 0 rg 0 0 612 792 re f ",
    "0 g ",
    "T* ",
];

fn mutate_pdf(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    // Objects are renumbered from 1 by pdf_of: a file whose numbering
    // has gaps keeps its bytes but loses meaning, still a fair input.
    let Some(mut objs) = objects(bytes) else { return mutate_bytes(bytes, rng) };
    let i = rng.below(objs.len());
    let text = String::from_utf8_lossy(&objs[i]).into_owned();
    let mutated = match rng.below(6) {
        0 => {
            // A number made extreme.
            let words: Vec<&str> = text.split(' ').collect();
            let j = rng.below(words.len());
            let mut w: Vec<String> = words.iter().map(|s| s.to_string()).collect();
            if w[j].parse::<f64>().is_ok() {
                w[j] = rng.pick(EXTREME).to_string();
            }
            w.join(" ")
        }
        1 => format!("{}{text}", "[".repeat(rng.below(100_000))),
        2 => {
            // A font with an inline descriptor or CMap, nested.
            let depth = if rng.below(4) == 0 { 200_000 } else { rng.below(3000) };
            objs.push(hostile::nested_cmap(depth));
            let n = objs.len();
            format!(
                "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding {n} 0 R /ToUnicode {n} 0 R /DescendantFonts [<< /Type /Font /Subtype /CIDFontType2 /FontDescriptor << /FontFile {n} 0 R >> >>] >>"
            )
        }
        3 if text.contains("stream") => {
            // Operators added to a content stream (its /Length is left as
            // it was: lopdf then reads to endstream).
            let ops: String = (0..1 + rng.below(400)).map(|_| *rng.pick(CONTENT)).collect();
            text.replacen("stream\n", &format!("stream\n{ops}"), 1)
        }
        4 => {
            let j = rng.below(objs.len());
            String::from_utf8_lossy(&objs[j]).into_owned()
        }
        _ => return mutate_bytes(bytes, rng),
    };
    objs[i] = mutated.into_bytes();
    pdf_of(&objs, "")
}

fn mutate_bytes(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if b.is_empty() {
        return b;
    }
    match rng.below(3) {
        0 => {
            for _ in 0..1 + rng.below(16) {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
        }
        1 => b.truncate(rng.below(b.len())),
        _ => {
            let (from, len) = (rng.below(b.len()), rng.below(4096));
            let chunk: Vec<u8> = b[from..(from + len).min(b.len())].to_vec();
            let at = rng.below(b.len());
            b.splice(at..at, chunk);
        }
    }
    b
}

fn read(reader: &Reader, kind: Kind, bytes: &[u8]) -> Result<(), String> {
    let failure = |e: &dyn std::fmt::Display| e.to_string();
    match kind {
        Kind::Document => reader.document(bytes.to_vec()).map(drop).map_err(|e| failure(&e)),
        Kind::Workbook => reader.workbook(bytes.to_vec()).map(drop).map_err(|e| failure(&e)),
        Kind::Pdf => reader.pdf(bytes).map(drop).map_err(|e| failure(&e)),
    }
}

/// The outcome's class: what a minimised input must still give.
fn class(outcome: &Result<(), String>) -> &'static str {
    match outcome {
        Ok(()) => "read",
        Err(e) if e.contains("stack overflow") => "stack_overflow",
        Err(e) if e.contains("needed more than") => "memory",
        Err(e) if e.contains("took longer than") => "time",
        Err(e) if e.contains("the reader crashed") => "crash",
        Err(e) if e.contains("no reader process") => "unavailable",
        Err(_) => "refused",
    }
}

/// Drops chunks of `bytes` while the outcome's class holds (ddmin, by
/// halves then smaller, at most `tries` reads).
fn minimise(reader: &Reader, kind: Kind, bytes: Vec<u8>, want: &str, tries: usize) -> Vec<u8> {
    let mut best = bytes;
    let mut chunk = best.len() / 2;
    let mut left = tries;
    while chunk >= 16 && left > 0 {
        let mut at = 0;
        while at < best.len() && left > 0 {
            let mut candidate = best.clone();
            candidate.drain(at..(at + chunk).min(best.len()));
            left -= 1;
            if class(&read(reader, kind, &candidate)) == want {
                best = candidate;
            } else {
                at += chunk;
            }
        }
        chunk /= 2;
    }
    best
}

/// The peak resident memory of this process's live children, in KB.
fn children_peak_kb() -> u64 {
    let me = std::process::id().to_string();
    let mut peak = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = e.file_name();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        if stat.rsplit(')').next().and_then(|s| s.split_whitespace().nth(1)) != Some(&me) {
            continue;
        }
        let status = std::fs::read_to_string(Path::new("/proc").join(pid).join("status"))
            .unwrap_or_default();
        let hwm = status
            .lines()
            .find(|l| l.starts_with("VmHWM:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok());
        peak = peak.max(hwm.unwrap_or(0));
    }
    peak
}

#[test]
fn the_readers_end_every_mutated_file_in_a_model_or_a_reason_within_bounds() {
    let secs: u64 =
        std::env::var("REDJURY_FUZZ_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    let seed: u64 =
        std::env::var("REDJURY_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        }) | 1;
    println!("fuzz: seed {seed} (REDJURY_FUZZ_SEED={seed} repeats this run), {secs} s");
    let bounds = Bounds::default();
    let exe: PathBuf = env!("CARGO_BIN_EXE_redjury").into();
    let reader =
        Reader::Isolated(Arc::new(Pool::start(exe, vec![READER_MODE.into()], bounds, 2).unwrap()));
    let seeds = seeds();
    let mut rng = Rng(seed);
    let out = common::root().join("target/fuzz");
    let (mut runs, mut peak_kb) = (0u64, 0u64);
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut found: BTreeMap<String, usize> = BTreeMap::new();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        let (kind, seed_bytes) = rng.pick(&seeds).clone();
        let mut bytes = seed_bytes;
        for _ in 0..1 + rng.below(3) {
            bytes = match kind {
                Kind::Document | Kind::Workbook => mutate_package(&bytes, &mut rng),
                Kind::Pdf => mutate_pdf(&bytes, &mut rng),
            };
        }
        let one = Instant::now();
        let outcome = read(&reader, kind, &bytes);
        let took = one.elapsed();
        runs += 1;
        if runs % 16 == 0 {
            peak_kb = peak_kb.max(children_peak_kb());
        }
        let c = class(&outcome);
        *counts.entry(c).or_default() += 1;
        // The wall: a bound met in time, a reason that says something.
        assert!(
            took < bounds.wall + Duration::from_secs(10),
            "{c} after {took:?} (seed {seed}, run {runs})"
        );
        assert_ne!(c, "unavailable", "{outcome:?} (seed {seed}, run {runs})");
        if let Err(why) = &outcome {
            assert!(why.trim().len() > 10, "a reason: {why:?}");
        }
        if matches!(c, "stack_overflow" | "memory" | "time" | "crash") {
            let n = found.entry(c.to_string()).or_default();
            *n += 1;
            if *n <= 2 {
                let small = minimise(&reader, kind, bytes, c, 40);
                std::fs::create_dir_all(&out).unwrap();
                let ext = match kind {
                    Kind::Document => "docx",
                    Kind::Workbook => "xlsx",
                    Kind::Pdf => "pdf",
                };
                let file = out.join(format!("{c}-{seed}-{runs}.{ext}"));
                std::fs::write(&file, &small).unwrap();
                println!("fuzz: {c}, minimised to {} bytes: {}", small.len(), file.display());
            }
        }
    }
    let rate = runs as f64 / started.elapsed().as_secs_f64();
    println!(
        "fuzz: {runs} executions, {rate:.1}/s, children's peak resident memory {} MB",
        peak_kb >> 10
    );
    println!("fuzz: outcomes {counts:?}");
    assert!(runs > 0);
    // The pool still reads after everything it met.
    let good =
        std::fs::read(common::root().join("scenarios/outputs/strong/redline-s1-t1-g01a.docx"))
            .unwrap();
    assert!(reader.document(good).is_ok(), "the pool reads a good file after the run");
}
