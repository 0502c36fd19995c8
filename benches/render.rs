//! Rendering benchmark: the whole shared corpus and a large synthetic
//! contract, side by side with pandoc (`pandoc -f docx
//! --track-changes=all -t markdown`) in the same run.
//!
//! Run: `cargo bench --bench render` (installs nothing; pandoc comes from
//! Debian's package: `apt-get install pandoc`). Figures go in the README.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// The benches use a few of the test helpers.
#[allow(dead_code, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use redjury::docx::{Limits, from_bytes};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ours_in_process(files: &[Vec<u8>], rounds: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        for bytes in files {
            if let Ok(doc) = from_bytes(bytes.clone(), Limits::default()) {
                std::hint::black_box(common::annotated(&doc, "x"));
            }
        }
        times.push(start.elapsed());
    }
    median(times)
}

fn processes(
    program: &str,
    args: &dyn Fn(&Path) -> Vec<String>,
    files: &[PathBuf],
    rounds: usize,
) -> Option<Duration> {
    let mut times = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        for f in files {
            let out = Command::new(program).args(args(f)).output().ok()?;
            std::hint::black_box(out.stdout.len());
        }
        times.push(start.elapsed());
    }
    Some(median(times))
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut corpus: Vec<PathBuf> = Vec::new();
    for folder in ["pandoc", "powertools"] {
        if let Ok(dir) = std::fs::read_dir(root.join("../shared/corpus").join(folder)) {
            corpus.extend(
                dir.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "docx")),
            );
        }
    }
    corpus.sort();
    let synthetic = common::synthetic_contract(40, "");
    let synthetic_path = std::env::temp_dir().join("redjury-bench-synthetic.docx");
    std::fs::write(&synthetic_path, &synthetic).expect("write synthetic contract");
    let doc = from_bytes(synthetic.clone(), Limits::default()).expect("synthetic loads");
    let mut paragraphs = 0;
    doc.for_each_body_paragraph(&mut |_| paragraphs += 1);
    println!(
        "synthetic contract: {paragraphs} paragraphs, {} revisions, {} comments, {} KiB",
        doc.revisions.len(),
        doc.comments.len(),
        synthetic.len() / 1024
    );

    let per_synthetic = ours_in_process(std::slice::from_ref(&synthetic), 50);
    println!(
        "redjury, synthetic contract, load + annotated view: {:.2} ms",
        per_synthetic.as_secs_f64() * 1e3
    );

    let corpus_bytes: Vec<Vec<u8>> = corpus.iter().filter_map(|p| std::fs::read(p).ok()).collect();
    let ours_corpus = ours_in_process(&corpus_bytes, 5);
    println!(
        "redjury, {} corpus files in-process: {:.1} ms",
        corpus.len(),
        ours_corpus.as_secs_f64() * 1e3
    );

    let exe = root.join("target/release/redjury");
    let ours_cli = exe.exists().then(|| {
        processes(
            exe.to_str().unwrap_or("redjury"),
            &|f| vec!["render".into(), f.display().to_string()],
            &corpus,
            1,
        )
    });

    let pandoc_args = |f: &Path| {
        vec![
            "-f".into(),
            "docx".into(),
            "--track-changes=all".into(),
            "-t".into(),
            "markdown".into(),
            f.display().to_string(),
        ]
    };
    match processes("pandoc", &pandoc_args, &corpus, 1) {
        Some(pandoc_corpus) => {
            let pandoc_synthetic =
                processes("pandoc", &pandoc_args, std::slice::from_ref(&synthetic_path), 3)
                    .unwrap_or_default();
            println!(
                "pandoc, corpus (one process per file): {:.1} ms",
                pandoc_corpus.as_secs_f64() * 1e3
            );
            println!("pandoc, synthetic contract: {:.1} ms", pandoc_synthetic.as_secs_f64() * 1e3);
            println!(
                "throughput ratio, corpus, redjury in-process vs pandoc: {:.0}x",
                pandoc_corpus.as_secs_f64() / ours_corpus.as_secs_f64()
            );
            println!(
                "throughput ratio, synthetic, redjury in-process vs pandoc: {:.0}x",
                pandoc_synthetic.as_secs_f64() / per_synthetic.as_secs_f64()
            );
            if let Some(Some(cli)) = ours_cli {
                println!(
                    "redjury CLI, corpus (one process per file): {:.1} ms",
                    cli.as_secs_f64() * 1e3
                );
                println!(
                    "throughput ratio, corpus, process per file, redjury vs pandoc: {:.0}x",
                    pandoc_corpus.as_secs_f64() / cli.as_secs_f64()
                );
            }
        }
        None => println!(
            "pandoc not found: install it (apt-get install pandoc) for the side-by-side figures"
        ),
    }
}
