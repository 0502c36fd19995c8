//! `score --batch` end to end against mocks of each provider's batch API:
//! the same results as a live run at half the price, resumed after a kill
//! without paying again, split under the limits, and expired items taking
//! the fallback the user chose.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::common::batch_mock::{BatchMock, Faults};
use crate::common::e2e::*;
use crate::common::mock::*;
use serde_json::Value;

struct Providers {
    mocks: Vec<Arc<BatchMock>>,
    servers: Vec<MockServer>,
}

impl Providers {
    /// Three judges whose live endpoints answer as the attorney did for
    /// strong outputs, batch endpoints beside them.
    async fn start() -> Providers {
        let mut mocks = Vec::new();
        let mut servers = Vec::new();
        for provider in ["openai", "anthropic", "gemini"] {
            let mock = BatchMock::new(provider, stand_in(provider, "strong"));
            servers.push(MockServer::start(mock.handler()).await);
            mocks.push(mock);
        }
        Providers { mocks, servers }
    }

    fn panel(&self, dir: &Path, extra: &str) -> PathBuf {
        let judge = |name: &str, provider: &str, url: String, model: &str, env: &str| {
            format!(
                "[[judge]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{url}\"\napi_key_env = \"{env}\"\nrpm = 6000\ntpm = 10000000\nmax_concurrency = 8\ntimeout_secs = 10\nmax_attempts = 3\nretry_base_ms = 10\nbatch_poll_ms = 20\n{extra}\n"
            )
        };
        let s = &self.servers;
        let text = format!(
            "[vote]\nquorum = 2\n\n{}{}{}",
            judge("gpt", "openai", format!("{}/v1", s[0].url()), "gpt-test", "E2E_OPENAI_KEY"),
            judge("claude", "anthropic", s[1].url(), "claude-test", "E2E_ANTHROPIC_KEY"),
            judge("gemini", "gemini", s[2].url(), "gemini-test", "E2E_GEMINI_KEY"),
        );
        let path = dir.join("panel.toml");
        std::fs::write(&path, text).unwrap();
        path
    }

    fn created(&self) -> Vec<Vec<usize>> {
        self.mocks.iter().map(|m| m.created.lock().unwrap().clone()).collect()
    }

    fn live_calls(&self) -> usize {
        self.mocks.iter().map(|m| m.live_calls.load(Ordering::Relaxed)).sum()
    }

    fn faults(&self, f: impl Fn() -> Faults) {
        for m in &self.mocks {
            *m.faults.lock().unwrap() = f();
        }
    }

    fn hold(&self, on: bool) {
        for m in &self.mocks {
            m.hold.store(on, Ordering::Relaxed);
        }
    }
}

const PRICES: &str = "[models.gpt-test]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\nbatch_input = 0.5\nbatch_output = 2.0\n[models.claude-test]\ninput = 1.0\ncached_input = 0.1\ncache_write = 1.25\noutput = 5.0\nbatch_input = 0.5\nbatch_output = 2.5\n[models.gemini-test]\ninput = 0.25\ncached_input = 0.025\noutput = 1.5\nbatch_input = 0.125\nbatch_output = 0.75\n";

fn run_args(panel: &Path, dir: &Path, out: &str, cache: &str, extra: &[&str]) -> Vec<String> {
    let prices = dir.join("prices.toml");
    std::fs::write(&prices, PRICES).unwrap();
    let mut a = score_args("gold/redlines", panel, &dir.join(out), &dir.join(cache));
    a.extend(["--prices".to_string(), prices.display().to_string()]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// (task, trial) → the row's status, reward and verdicts.
fn outcome(dir: &Path) -> Vec<(String, Value, Value, Vec<Value>)> {
    results(dir)
        .into_iter()
        .map(|r| {
            let verdicts =
                r["rubrics"].as_array().unwrap().iter().map(|x| x["votes"].clone()).collect();
            (
                r["task"].as_str().unwrap().to_string(),
                r["status"].clone(),
                r["reward"].clone(),
                verdicts,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_run_gives_the_live_results_at_the_batch_price() {
    let p = Providers::start().await;
    let dir = temp_dir("batch-same");
    let panel = p.panel(&dir, "");
    let (code, out, err) = redjury(run_args(&panel, &dir, "live", "live.sqlite", &[]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let live_calls = p.live_calls();
    assert!(live_calls > 0);
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "batch", "batch.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.live_calls(), live_calls, "no live call in a batch run");
    assert_eq!(p.created(), vec![vec![live_calls / 3]; 3], "one batch per judge, every call in it");
    assert_eq!(outcome(&dir.join("batch")), outcome(&dir.join("live")), "the same rows");
    let (live, batch) = (summary(&dir.join("live")), summary(&dir.join("batch")));
    for judge in ["gpt", "claude", "gemini"] {
        let (l, b) = (&live["judges"][judge], &batch["judges"][judge]);
        assert_eq!(b["batch_calls"], live_calls / 3, "{judge}: {b}");
        assert_eq!(b["requests"], 0, "{judge}: no live request");
        let (lc, bc) = (l["cost"].as_f64().unwrap(), b["cost"].as_f64().unwrap());
        assert!((lc - 2.0 * bc).abs() < 1e-9, "{judge}: batch {bc} is half of live {lc}");
    }
}

/// `redjury score --batch` in the background.
fn spawn_batch_run(panel: &Path, dir: &Path) -> std::process::Child {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_redjury"));
    cmd.args(run_args(panel, dir, "run", "cache.sqlite", &["--batch"])).current_dir(root());
    for k in ["E2E_OPENAI_KEY", "E2E_ANTHROPIC_KEY", "E2E_GEMINI_KEY"] {
        cmd.env(k, "sk-e2e-secret");
    }
    cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    cmd.spawn().expect("start redjury")
}

/// Batches the cache records as submitted.
fn recorded_submitted(cache: &Path) -> usize {
    let Ok(c) = redjury::cache::Cache::open(cache) else { return 0 };
    c.batches()
        .map(|b| b.iter().filter(|x| x.state == redjury::cache::BatchState::Submitted).count())
        .unwrap_or(0)
}

async fn until(what: &str, f: impl Fn() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < Duration::from_secs(60), "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_batch_run_resumes_without_paying_again() {
    let p = Providers::start().await;
    let dir = temp_dir("batch-resume");
    let panel = p.panel(&dir, "");
    p.hold(true);
    let mut child = spawn_batch_run(&panel, &dir);
    // Killed once every batch is in flight: accepted and recorded.
    until("every judge's batch", || recorded_submitted(&dir.join("cache.sqlite")) == 3).await;
    child.kill().expect("kill -9");
    let _ = child.wait();
    let submitted = p.created();
    let (code, list, err) = redjury(
        args(&["batches", "--cache", &dir.join("cache.sqlite").display().to_string()]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(list.lines().filter(|l| l.contains("\tsubmitted\t")).count(), 3, "{list}");
    p.hold(false);
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.created(), submitted, "nothing submitted again: the same batches were polled");
    assert_eq!(p.live_calls(), 0);
    assert!(
        results(&dir.join("run"))
            .iter()
            .all(|r| r["status"] == "scored" || r["status"] == "gate_failed")
    );
    let (_, list, _) = redjury(
        args(&["batches", "--cache", &dir.join("cache.sqlite").display().to_string()]),
        false,
    )
    .await;
    assert_eq!(list.lines().filter(|l| l.contains("\tcollected\t")).count(), 3, "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_submissions_are_split() {
    let p = Providers::start().await;
    let dir = temp_dir("batch-split");
    let panel = p.panel(&dir, "batch_max_requests = 3");
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    for sizes in p.created() {
        let total: usize = sizes.iter().sum();
        assert!(sizes.iter().all(|n| *n <= 3), "{sizes:?}");
        assert_eq!(sizes.len(), total.div_ceil(3), "{sizes:?}");
    }
    // By bytes: a limit a little over two prompts.
    let p = Providers::start().await;
    let dir2 = temp_dir("batch-split-bytes");
    let panel = p.panel(&dir2, "batch_max_bytes = 60000");
    let (code, out, err) =
        redjury(run_args(&panel, &dir2, "run", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    for (sizes, m) in p.created().iter().zip(&p.mocks) {
        assert!(sizes.len() > 1, "split by size: {sizes:?}");
        let bodies = m.bodies.lock().unwrap().clone();
        assert!(bodies.iter().all(|b| *b <= 60_000), "{}: {bodies:?}", m.provider);
    }
}

/// Batch items that did not run — every `every`-th item of a batch, as
/// `faults` makes them fail — are left incomplete with `reason` under
/// `--batch-fallback incomplete` (nothing goes live), and by default sent
/// live, exactly those calls, so every row is scored.
async fn failed_items_take_the_chosen_fallback(
    tag: &str,
    faults: fn() -> Faults,
    every: usize,
    reason: &str,
) {
    let p = Providers::start().await;
    p.faults(faults);
    let dir = temp_dir(tag);
    let panel = p.panel(&dir, "");
    let a =
        run_args(&panel, &dir, "kept", "a.sqlite", &["--batch", "--batch-fallback", "incomplete"]);
    let (code, out, err) = redjury(a, true).await;
    assert!(code == 0 || code == 3, "{out}{err}");
    assert_eq!(p.live_calls(), 0, "nothing sent live");
    let text = std::fs::read_to_string(dir.join("kept/results.jsonl")).unwrap();
    assert!(text.contains(reason), "the reason is recorded");
    assert!(results(&dir.join("kept")).iter().any(|r| r["status"] == "incomplete"));
    let p = Providers::start().await;
    p.faults(faults);
    let panel = p.panel(&dir, "");
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "live", "b.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let failed: usize = p.created().iter().flatten().map(|n| n / every).sum();
    assert_eq!(p.live_calls(), failed, "exactly the failed calls went live");
    assert!(results(&dir.join("live")).iter().all(|r| r["status"] != "incomplete"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_items_take_the_chosen_fallback() {
    let faults = || Faults { expire_every: 2, ..Faults::default() };
    failed_items_take_the_chosen_fallback(
        "batch-expired",
        faults,
        2,
        "the batch expired before this call ran",
    )
    .await;
}

/// --dry-run wins over --batch: with every key set, nothing is uploaded,
/// no batch is created, no call goes live, and the estimate is at the
/// batch price. (It once submitted the batches and then judged live.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_dry_run_submits_nothing() {
    let p = Providers::start().await;
    let dir = temp_dir("batch-dry-keys");
    let panel = p.panel(&dir, "");
    let a = run_args(&panel, &dir, "dry", "a.sqlite", &["--batch", "--dry-run"]);
    let (code, out, err) = redjury(a, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(p.created().iter().all(|b| b.is_empty()), "no batch created: {:?}", p.created());
    assert_eq!(p.live_calls(), 0, "no call sent live");
    let s = summary(&dir.join("dry"));
    assert_eq!(s["dry_run"], true);
    for (name, j) in s["judges"].as_object().unwrap() {
        assert_eq!(j["requests"], 0, "{name}");
        assert!(j["estimate"]["calls"].as_u64().unwrap() > 0, "{name}: {j}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errored_items_take_the_chosen_fallback() {
    // Each provider's errored item (OpenAI's error file, Anthropic's
    // "errored" result, Gemini's inline error) is read as errored, never as
    // an answer.
    let faults = || Faults { error_every: 3, ..Faults::default() };
    failed_items_take_the_chosen_fallback("batch-errored", faults, 3, "the batch item errored")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_batch_and_a_cancelled_one_fall_back() {
    let p = Providers::start().await;
    p.faults(|| Faults { expire_batches: true, ..Faults::default() });
    let dir = temp_dir("batch-whole");
    let panel = p.panel(&dir, "");
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "expired", "a.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let batched: usize = p.created().iter().flatten().sum();
    assert_eq!(p.live_calls(), batched, "every call of the expired batches went live");

    // Cancelled while held, then collected by the next run.
    let p = Providers::start().await;
    let panel = p.panel(&dir, "");
    p.hold(true);
    let mut child = spawn_batch_run(&panel, &dir);
    until("every judge's batch", || recorded_submitted(&dir.join("cache.sqlite")) == 3).await;
    child.kill().expect("kill");
    let _ = child.wait();
    let cache = dir.join("cache.sqlite").display().to_string();
    let panel_arg = panel.display().to_string();
    let (code, out, err) =
        redjury(args(&["batches", "--cache", &cache, "--panel", &panel_arg, "--cancel-all"]), true)
            .await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches("cancel requested").count(), 3, "{out}");
    assert!(p.mocks.iter().all(|m| m.cancels.lock().unwrap().len() == 1));
    p.hold(false);
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let batched: usize = p.created().iter().flatten().sum();
    assert_eq!(p.live_calls(), batched, "the cancelled calls went live");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejudge_by_batch_sends_only_the_new_calls() {
    let p = Providers::start().await;
    let dir = temp_dir("batch-rejudge");
    let panel = p.panel(&dir, "");
    let (code, out, err) = redjury(run_args(&panel, &dir, "live", "cache.sqlite", &[]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let live_calls = p.live_calls();
    // A second repeat per judge: only those calls are new.
    let twice = p.panel(&dir, "repeats = 2");
    let a = args(&[
        "rejudge",
        "--run",
        &dir.join("live").display().to_string(),
        "--out",
        &dir.join("again").display().to_string(),
        "--panel",
        &twice.display().to_string(),
        "--cache",
        &dir.join("cache.sqlite").display().to_string(),
        "--batch",
        "--quiet",
    ]);
    let (code, out, err) = redjury(a, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.live_calls(), live_calls, "nothing live");
    assert_eq!(
        p.created(),
        vec![vec![live_calls / 3]; 3],
        "one batch of the new repeats per judge"
    );
    assert_eq!(
        summary(&dir.join("again"))["counts"]["scored"],
        summary(&dir.join("live"))["counts"]["scored"]
    );
}
