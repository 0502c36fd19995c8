//! Reward-service benchmark: `redjury serve` (the release binary) over
//! HTTP, side by side with the same work done in process, and against a
//! rate-limited judge.
//!
//! 1. Warm: a 304-paragraph contract (64 distinct variants, 3 judges, every
//!    judge answer, render and check already in the cache after one
//!    untimed pass). Requests per second and p50/p99 latency with 1 and 32
//!    concurrent clients; in-process `Scorer::score` on the same files as
//!    the peer, so the difference is the server's overhead (HTTP, JSON,
//!    queue, results log).
//! 2. Rate-limited: three mock judges that each allow 20 requests per
//!    one-second window and answer 429 beyond; the panel says rpm 1200
//!    (20/s). 64 concurrent clients send 300 new documents: each judge's
//!    accepted rate against the limit, and the share of 429s.
//!
//! Run: `cargo build --release && cargo bench --bench serve`. Figures go
//! in docs/benchmarks.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// The benches use a few of the test helpers.
#[allow(dead_code, unused_imports)]
#[path = "../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::mock;
use serde_json::json;

const SECTIONS: usize = 38; // × 8 = 304 paragraphs
const VARIANTS: usize = 64;
const TASK: &str = "redline-s1-t1-g01a";
const LIMIT_PER_SECOND: u64 = 20;

fn panel(dir: &Path, urls: &[String; 3], rpm: u32) -> PathBuf {
    let judge = |name: &str, provider: &str, url: &str| {
        format!(
            "[[judge]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"bench\"\nbase_url = \"{url}\"\napi_key_env = \"\"\nrpm = {rpm}\ntpm = 100000000\nmax_concurrency = 64\ntimeout_secs = 30\nmax_attempts = 6\nretry_base_ms = 500\nretry_max_secs = 10\n\n"
        )
    };
    let text = format!(
        "[vote]\nquorum = 2\n\n{}{}{}",
        judge("gpt", "openai", &format!("{}/v1", urls[0])),
        judge("claude", "anthropic", &urls[1]),
        judge("gemini", "gemini", &urls[2]),
    );
    let path = dir.join(format!("panel-{rpm}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

fn answering(provider: &'static str) -> mock::Handler {
    Arc::new(move |req: &mock::Recorded, _| {
        mock::ok(mock::success_body(provider, &mock::verdicts_json(&req.rubric_ids(), &|_| "PASS")))
    })
}

/// When a rate-limited judge accepted and refused requests.
#[derive(Default)]
struct Tally {
    accepted: Vec<Instant>,
    refused: usize,
}

/// A judge that allows `limit` requests per one-second window.
fn limited(provider: &'static str, limit: u64) -> (mock::Handler, Arc<std::sync::Mutex<Tally>>) {
    let window = Arc::new(std::sync::Mutex::new((0u64, 0u64)));
    let tally: Arc<std::sync::Mutex<Tally>> = Arc::default();
    let seen = tally.clone();
    let start = Instant::now();
    let handler: mock::Handler = Arc::new(move |req: &mock::Recorded, _| {
        let second = start.elapsed().as_secs();
        let mut w = window.lock().unwrap();
        if w.0 != second {
            *w = (second, 0);
        }
        w.1 += 1;
        if w.1 > limit {
            seen.lock().unwrap().refused += 1;
            return mock::status(
                429,
                &[("retry-after", "1")],
                r#"{"error":{"message":"rate limited","type":"rate_limit_error"}}"#,
            );
        }
        seen.lock().unwrap().accepted.push(Instant::now());
        mock::ok(mock::success_body(provider, &mock::verdicts_json(&req.rubric_ids(), &|_| "PASS")))
    });
    (handler, tally)
}

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(root: &Path, panel: &Path, work: &Path, cache: &str) -> Server {
    let location = if cache.starts_with("postgres") {
        cache.to_string()
    } else {
        work.join(cache).display().to_string()
    };
    let bin = root.join("target/release/redjury");
    let mut child = Command::new(&bin)
        .current_dir(root)
        .args(["serve", "--tasks", "rubrics", "--bind", "127.0.0.1:0", "--queue", "4096"])
        .arg("--panel")
        .arg(panel)
        .arg("--cache")
        .arg(&location)
        .arg("--allow-path")
        .arg(work)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run redjury (build it first: cargo build --release)");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.to_string());
            }
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(60)).expect("server starts");
    Server { child, url }
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Sends `total` requests from `clients` concurrent clients, cycling over
/// `docs`; returns the wall time and every request's latency.
async fn load(
    url: &str,
    docs: &[PathBuf],
    clients: usize,
    total: usize,
) -> (Duration, Vec<Duration>) {
    let client = reqwest::Client::new();
    let next = Arc::new(AtomicUsize::new(0));
    let docs = Arc::new(docs.to_vec());
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let (client, next, docs, url) =
            (client.clone(), next.clone(), docs.clone(), url.to_string());
        set.spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return lat;
                }
                let body =
                    json!({"task": TASK, "path": docs[i % docs.len()].display().to_string()});
                let t = Instant::now();
                let resp = client.post(format!("{url}/v1/score")).json(&body).send().await.unwrap();
                assert_eq!(
                    resp.status().as_u16(),
                    200,
                    "{}",
                    resp.text().await.unwrap_or_default()
                );
                let _ = resp.bytes().await.unwrap();
                lat.push(t.elapsed());
            }
        });
    }
    let mut all = Vec::new();
    while let Some(l) = set.join_next().await {
        all.extend(l.unwrap());
    }
    all.sort();
    (started.elapsed(), all)
}

fn report(label: &str, wall: Duration, lat: &[Duration]) {
    println!(
        "{label}: {} requests in {:.2} s = {:.0} req/s, p50 {}, p99 {}",
        lat.len(),
        wall.as_secs_f64(),
        lat.len() as f64 / wall.as_secs_f64(),
        ms(percentile(lat, 0.5)),
        ms(percentile(lat, 0.99))
    );
}

fn write_variants(dir: &Path, prefix: &str, n: usize) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    (0..n)
        .map(|i| {
            let path = dir.join(format!("{prefix}{i:04}.docx"));
            std::fs::write(
                &path,
                common::synthetic_contract(SECTIONS, &format!("Variant {prefix}{i}.")),
            )
            .unwrap();
            path
        })
        .collect()
}

async fn warm(root: &Path, work: &Path) {
    let mocks = [
        mock::MockServer::start(answering("openai")).await,
        mock::MockServer::start(answering("anthropic")).await,
        mock::MockServer::start(answering("gemini")).await,
    ];
    let urls = [mocks[0].url(), mocks[1].url(), mocks[2].url()];
    let panel = panel(work, &urls, 600_000);
    let docs = write_variants(&work.join("warm"), "w", VARIANTS);
    let server = start_server(root, &panel, work, "warm.sqlite");
    load(&server.url, &docs, 16, docs.len()).await;
    let calls: usize = mocks.iter().map(|m| m.requests().len()).sum();
    println!(
        "warm-up: {VARIANTS} distinct 304-paragraph outputs, {calls} judge calls, now all cached"
    );

    let (wall, lat) = load(&server.url, &docs, 1, 400).await;
    report("1 client", wall, &lat);
    let one_p50 = percentile(&lat, 0.5);
    let (wall, lat) = load(&server.url, &docs, 32, 3200).await;
    report("32 clients", wall, &lat);
    drop(server);

    // The peer: the same requests through the library, in this process.
    let config = redjury::ScorerConfig {
        panel: redjury::PanelConfig::load(&panel).unwrap(),
        templates: redjury::Templates::builtin(),
        cache_path: work.join("warm.sqlite"),
        mode: redjury::JudgeMode::Live,
        dispatch: redjury::Dispatch::Live,
        reader: redjury::Reader::InProcess,
    };
    let scorer = redjury::Scorer::new(config).unwrap();
    let task = Arc::new(
        redjury::load_tasks(&root.join("rubrics"))
            .unwrap()
            .into_iter()
            .find(|t| t.name == TASK)
            .unwrap(),
    );
    let mut lat = Vec::new();
    let started = Instant::now();
    for i in 0..400 {
        let t = Instant::now();
        let bytes = std::fs::read(&docs[i % docs.len()]).unwrap();
        let row = scorer.score(task.clone(), redjury::OutputSource::Bytes(bytes), "bench").await;
        assert_eq!(row.status, redjury::Status::Scored);
        lat.push(t.elapsed());
    }
    let wall = started.elapsed();
    lat.sort();
    report("in-process Scorer::score, 1 caller", wall, &lat);
    let p50 = percentile(&lat, 0.5);
    println!(
        "server overhead at p50 (1 client): {} per request ({:.2}× in-process)",
        ms(one_p50.saturating_sub(p50)),
        one_p50.as_secs_f64() / p50.as_secs_f64()
    );
    let extra: usize = mocks.iter().map(|m| m.requests().len()).sum::<usize>() - calls;
    println!("judge calls after warm-up: {extra}");

    // The same on a PostgreSQL store (REDJURY_BENCH_POSTGRES, a URL),
    // after its own warm-up: the shared store's cost beside SQLite's.
    if let Ok(url) = std::env::var("REDJURY_BENCH_POSTGRES") {
        let sep = if url.contains('?') { '&' } else { '?' };
        let store = format!("{url}{sep}redjury_schema=bench_{}", std::process::id());
        let server = start_server(root, &panel, work, &store);
        load(&server.url, &docs, 16, docs.len()).await;
        let (wall, lat) = load(&server.url, &docs, 1, 400).await;
        report("PostgreSQL store, 1 client", wall, &lat);
        let (wall, lat) = load(&server.url, &docs, 32, 3200).await;
        report("PostgreSQL store, 32 clients", wall, &lat);
    }
}

async fn rate_limited(root: &Path, work: &Path) {
    let handlers = [
        limited("openai", LIMIT_PER_SECOND),
        limited("anthropic", LIMIT_PER_SECOND),
        limited("gemini", LIMIT_PER_SECOND),
    ];
    let mut mocks = Vec::new();
    for (h, _) in &handlers {
        mocks.push(mock::MockServer::start(h.clone()).await);
    }
    let urls = [mocks[0].url(), mocks[1].url(), mocks[2].url()];
    let panel = panel(work, &urls, (LIMIT_PER_SECOND * 60) as u32);
    let docs = write_variants(&work.join("limited"), "l", 300);
    let server = start_server(root, &panel, work, "limited.sqlite");
    let (wall, lat) = load(&server.url, &docs, 64, docs.len()).await;
    report("64 clients, 300 new outputs, judges limited", wall, &lat);
    for (name, (_, tally)) in ["gpt", "claude", "gemini"].iter().zip(&handlers) {
        let t = tally.lock().unwrap();
        let (first, last) = (t.accepted[0], t.accepted[t.accepted.len() - 1]);
        let span = (last - first).as_secs_f64();
        // n accepted requests span n − 1 intervals.
        let rate = (t.accepted.len() - 1) as f64 / span;
        let sent = t.accepted.len() + t.refused;
        println!(
            "  {name}: {sent} requests, {} answered 429 ({:.2}%), accepted {rate:.2}/s over {span:.1} s = {:.1}% of the {LIMIT_PER_SECOND}/s limit",
            t.refused,
            t.refused as f64 * 100.0 / sent as f64,
            rate * 100.0 / LIMIT_PER_SECOND as f64
        );
    }
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let work = std::env::temp_dir().join(format!("redjury-bench-serve-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        warm(&root, &work).await;
        rate_limited(&root, &work).await;
    });
    let _ = std::fs::remove_dir_all(&work);
}
