//! Cost on hostile-but-valid files: many comments, many comment ranges
//! open at once across long text, one thread of many chained replies, and
//! workbooks built to cost (one shared string in many cells, many sheets). Each case runs in a child process of
//! this benchmark (`--one CASE`), which reports its wall time and peak
//! memory (VmHWM), so that one case's memory is not charged to the next.
//!
//! Run: `cargo bench --bench hostile`. Figures go in docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// The benches use a few of the test helpers.
#[allow(dead_code, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Instant;

use redjury::docx::{Limits, from_bytes};

/// `n` comments, each anchored on its own short paragraph.
fn many_comments(n: usize) -> Vec<u8> {
    let mut body = String::new();
    let mut comments = String::new();
    for i in 0..n {
        body.push_str(&format!(
            r#"<w:p><w:commentRangeStart w:id="{i}"/>{}<w:commentRangeEnd w:id="{i}"/><w:r><w:commentReference w:id="{i}"/></w:r></w:p>"#,
            common::run(&format!("Clause {i} applies."))
        ));
        comments.push_str(&format!(r#"<w:comment w:id="{i}" w:author="Counsel"><w:p><w:r><w:t>Note {i}.</w:t></w:r></w:p></w:comment>"#));
    }
    common::Docx { body, comments: Some(comments), ..Default::default() }.bytes()
}

/// `ranges` comment ranges all opened at the start and closed at the end
/// of `paragraphs` paragraphs of text.
fn overlapping_ranges(ranges: usize, paragraphs: usize) -> Vec<u8> {
    let starts: String =
        (0..ranges).map(|i| format!(r#"<w:commentRangeStart w:id="{i}"/>"#)).collect();
    let ends: String = (0..ranges).map(|i| format!(r#"<w:commentRangeEnd w:id="{i}"/>"#)).collect();
    let text =
        "The Supplier shall indemnify the Customer against all losses arising from any breach. "
            .repeat(6);
    let mut body = format!("<w:p>{starts}{}</w:p>", common::run("Start."));
    for _ in 0..paragraphs {
        body.push_str(&common::p(&text));
    }
    body.push_str(&format!("<w:p>{}{ends}</w:p>", common::run("End.")));
    let comments: String = (0..ranges)
        .map(|i| format!(r#"<w:comment w:id="{i}" w:author="Counsel"><w:p><w:r><w:t>c{i}</w:t></w:r></w:p></w:comment>"#))
        .collect();
    common::Docx { body, comments: Some(comments), ..Default::default() }.bytes()
}

/// `n` comments, each a reply to the one before (one thread, `n` deep),
/// the last one marked done: what a thread walk per comment makes
/// quadratic.
fn reply_chain(n: usize) -> Vec<u8> {
    let mut refs = String::new();
    let mut comments = String::new();
    let mut extended = String::new();
    for i in 0..n {
        refs.push_str(&format!(r#"<w:r><w:commentReference w:id="{i}"/></w:r>"#));
        let author = if i % 2 == 0 { "Other" } else { "Counsel" };
        comments.push_str(&format!(
            r#"<w:comment w:id="{i}" w:author="{author}"><w:p w14:paraId="{:08X}"><w:r><w:t>Reply {i}.</w:t></w:r></w:p></w:comment>"#,
            i + 1
        ));
        let parent = if i == 0 { String::new() } else { format!(r#" w15:paraIdParent="{i:08X}""#) };
        let done = u8::from(i + 1 == n);
        extended.push_str(&format!(
            r#"<w15:commentEx w15:paraId="{:08X}"{parent} w15:done="{done}"/>"#,
            i + 1
        ));
    }
    let body = format!("<w:p>{}{refs}</w:p>", common::run("The thread."));
    common::Docx {
        body,
        comments: Some(comments),
        comments_extended: Some(extended),
        ..Default::default()
    }
    .bytes()
}

fn peak_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A workbook of `cells` cells all showing one shared string of
/// `string_bytes` bytes: the shared-string bomb of issue 22 (a 4.3 KB file
/// took 584 MB; a 157 KB one aborted the run).
fn shared_string(cells: u32, string_bytes: usize) -> Vec<u8> {
    let data: String = (1..=cells)
        .map(|r| format!(r#"<row r="{r}"><c r="A{r}" t="s"><v>0</v></c></row>"#))
        .collect();
    common::xlsx(&[("Sheet1", data)], &["x".repeat(string_bytes)])
}

/// A workbook of `n` one-cell sheets.
fn many_sheets(n: usize) -> Vec<u8> {
    let sheets: Vec<(String, String)> =
        (0..n).map(|i| (format!("S{i}"), common::inline_row(1, &["x"]))).collect();
    let refs: Vec<(&str, String)> = sheets.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
    common::xlsx(&refs, &[])
}

/// In the child: load, gate and render one workbook case, then report.
fn one_workbook(case: &str, bytes: Vec<u8>) {
    let size = bytes.len();
    let before = peak_kb();
    let start = Instant::now();
    let loaded = redjury::xlsx::from_bytes(bytes, Limits::default());
    let gate = redjury::gate_workbook(&loaded, None);
    let view = loaded.as_ref().map(|b| common::workbook_view(b, "x").len()).unwrap_or(0);
    let elapsed = start.elapsed();
    println!(
        "{case}: {:.1} KB file, load + gate + view {:.2} s, view {view} bytes, gate: {}, peak memory {} MB (before loading {} MB)",
        size as f64 / 1024.0,
        elapsed.as_secs_f64(),
        gate.reason,
        peak_kb() / 1024,
        before / 1024
    );
}

/// In the child: load, gate and render one case, then report.
fn one(case: &str) {
    let workbook = match case {
        "xlsx-shared-string-20k" => Some(shared_string(20_000, 1_000_000)),
        "xlsx-shared-string-fits" => Some(shared_string(60_000, 1_000)),
        "xlsx-sheets-1500" => Some(many_sheets(1_500)),
        "xlsx-sheets-1000" => Some(many_sheets(1_000)),
        _ => None,
    };
    if let Some(bytes) = workbook {
        return one_workbook(case, bytes);
    }
    let bytes = match case {
        "comments-100k" => many_comments(100_000),
        "comments-8k" => many_comments(8_000),
        "overlap-3200x500" => overlapping_ranges(3200, 500),
        "reply-chain-20k" => reply_chain(20_000),
        "reply-chain-100k" => reply_chain(100_000),
        other => panic!("unknown case {other}"),
    };
    let size = bytes.len();
    let before = peak_kb();
    let start = Instant::now();
    let loaded = from_bytes(bytes, Limits::default());
    let gate = redjury::gate(&loaded, "Counsel");
    let view = loaded.as_ref().map(|d| common::annotated(d, "x").len()).unwrap_or(0);
    // The comment thread checks walk every thread too.
    let threads = redjury::PreparedCheck::from_json(
        &serde_json::json!({"type": "comment", "replied_by": "Counsel"}),
        std::path::Path::new("."),
    )
    .expect("a valid check");
    let thread_check = loaded
        .as_ref()
        .map(|d| redjury::evaluate_check(&threads, d, None, "Counsel").1)
        .unwrap_or_default();
    let elapsed = start.elapsed();
    println!(
        "{case}: {:.1} KB file, load + gate + annotated view + thread check {:.2} s, view {view} bytes, gate passed {}, threads: {thread_check}, peak memory {} MB (before loading {} MB)",
        size as f64 / 1024.0,
        elapsed.as_secs_f64(),
        gate.passed,
        peak_kb() / 1024,
        before / 1024
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        one(args.get(i + 1).map(String::as_str).unwrap_or(""));
        return;
    }
    let me = std::env::current_exe().expect("own path");
    for case in [
        "comments-8k",
        "comments-100k",
        "overlap-3200x500",
        "reply-chain-20k",
        "reply-chain-100k",
        "xlsx-shared-string-20k",
        "xlsx-shared-string-fits",
        "xlsx-sheets-1500",
        "xlsx-sheets-1000",
    ] {
        let out = Command::new(&me).args(["--one", case]).output().expect("run child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            eprintln!("{case} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}
