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
    let Ok(c) = redjury::Cache::open(cache) else { return 0 };
    c.batches()
        .map(|b| b.iter().filter(|x| x.state == redjury::BatchState::Submitted).count())
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

impl Providers {
    /// Custom ids any provider carried in two batches: calls paid twice.
    fn paid_twice(&self) -> Vec<String> {
        self.mocks.iter().flat_map(|m| m.paid_twice()).collect()
    }

    /// Calls carried by the batches that were billed, over all providers.
    fn batched(&self) -> usize {
        self.mocks.iter().map(|m| m.created_ids.lock().unwrap().iter().flatten().count()).sum()
    }
}

fn every_row_scored(dir: &Path) -> bool {
    results(dir).iter().all(|r| r["status"] == "scored" || r["status"] == "gate_failed")
}

/// `score --batch` stored no prompt: `rejudge` after a batch run failed
/// ("prompt … is not in the cache"), and a later run resuming the batch
/// dropped every answer whose prompt it could not find, marked the batch
/// collected, and paid for those calls again (8 items in a kill → partial
/// rerun → full rerun sequence).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_run_keeps_every_answer_whichever_run_asked_for_it() {
    let p = Providers::start().await;
    let dir = temp_dir("batch-prompts");
    let panel = p.panel(&dir, "");
    p.hold(true);
    let mut child = spawn_batch_run(&panel, &dir);
    until("every judge's batch", || recorded_submitted(&dir.join("cache.sqlite")) == 3).await;
    child.kill().expect("kill -9");
    let _ = child.wait();
    p.hold(false);
    // A rerun over half the outputs collects the batches, answers of the
    // other half included.
    let half = dir.join("half");
    std::fs::create_dir_all(&half).unwrap();
    let mut names: Vec<_> = std::fs::read_dir(root().join("gold/redlines"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for f in names.iter().take(names.len() / 2) {
        std::fs::copy(f, half.join(f.file_name().unwrap())).unwrap();
    }
    let mut a = run_args(&panel, &dir, "partial", "cache.sqlite", &["--batch"]);
    let at = a.iter().position(|x| x == "gold/redlines").unwrap();
    a[at] = half.display().to_string();
    let (code, out, err) = redjury(a, true).await;
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(every_row_scored(&dir.join("run")));
    assert_eq!(p.paid_twice(), Vec::<String>::new(), "nothing paid twice");
    assert_eq!(p.live_calls(), 0);
    // The prompts are in the cache: rejudge finds them, and pays nothing.
    let batched = p.batched();
    let a = args(&[
        "rejudge",
        "--run",
        &dir.join("run").display().to_string(),
        "--out",
        &dir.join("again").display().to_string(),
        "--panel",
        &panel.display().to_string(),
        "--cache",
        &dir.join("cache.sqlite").display().to_string(),
        "--quiet",
    ]);
    let (code, out, err) = redjury(a, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!((p.batched(), p.live_calls()), (batched, 0), "rejudged from the cache");
    assert_eq!(outcome(&dir.join("again")), outcome(&dir.join("run")));
}

/// A `kill -9` at each step of a submission: during OpenAI's upload, and
/// after each provider created the batch but before its reply arrived
/// (the 44–50 ms in which a killed run left an orphan its rerun paid for
/// again, at 10 of 14 kill points). The rerun finds the batch by its tag
/// (OpenAI metadata, Gemini's display name) or, for Anthropic, by its
/// creation time and size, and pays for nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_at_any_step_of_a_submission_pays_for_nothing_twice() {
    for (at, step) in [(0, "upload"), (0, "create"), (1, "create"), (2, "create")] {
        let p = Providers::start().await;
        let dir = temp_dir(&format!("batch-kill-{at}-{step}"));
        let panel = p.panel(&dir, "");
        *p.mocks[at].faults.lock().unwrap() = Faults {
            stall_upload: step == "upload",
            stall_create: step == "create",
            ..Faults::default()
        };
        let mut child = spawn_batch_run(&panel, &dir);
        let stalled = &p.mocks[at].stalled;
        until("the stalled request", || stalled.load(Ordering::Relaxed) > 0).await;
        child.kill().expect("kill -9");
        let _ = child.wait();
        p.faults(Faults::default);
        let (code, out, err) =
            redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
        let what = format!("{} killed during its {step}", p.mocks[at].provider);
        assert_eq!(code, 0, "{what}: {out}{err}");
        assert!(every_row_scored(&dir.join("run")), "{what}");
        assert_eq!(p.paid_twice(), Vec::<String>::new(), "{what}: nothing paid twice");
        assert_eq!(p.live_calls(), 0, "{what}");
    }
}

/// A create request that times out after the provider accepted the batch
/// is looked up by its tag at once, in the same run: the batch is polled,
/// nothing is sent again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_that_times_out_is_found_in_the_same_run() {
    let p = Providers::start().await;
    p.faults(|| Faults { stall_create: true, ..Faults::default() });
    let dir = temp_dir("batch-timeout");
    let panel = p.panel(&dir, "");
    let text =
        std::fs::read_to_string(&panel).unwrap().replace("timeout_secs = 10", "timeout_secs = 1");
    std::fs::write(&panel, text).unwrap();
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(every_row_scored(&dir.join("run")));
    assert_eq!(p.paid_twice(), Vec::<String>::new());
    assert_eq!(p.live_calls(), 0, "nothing sent live");
    assert!(p.mocks.iter().all(|m| m.stalled.load(Ordering::Relaxed) == 1));
}

/// Results that are not clean: a download cut short once is read again; a
/// batch whose results stay unreadable is left open (its calls neither
/// paid again nor sent live) and collected by the next run; an error line
/// after an answer for the same id does not discard the answer (the last
/// line used to win); Gemini responses without `metadata.key` are matched
/// by request order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_results_that_are_not_clean_lose_no_paid_answer() {
    for tag in ["once", "duplicates", "no-keys"] {
        let p = Providers::start().await;
        p.faults(|| Faults {
            garble_downloads: usize::from(tag == "once"),
            duplicate_errors: tag == "duplicates",
            omit_keys: tag == "no-keys",
            ..Faults::default()
        });
        let dir = temp_dir(&format!("batch-unclean-{tag}"));
        let panel = p.panel(&dir, "");
        let (code, out, err) =
            redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
        assert_eq!(code, 0, "{tag}: {out}{err}");
        assert!(every_row_scored(&dir.join("run")), "{tag}");
        assert_eq!(p.live_calls(), 0, "{tag}: every answer came by batch");
    }
    // Unreadable for good in this run: open for the next.
    let p = Providers::start().await;
    p.faults(|| Faults { garble_downloads: 100, ..Faults::default() });
    let dir = temp_dir("batch-unclean-stays");
    let panel = p.panel(&dir, "");
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "first", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 3, "incomplete, not failed: {out}{err}");
    assert_eq!(p.live_calls(), 0, "an answer that may be paid for is not bought live");
    let text = std::fs::read_to_string(dir.join("first/results.jsonl")).unwrap();
    assert!(text.contains("could not be read; the next run reads it again"), "{text}");
    let cache = dir.join("cache.sqlite").display().to_string();
    let (_, list, _) = redjury(args(&["batches", "--cache", &cache]), false).await;
    assert_eq!(list.lines().filter(|l| l.contains("\tsubmitted\t")).count(), 3, "{list}");
    assert!(list.contains("could not be read"), "{list}");
    let created = p.created();
    p.faults(Faults::default);
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "again", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(p.created(), created, "nothing submitted again");
    assert_eq!(p.live_calls(), 0);
    assert!(every_row_scored(&dir.join("again")));
}

/// A batch refused for its size (413 on create; OpenAI's enqueued-token
/// limit failing the batch) is sent again in halves, by batch: it used to
/// fall back live, at twice the price.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_refused_for_its_size_is_split_not_sent_live() {
    let p = Providers::start().await;
    p.faults(|| Faults { max_items: 4, ..Faults::default() });
    let dir = temp_dir("batch-refused");
    let panel = p.panel(&dir, "");
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "run", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(every_row_scored(&dir.join("run")));
    assert_eq!(p.live_calls(), 0, "nothing went live");
    assert_eq!(p.paid_twice(), Vec::<String>::new());
    for m in &p.mocks {
        let billed = m.created_ids.lock().unwrap().clone();
        assert!(billed.len() > 1, "{}: split", m.provider);
        assert!(billed.iter().all(|b| b.len() <= 4), "{}: {billed:?}", m.provider);
    }
}

/// The cache deleted while a batch run waits: the run writes a new cache at
/// the path with what it had stored, keeps storing there, and says so; the
/// rerun pays for nothing (it used to end with exit 0, no warning, and a
/// rerun that submitted all 39 calls again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_deleted_during_a_run_keeps_the_answers_and_says_so() {
    let p = Providers::start().await;
    let dir = temp_dir("batch-deleted");
    let panel = p.panel(&dir, "");
    p.hold(true);
    let mut child = spawn_batch_run(&panel, &dir);
    until("every judge's batch", || recorded_submitted(&dir.join("cache.sqlite")) == 3).await;
    std::fs::remove_file(dir.join("cache.sqlite")).expect("deleted");
    p.hold(false);
    let status = tokio::task::spawn_blocking(move || child.wait()).await.unwrap().unwrap();
    assert!(status.success(), "{status:?}");
    let s = summary(&dir.join("run"));
    let notes = s["notes"].to_string();
    assert!(notes.contains("was deleted while this process had it open"), "{notes}");
    let created = p.created();
    let (code, out, err) =
        redjury(run_args(&panel, &dir, "again", "cache.sqlite", &["--batch"]), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!((p.created(), p.live_calls()), (created, 0), "the rerun paid for nothing");
}
