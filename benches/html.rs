//! HTML report benchmark: a 10,000-row results folder (14 rubrics and 3
//! judges per row, justifications included, a 160-paragraph annotated
//! view per row), `redjury report --html` timed as the process a user runs
//! (release binary), the file's size, and the time the page takes to first
//! render its task table in headless Chromium (measured by the page:
//! `performance.now()` when the table first fills).
//!
//! Run: `cargo build --release && cargo bench --bench html` (Chromium:
//! `apt-get install chromium`). Figures go in docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// The benches use a few of the test helpers.
#[allow(dead_code, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use serde_json::json;

const ROWS: usize = 10_000;
const CATEGORIES: [&str; 3] = ["Legal correctness", "Commercial Context", "Negotiation Quality"];

fn row(i: usize) -> serde_json::Value {
    let task = format!("redline-s{}-t{}-g{:02}a", i % 3 + 1, i % 4 + 1, (i / 12) % 40);
    let judges = ["gpt", "claude", "gemini"];
    let rubrics: Vec<serde_json::Value> = (0..14)
        .map(|r| {
            let v = |j: usize| if (i + r + j).is_multiple_of(5) { "FAIL" } else { "PASS" };
            json!({
                "id": format!("r{r:02}"), "kind": "llm", "weight": if r % 5 == 4 { -4 } else { 5 },
                "category": CATEGORIES[r % 3],
                "verdict": v(0),
                "votes": {"gpt": v(0), "claude": v(1), "gemini": v(2)},
                "justifications": judges.iter().map(|j| (j.to_string(), json!(format!("{j}: the tracked change in clause {r}.{i} does what the criterion asks for; the cap moved from 200% to 150% of the Fees.")))).collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    json!({
        "task": task, "trial": format!("t{i}"), "scenario": (i % 3 + 1).to_string(), "turn": i % 4 + 1,
        "side": if i.is_multiple_of(2) { "A" } else { "B" }, "group": task.trim_end_matches('a'), "status": "scored",
        "gate": {"passed": true, "reason": "3 new tracked change(s) by 'Vendor Counsel'"},
        "reward": (i % 100) as f64 / 100.0, "earned": 40, "penalty": 0, "total_positive": 55, "rubrics": rubrics,
    })
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let work = std::env::temp_dir().join(format!("redjury-bench-html-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let run = work.join("run");
    std::fs::create_dir_all(run.join("views")).unwrap();
    let doc = redjury::docx::from_bytes(
        common::synthetic_contract(20, "Base."),
        redjury::docx::Limits::default(),
    )
    .unwrap();
    let base_view = common::annotated(&doc, "bench");
    let mut results = std::fs::File::create(run.join("results.jsonl")).unwrap();
    let mut rows = Vec::with_capacity(ROWS);
    for i in 0..ROWS {
        let r = row(i);
        writeln!(results, "{r}").unwrap();
        let name = format!("{}__t{i}.md", r["task"].as_str().unwrap());
        std::fs::write(run.join("views").join(name), format!("{base_view}\n[p-999] row {i}\n"))
            .unwrap();
        rows.push(serde_json::from_value::<redjury::TaskResult>(r).unwrap());
    }
    drop(results);
    let summary = redjury::Summary::build(
        &rows,
        vec![],
        vec![],
        redjury::Bootstrap { seed: 0, resamples: 1000 },
        None,
    );
    redjury::write_summary(&run, &summary).unwrap();
    println!("{ROWS} rows, views of {} KB each", base_view.len() / 1024);
    let _ = Command::new("sync").status();

    let bin = root.join("target/release/redjury");
    let file = work.join("report.html");
    let started = Instant::now();
    let out = Command::new(&bin)
        .args(["report", &run.display().to_string(), "--html", &file.display().to_string()])
        .output()
        .expect("run redjury (build it first: cargo build --release)");
    let took = started.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let size = std::fs::metadata(&file).unwrap().len();
    let html = std::fs::read_to_string(&file).unwrap();
    let embedded = html.matches("__t").count();
    println!(
        "report --html: {:.2} s, {:.1} MB file ({} views embedded within the default 64 MiB budget)",
        took.as_secs_f64(),
        size as f64 / 1e6,
        embedded
    );
    let profile = work.join("chromium");
    let started = Instant::now();
    let dom = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=60000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}#selftest", file.display()))
        .output();
    match dom {
        Ok(o) => {
            let dom = String::from_utf8_lossy(&o.stdout);
            let ms = dom
                .split("data-rendered-ms=\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .unwrap_or("?");
            let pass = dom.contains("data-selftest=\"pass\"");
            println!(
                "Chromium: table first rendered {ms} ms after navigation start; self-test (filter, open a task) {}; whole headless run {:.1} s",
                if pass { "passed" } else { "FAILED" },
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => println!("Chromium not run ({e}): apt-get install chromium"),
    }
    if std::env::var_os("REDJURY_BENCH_KEEP").is_some() {
        println!("kept {}", work.display());
        return;
    }
    let _ = std::fs::remove_dir_all(&work);
}
