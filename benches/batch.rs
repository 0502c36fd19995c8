//! Batch-mode benchmark: 10,000 judge calls through one OpenAI judge's
//! batch API, against a mock of the Batch API in a child process (so its
//! work is not counted). Each prompt carries the annotated view of a
//! 304-paragraph contract (a distinct closing line per call), as a real
//! run's would. Reports the client's CPU time and peak memory, the bytes
//! uploaded, the batches made (split under the 200 MB file limit) and the
//! wall time with the mock answering at once.
//!
//! Run: `cargo bench --bench batch`. Figures go in docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// The benches use a few of the test helpers.
#[allow(dead_code, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::batch_mock::BatchMock;
use common::mock;
use redjury::Cache;
use redjury::{Auth, Judge};
use redjury::{JudgeConfig, Provider, Rate};
use redjury::{Prompt, Templates};
use redjury::{Rubric, Side, Task};

const CALLS: usize = 10_000;

fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn peak_rss_mb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

fn serve() {
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    rt.block_on(async {
        let mock = BatchMock::new("openai", mock::answering("openai", &["r01", "r02"]));
        let server = mock::MockServer::start(mock.handler()).await;
        println!("{}", server.url());
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            let created = mock.created.lock().unwrap().clone();
            if !created.is_empty() {
                eprintln!(
                    "mock: batches {created:?}, {} bytes received",
                    mock.uploaded.load(std::sync::atomic::Ordering::Relaxed)
                );
            }
        }
    });
}

fn task() -> Task {
    let rubrics = (1..=10)
        .map(|i| {
            Rubric::llm(&format!("r{i:02}"), &format!("Inserts clause {i}"), "Legal correctness", 5)
        })
        .collect();
    Task::named("redline-s1-t1-g01a", Side::A, "Vendor Counsel", rubrics)
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--serve") {
        serve();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe).arg("--serve").stdout(Stdio::piped()).spawn().unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
    let url = url.trim().to_string();

    let doc = redjury::docx::from_bytes(
        common::synthetic_contract(38, "Base."),
        redjury::docx::Limits::default(),
    )
    .unwrap();
    let view = common::annotated(&doc, "redline-s1-t1-g01a");
    let templates = Templates::builtin();
    let t = task();
    let prompts: Vec<Prompt> =
        (0..CALLS).map(|i| templates.render(&t, &format!("{view}\n[p-999] call {i}"))).collect();
    println!("{CALLS} prompts of {} KB each", prompts[0].user().len() / 1024);

    let cache_path =
        std::env::temp_dir().join(format!("redjury-bench-batch-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&cache_path);
    let cache = Arc::new(Cache::open(&cache_path).unwrap());
    let mut c = JudgeConfig::new("gpt", Provider::Openai, "bench-model");
    c.base_url = format!("{url}/v1");
    c.api_key_env = None;
    (c.rpm, c.tpm) = (Rate::PerMinute(600_000), Rate::Auto);
    c.batch_poll_ms = 100;
    let judge = Judge::new(c, Auth::Key("bench-key".into())).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let rss_before = peak_rss_mb();
    let cpu0 = cpu_time();
    let started = Instant::now();
    let calls: Vec<(Prompt, u32)> = prompts.into_iter().map(|p| (p, 0)).collect();
    let (bytes, unanswered) = rt.block_on(async {
        let mut plans = vec![judge.submit_batches(calls, &cache).await];
        struct Quiet;
        impl redjury::BatchProgress for Quiet {
            fn batch(&self, _: &str, _: &redjury::BatchReport) {}
        }
        redjury::wait_for_batches(&mut plans, &cache, &Quiet).await;
        let plan = plans.pop().unwrap();
        let report = plan.report().clone();
        println!(
            "batches: {}, answered {}, failed {}",
            report.batches, report.answered, report.failed
        );
        (plan.bytes_sent(), plan.unanswered().len())
    });
    let wall = started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu0);
    println!(
        "{CALLS} calls by batch in {:.1} s: {unanswered} unanswered; client CPU {:.1} s ({:.2} ms per call); peak memory {} MB ({} MB before the run, the prompts included); {:.0} MB uploaded ({:.1} KB per call)",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e3 / CALLS as f64,
        peak_rss_mb(),
        rss_before,
        bytes as f64 / 1e6,
        bytes as f64 / 1e3 / CALLS as f64
    );
    println!("answers stored: {}", cache.response_count().unwrap());
    let _ = child.kill();
    let _ = child.wait();
    drop(cache);
    let _ = std::fs::remove_file(&cache_path);
}
