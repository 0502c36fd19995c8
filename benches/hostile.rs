//! Cost on hostile-but-valid files: many comments, many comment ranges
//! open at once across long text, and one thread of many chained replies. Each case runs in a child process of
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
use redjury::view::annotated;

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

/// In the child: load, gate and render one case, then report.
fn one(case: &str) {
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
    let gate = redjury::check::gate::check(&loaded, "Counsel");
    let view = loaded.as_ref().map(|d| annotated::render(d, "x").len()).unwrap_or(0);
    // The comment thread checks walk every thread too.
    let threads = redjury::task::check_spec::PreparedCheck::from_json(
        &serde_json::json!({"type": "comment", "replied_by": "Counsel"}),
        std::path::Path::new("."),
    )
    .expect("a valid check");
    let thread_check = loaded
        .as_ref()
        .map(|d| redjury::check::evaluate(&threads, d, None, "Counsel").1)
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
    for case in
        ["comments-8k", "comments-100k", "overlap-3200x500", "reply-chain-20k", "reply-chain-100k"]
    {
        let out = Command::new(&me).args(["--one", case]).output().expect("run child");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        if !out.status.success() {
            eprintln!("{case} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}
