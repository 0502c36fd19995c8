//! PDF reading benchmark, side by side with poppler's `pdftotext -bbox`
//! (words with their boxes: the closest peer to what the reader extracts)
//! in the same run: the example's PDFs, and a 500-page production made by
//! qpdf from them.
//!
//! Run: `cargo bench --bench pdf` (needs `apt-get install poppler-utils
//! qpdf`). Figures go in docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use redjury::pdf::{Limits, from_bytes};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// redjury's reader and the judges' view, in process.
fn ours(files: &[Vec<u8>], rounds: usize) -> Duration {
    let times = (0..rounds).map(|_| {
        let start = Instant::now();
        for bytes in files {
            let pdf = from_bytes(bytes, Limits::default()).unwrap();
            std::hint::black_box(redjury::render_pdf_view(&pdf, redjury::ViewKind::Annotated, "x"));
        }
        start.elapsed()
    });
    median(times.collect())
}

/// `pdftotext -bbox FILE -`, one process per file.
fn poppler(files: &[PathBuf], rounds: usize) -> Duration {
    let times = (0..rounds).map(|_| {
        let start = Instant::now();
        for f in files {
            let out = Command::new("pdftotext").arg("-bbox").arg(f).arg("-").output().unwrap();
            assert!(out.status.success());
            std::hint::black_box(out.stdout.len());
        }
        start.elapsed()
    });
    median(times.collect())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["inputs", "outputs/gold", "outputs/strong", "outputs/weak"] {
        for e in std::fs::read_dir(root.join("scenarios/s5-exhibits").join(dir)).unwrap().flatten()
        {
            files.push(e.path());
        }
    }
    files.sort();
    let bytes: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let pages: usize =
        bytes.iter().map(|b| from_bytes(b, Limits::default()).unwrap().pages.len()).sum();
    let (a, b) = (ours(&bytes, 9), poppler(&files, 9));
    println!(
        "{} example PDFs, {pages} pages: redjury in-process {a:.1?}, pdftotext -bbox (a process per file) {b:.1?}: {:.1}x",
        files.len(),
        b.as_secs_f64() / a.as_secs_f64()
    );

    let dir = std::env::temp_dir().join(format!("redjury-bench-pdf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("production-500.pdf");
    let mut args: Vec<String> = vec!["--empty".into(), "--pages".into()];
    let sources = [
        "inputs/production.pdf",
        "inputs/exhibit-1.pdf",
        "inputs/exhibit-3.pdf",
        "outputs/gold/redline-s5-t1-g01a.pdf",
    ];
    for i in 0..200 {
        args.push(
            root.join("scenarios/s5-exhibits")
                .join(sources[i % sources.len()])
                .display()
                .to_string(),
        );
        args.push("1-z".into());
    }
    args.push("--".into());
    args.push(big.display().to_string());
    assert!(Command::new("qpdf").args(&args).status().unwrap().success());
    let big_bytes = std::fs::read(&big).unwrap();
    let read = from_bytes(&big_bytes, Limits::default()).unwrap();
    let glyphs: usize = read.pages.iter().map(|p| p.glyphs.len()).sum();
    let (a, b) =
        (ours(std::slice::from_ref(&big_bytes), 5), poppler(std::slice::from_ref(&big), 5));
    println!(
        "{} pages, {glyphs} glyphs, {} KB: redjury in-process {a:.1?}, pdftotext -bbox {b:.1?}: {:.1}x",
        read.pages.len(),
        big_bytes.len() / 1024,
        b.as_secs_f64() / a.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
