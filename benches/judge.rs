//! Judge-client benchmark, side by side with the configured rate limit.
//!
//! 1. A mock OpenAI server in a child process allows rpm/60 requests in any
//!    sliding one-second window and answers 429 beyond (with the time until
//!    a slot frees). A backlog of 600 calls goes through one judge, three
//!    ways: `rpm` set to the limit with the mock sending no rate-limit
//!    headers (pacing from `rpm` alone), the same with OpenAI's
//!    `x-ratelimit-*` headers, and `rpm = "auto"` with the headers. For each:
//!    achieved rate vs the limit, share of 429s, and the client's CPU time
//!    per call (this process only).
//!    The same three again while another client spends 30% of the budget
//!    (requests the mock counts in the window but the judge never sees).
//! 2. A warm-cache rerun of 10,000 judge calls.
//!
//! Run: `cargo bench --bench judge`. Figures go in docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// The bench uses a few of the mock's helpers.
#[allow(dead_code)]
#[path = "../tests/common/mock.rs"]
mod mock;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redjury::{Auth, Judge};
use redjury::{Cache, Outcome, StoredResponse};
use redjury::{JudgeConfig, Provider, Rate};
use redjury::{Prompt, Templates};
use redjury::{Rubric, Side, Task};

const PER_SECOND: u64 = 50;
const BACKLOG: usize = 600;
const WARM_CALLS: usize = 10_000;

/// This process's user + system CPU time, from /proc (Linux).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 and 15 of /proc/<pid>/stat (utime, stime) in clock ticks.
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn serve(limit: u64, headers: bool, others: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let reports = if headers { mock::Reports::OpenAi } else { mock::Reports::Nothing };
        let (handler, _) = mock::shared_window("openai", limit as usize, reports, others);
        let server = mock::MockServer::start(handler).await;
        println!("{}", server.url());
        tokio::time::sleep(Duration::from_secs(600)).await;
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

fn config(url: &str, rpm: Rate) -> JudgeConfig {
    let mut c = JudgeConfig::new("bench", Provider::Openai, "bench-model");
    c.base_url = format!("{url}/v1");
    c.api_key_env = None;
    (c.rpm, c.tpm, c.max_concurrency) = (rpm, Rate::PerMinute(100_000_000), 32);
    (c.timeout_secs, c.max_attempts, c.max_output_tokens) = (30, 6, 1024);
    (c.retry_base_ms, c.retry_max_secs) = (500, 10);
    c
}

/// Starts the mock in a child process; its URL.
fn start_mock(headers: bool, others: u64) -> (std::process::Child, String) {
    let exe = std::env::current_exe().expect("current exe");
    let flag = if headers { "headers" } else { "plain" };
    let mut child = Command::new(exe)
        .args(["--serve", &PER_SECOND.to_string(), flag, &others.to_string()])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the mock server");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("server url");
    (child, line.trim().to_string())
}

/// How the mock behaves in one backlog.
struct Mock {
    /// Whether it sends OpenAI's rate-limit headers.
    headers: bool,
    /// Requests a second another client spends from the same budget.
    others: u64,
}

/// One backlog through one judge against a fresh mock.
fn backlog(rt: &tokio::runtime::Runtime, label: &str, rpm: Rate, mock: Mock, prompts: &[Prompt]) {
    let (mut child, url) = start_mock(mock.headers, mock.others);
    let available = (PER_SECOND - mock.others) as f64;
    let cache_path = std::env::temp_dir()
        .join(format!("redjury-bench-judge-{label}-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&cache_path);
    let cache = Arc::new(Cache::open(&cache_path).expect("cache"));
    let judge =
        Arc::new(Judge::new(config(&url, rpm), Auth::Key("bench-key".into())).expect("judge"));
    let cpu0 = cpu_time();
    let started = Instant::now();
    let done = Arc::new(AtomicU64::new(0));
    rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for p in prompts {
            let (judge, cache, done, p) = (judge.clone(), cache.clone(), done.clone(), p.clone());
            set.spawn(async move {
                if judge.call(&p, 0, &cache).await.failure.is_none() {
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        while set.join_next().await.is_some() {}
    });
    let elapsed = started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu0);
    let c = judge.counters.snapshot();
    let ok = done.load(Ordering::Relaxed);
    let rate = ok as f64 / elapsed.as_secs_f64();
    println!(
        "{label}: {ok}/{BACKLOG} answered in {:.2} s = {rate:.2}/s = {:.1}% of the {available}/s left of the limit; {} requests, {} answered 429 ({:.2}%); client CPU {:.3} ms per call",
        elapsed.as_secs_f64(),
        100.0 * rate / available,
        c.requests,
        c.rate_limited,
        100.0 * c.rate_limited as f64 / c.requests.max(1) as f64,
        cpu.as_secs_f64() * 1e3 / BACKLOG as f64
    );
    let _ = child.kill();
    let _ = child.wait();
    drop(cache);
    let _ = std::fs::remove_file(&cache_path);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--serve") {
        let limit = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(PER_SECOND);
        let others = args.get(4).and_then(|v| v.parse().ok()).unwrap_or(0);
        serve(limit, args.get(3).map(String::as_str) == Some("headers"), others);
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let templates = Templates::builtin();
    let t = task();
    let doc = "[p-000] 1. Fees ++subject to indexation++{@Vendor Counsel}\n".repeat(40);
    let prompts: Vec<Prompt> =
        (0..BACKLOG).map(|i| templates.render(&t, &format!("{doc}[p-999] call {i}"))).collect();
    let rpm = Rate::PerMinute((PER_SECOND * 60) as u32);
    let alone = |headers| Mock { headers, others: 0 };
    backlog(&rt, "rpm = limit, no headers", rpm, alone(false), &prompts);
    backlog(&rt, "rpm = limit, headers", rpm, alone(true), &prompts);
    backlog(&rt, "rpm = \"auto\", headers", Rate::Auto, alone(true), &prompts);
    // Another client spends 30% of the same budget.
    let shared = |headers| Mock { headers, others: PER_SECOND * 3 / 10 };
    backlog(&rt, "shared budget, rpm = limit, no headers", rpm, shared(false), &prompts);
    backlog(&rt, "shared budget, rpm = limit, headers", rpm, shared(true), &prompts);
    backlog(&rt, "shared budget, rpm = \"auto\", headers", Rate::Auto, shared(true), &prompts);

    let cache_path = std::env::temp_dir()
        .join(format!("redjury-bench-judge-warm-{}.sqlite", std::process::id()));
    let _ = std::fs::remove_file(&cache_path);
    let cache = Arc::new(Cache::open(&cache_path).expect("cache"));
    // Warm cache: 10,000 stored answers, then 10,000 calls.
    let warm: Vec<_> =
        (0..WARM_CALLS).map(|i| templates.render(&t, &format!("{doc}[p-999] warm {i}"))).collect();
    let cold = Judge::new(config("http://127.0.0.1:9", rpm), Auth::Key("k".into())).expect("judge");
    let text = mock::verdicts_json(&warm[0].rubric_ids, &|_| "FAIL");
    for p in &warm {
        let key = cold.call_key(p, 0);
        cache
            .put_response(
                &key,
                &StoredResponse {
                    outcome: Outcome::Text,
                    text: text.clone(),
                    usage: Default::default(),
                    latency_ms: 0,
                    attempts: 1,
                },
            )
            .expect("store");
    }
    let started = Instant::now();
    rt.block_on(async {
        for p in &warm {
            let r = cold.call(p, 0, &cache).await;
            assert!(r.from_cache);
        }
    });
    let warm_elapsed = started.elapsed();
    println!(
        "warm-cache rerun of {WARM_CALLS} judge calls: {:.2} s ({} network requests)",
        warm_elapsed.as_secs_f64(),
        cold.counters.snapshot().requests
    );
    let _ = std::fs::remove_file(&cache_path);
}
