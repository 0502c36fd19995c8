//! Scoring benchmark: 10,000 task × trial results from a warm cache,
//! gating, rendering, voting, aggregation and writing included, timed as the
//! `redjury score` process a user runs (wall time and peak memory from GNU
//! time, `apt-get install time`).
//!
//! Setup (not timed): 10,000 distinct outputs — the example tasks' strong
//! outputs, each trial with its own extra paragraph (the .xlsx term sheet
//! as it is) — and a cache warmed
//! with one stored answer per (prompt, judge). The judges point at a closed
//! port, so a single network call would show up as a failure.
//!
//! Run: `cargo bench --bench score`. Figures go in the README.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use redjury::PanelConfig;
use redjury::{Cache, CallKey, Outcome, StoredResponse};

const OUTPUTS: usize = 10_000;

fn variant(original: &[u8], trial: usize) -> Vec<u8> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(original)).expect("example output is a zip");
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for i in 0..archive.len() {
            let mut f = archive.by_index(i).expect("entry");
            let name = f.name().map(|n| n.to_string()).unwrap_or_default();
            let mut data = Vec::new();
            f.read_to_end(&mut data).expect("read entry");
            if name == "word/document.xml" {
                let xml = String::from_utf8(data).expect("utf-8");
                let marker = format!(
                    "<w:p><w:r><w:t>Trial {trial} closing note.</w:t></w:r></w:p><w:sectPr"
                );
                data = xml.replacen("<w:sectPr", &marker, 1).into_bytes();
            }
            w.start_file(name, opts).expect("start");
            w.write_all(&data).expect("write");
        }
        w.finish().expect("finish");
    }
    out.into_inner()
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let work = std::env::temp_dir().join(format!("redjury-bench-score-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let outputs = work.join("outputs");
    let setup = Instant::now();
    let mut n = 0;
    let mut examples: Vec<PathBuf> = std::fs::read_dir(root.join("scenarios/outputs/strong"))
        .expect("example outputs")
        .flatten()
        .map(|e| e.path())
        // REDJURY_BENCH_TASKS=s1,s4 keeps the outputs whose name holds one of them.
        .filter(|p| match std::env::var("REDJURY_BENCH_TASKS") {
            Ok(only) => only.split(',').any(|t| p.to_string_lossy().contains(t)),
            Err(_) => true,
        })
        .collect();
    examples.sort();
    let per_task = OUTPUTS / examples.len();
    for (i, path) in examples.iter().enumerate() {
        let task = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let original = std::fs::read(path).expect("read output");
        let trials = per_task + usize::from(i < OUTPUTS % examples.len());
        for trial in 1..=trials {
            let dir = outputs.join(&task).join(format!("t{trial:04}"));
            std::fs::create_dir_all(&dir).expect("mkdir");
            std::fs::write(dir.join("contract.docx"), variant(&original, trial))
                .expect("write output");
            n += 1;
        }
    }
    let panel_text = std::fs::read_to_string(root.join("panel.toml"))
        .expect("panel.toml")
        .replace("https://api.openai.com", "http://127.0.0.1:9")
        .replace("https://api.anthropic.com", "http://127.0.0.1:9")
        .replace("https://generativelanguage.googleapis.com", "http://127.0.0.1:9");
    let panel_path = work.join("panel.toml");
    std::fs::write(&panel_path, &panel_text).expect("write panel");
    let panel = PanelConfig::parse(&panel_text, "panel.toml").expect("panel");
    let cache_path = work.join("cache.sqlite");
    let bin = root.join("target/release/redjury");
    let run = |out: &str, extra: &[&str], timed: bool| {
        let mut cmd = if timed {
            let mut c = Command::new("/usr/bin/time");
            c.arg("-v").arg(&bin);
            c
        } else {
            Command::new(&bin)
        };
        cmd.current_dir(&root)
            .args(["score", "--tasks", "rubrics", "--outputs"])
            .arg(&outputs)
            .arg("--panel")
            .arg(&panel_path)
            .arg("--cache")
            .arg(&cache_path)
            .arg("--out")
            .arg(work.join(out))
            .arg("--quiet")
            .args(extra)
            .env("OPENAI_API_KEY", "x")
            .env("ANTHROPIC_API_KEY", "x")
            .env("GEMINI_API_KEY", "x");
        cmd.output().expect("run redjury (build it first: cargo build --release)")
    };
    // The dry run stores every prompt; then one answer per (prompt, judge).
    let dry = run("dry", &["--dry-run"], false);
    assert!(dry.status.success(), "{}", String::from_utf8_lossy(&dry.stderr));
    let cache = Cache::open(&cache_path).expect("cache");
    let prompts = std::fs::read_to_string(work.join("dry/prompts.jsonl")).expect("prompts.jsonl");
    for line in prompts.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("json");
        let hash = v["prompt_hash"].as_str().expect("hash");
        let version = v["template_version"].as_str().expect("version");
        let ids: Vec<String> = serde_json::from_value(v["rubric_ids"].clone()).expect("ids");
        let verdicts: Vec<serde_json::Value> = ids
            .iter()
            .map(
                |id| serde_json::json!({"rubric_id": id, "verdict": "PASS", "justification": "ok"}),
            )
            .collect();
        let text = serde_json::json!({ "verdicts": verdicts }).to_string();
        for j in &panel.judges {
            let params = j.call_params();
            let key = CallKey {
                provider: j.provider.as_str().into(),
                model: j.model.clone(),
                params,
                template_version: version.into(),
                prompt_hash: hash.into(),
                repeat: 0,
            };
            cache
                .put_response(
                    &key,
                    &StoredResponse {
                        outcome: Outcome::Text,
                        text: text.clone(),
                        usage: Default::default(),
                        latency_ms: 1,
                        attempts: 1,
                    },
                )
                .expect("store");
        }
    }
    drop(cache);
    println!("setup: {n} outputs and a warm cache in {:.1} s", setup.elapsed().as_secs_f64());

    // Flush the setup's writes so that their writeback is not charged to
    // the timed run.
    let _ = Command::new("sync").status();
    // One untimed pass fills the render and check caches, as a first real
    // run would; the timed passes follow.
    let first = run("first", &[], false);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let _ = Command::new("sync").status();
    let started = Instant::now();
    let out = run("warm", &[], true);
    let wall = started.elapsed();
    let _ = Command::new("sync").status();
    let started = Instant::now();
    let lean = run("lean", &["--no-views"], false);
    let lean_wall = started.elapsed();
    assert!(lean.status.success(), "{}", String::from_utf8_lossy(&lean.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let rss_kb: Option<u64> = stderr
        .lines()
        .find(|l| l.contains("Maximum resident set size"))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|v| v.trim().parse().ok());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(work.join("warm/summary.json")).expect("summary"),
    )
    .expect("json");
    let requests: u64 = summary["judges"]
        .as_object()
        .map(|m| m.values().map(|j| j["requests"].as_u64().unwrap_or(0)).sum())
        .unwrap_or(0);
    println!("{}", String::from_utf8_lossy(&out.stdout).trim());
    // With RUST_LOG=redjury=info the run logs each stage's time.
    for line in stderr.lines().filter(|l| l.contains("redjury::")) {
        println!("  {line}");
    }
    println!(
        "scored {} task × trial results from the warm cache in {:.2} s, peak memory {}, {requests} network requests",
        summary["counts"]["scored"],
        wall.as_secs_f64(),
        rss_kb
            .map(|k| format!("{} MB", k / 1024))
            .unwrap_or_else(|| "unknown (install GNU time)".into())
    );
    println!("the same with --no-views: {:.2} s", lean_wall.as_secs_f64());
    // Side by side: the same rescoring as two shards at once on the same
    // cache (`score --shard K/2`), then `redjury merge`.
    let _ = Command::new("sync").status();
    let started = Instant::now();
    let parts: Vec<std::process::Child> = (0..2)
        .map(|k| {
            Command::new(&bin)
                .current_dir(&root)
                .args(["score", "--tasks", "rubrics", "--outputs"])
                .arg(&outputs)
                .arg("--panel")
                .arg(&panel_path)
                .arg("--cache")
                .arg(&cache_path)
                .arg("--out")
                .arg(work.join(format!("part{k}")))
                .args(["--quiet", "--shard", &format!("{k}/2")])
                .env("OPENAI_API_KEY", "x")
                .env("ANTHROPIC_API_KEY", "x")
                .env("GEMINI_API_KEY", "x")
                .spawn()
                .expect("run redjury")
        })
        .collect();
    for mut p in parts {
        assert!(p.wait().expect("shard").success());
    }
    let sharded = started.elapsed();
    let started = Instant::now();
    let merged = Command::new(&bin)
        .current_dir(&root)
        .arg("merge")
        .arg(work.join("part0"))
        .arg(work.join("part1"))
        .arg("--out")
        .arg(work.join("merged"))
        .output()
        .expect("merge");
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let merge_wall = started.elapsed();
    let same = std::fs::read(work.join("warm/results.jsonl")).ok()
        == std::fs::read(work.join("merged/results.jsonl")).ok();
    println!(
        "1 process {:.2} s vs 2 shards at once {:.2} s + merge {:.2} s: {:.2}× (results.jsonl identical: {same})",
        wall.as_secs_f64(),
        sharded.as_secs_f64(),
        merge_wall.as_secs_f64(),
        wall.as_secs_f64() / (sharded + merge_wall).as_secs_f64()
    );
    if std::env::var_os("REDJURY_BENCH_KEEP").is_some() {
        println!("kept {} (outputs, panel.toml, cache.sqlite) for profiling", work.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
    }
}
