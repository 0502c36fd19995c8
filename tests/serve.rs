//! `redjury serve` end to end: the real server on a free 127.0.0.1 port,
//! mock judges behind it, clients over HTTP.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::common::e2e::*;
use crate::common::mock::*;
use crate::common::served::Served;
use base64::Engine;
use serde_json::{Value, json};

const KEYS: [(&str, &str); 3] = [
    ("E2E_OPENAI_KEY", "sk-e2e-secret"),
    ("E2E_ANTHROPIC_KEY", "sk-e2e-secret"),
    ("E2E_GEMINI_KEY", "sk-e2e-secret"),
];

fn p(path: &Path) -> String {
    path.display().to_string()
}

fn serve_args(panel: &Path, dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = args(&[
        "--tasks",
        "rubrics",
        "--panel",
        &p(panel),
        "--cache",
        &p(&dir.join("serve.sqlite")),
        "--bind",
        "127.0.0.1:0",
    ]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn b64(path: &Path) -> String {
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).expect("read docx"))
}

fn output(kind: &str, task: &str) -> PathBuf {
    root().join("scenarios/outputs").join(kind).join(format!("{task}.docx"))
}

async fn post(url: &str, body: &Value) -> (u16, Value, reqwest::header::HeaderMap) {
    let resp = reqwest::Client::new().post(url).json(body).send().await.expect("send");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.expect("body");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)), headers)
}

/// A panel whose judges answer through `handlers` (openai, anthropic, gemini).
async fn panel_of(dir: &Path, quorum: u32, handlers: [Handler; 3]) -> (PathBuf, Vec<MockServer>) {
    let [o, a, g] = handlers;
    let servers =
        vec![MockServer::start(o).await, MockServer::start(a).await, MockServer::start(g).await];
    let judge = |name: &str, provider: &str, url: String, model: &str, env: &str| {
        format!(
            "[[judge]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{url}\"\napi_key_env = \"{env}\"\nrpm = 60000\ntpm = 100000000\nmax_concurrency = 64\ntimeout_secs = 20\nmax_attempts = 2\nretry_base_ms = 10\n\n"
        )
    };
    let text = format!(
        "[vote]\nquorum = {quorum}\n\n{}{}{}",
        judge("gpt", "openai", format!("{}/v1", servers[0].url()), "gpt-test", "E2E_OPENAI_KEY"),
        judge("claude", "anthropic", servers[1].url(), "claude-test", "E2E_ANTHROPIC_KEY"),
        judge("gemini", "gemini", servers[2].url(), "gemini-test", "E2E_GEMINI_KEY"),
    );
    let path = dir.join("panel.toml");
    std::fs::write(&path, text).expect("panel");
    (path, servers)
}

/// A panel of three judges that answer every rubric FAIL, quorum 2.
async fn all_answering(dir: &Path) -> (PathBuf, Vec<MockServer>) {
    let handlers =
        [answering("openai", &[]), answering("anthropic", &[]), answering("gemini", &[])];
    panel_of(dir, 2, handlers).await
}

/// A panel of three judges that answer PASS after `delay`, quorum 2.
async fn all_slow(dir: &Path, delay: Duration) -> (PathBuf, Vec<MockServer>) {
    panel_of(dir, 2, [slow("openai", delay), slow("anthropic", delay), slow("gemini", delay)]).await
}

fn slow(provider: &'static str, delay: Duration) -> Handler {
    Arc::new(move |req: &Recorded, _| {
        let text = verdicts_json(&req.rubric_ids(), &|_| "PASS");
        Action::Later(delay, success_body(provider, &text))
    })
}

fn refusing(provider: &'static str) -> Handler {
    Arc::new(move |_req: &Recorded, _| {
        let body = match provider {
            "anthropic" => {
                r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#
            }
            _ => {
                r#"{"error":{"code":401,"message":"API key not valid","status":"UNAUTHENTICATED"}}"#
            }
        };
        status(401, &[], body)
    })
}

fn start(dir: &Path, args: Vec<String>) -> Served {
    Served::start(&root(), &args, &KEYS)
        .unwrap_or_else(|f| panic!("serve did not start in {}: {f:?}", dir.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_get_the_rewards_score_gives() {
    let judges = Judges::start("strong").await;
    let dir = temp_dir("serve-parity");
    let panel = judges.panel(&dir, "gemini-test");
    // Three trials per task where outputs exist: a strong, a weak and a
    // gate-failing redline.
    let outs = dir.join("outs");
    let mut items = Vec::new();
    for kind in ["strong", "weak", "gate-fail"] {
        for e in std::fs::read_dir(root().join("scenarios/outputs").join(kind)).unwrap().flatten() {
            let task = e.path().file_stem().unwrap().to_string_lossy().to_string();
            let to = outs.join(&task).join(kind).join("contract.docx");
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(e.path(), &to).unwrap();
            items.push((task, kind.to_string(), to));
        }
    }
    let a = score_args(&p(&outs), &panel, &dir.join("run"), &dir.join("score.sqlite"));
    let (code, out, err) = redjury(a, true).await;
    assert!(code == 0 || code == 3, "{out}{err}");
    let by_score: std::collections::BTreeMap<(String, String), Value> = results(&dir.join("run"))
        .into_iter()
        .map(|r| ((r["task"].as_str().unwrap().into(), r["trial"].as_str().unwrap().into()), r))
        .collect();
    assert_eq!(by_score.len(), items.len());
    let calls_by_score = judges.counts();

    let mut served = start(
        &dir,
        serve_args(&panel, &dir, &["--out", &p(&dir.join("served")), "--allow-path", &p(&outs)]),
    );
    // Every output asked for three times at once: ≥ 32 concurrent clients.
    let mut clients = tokio::task::JoinSet::new();
    for copy in 0..3 {
        for (task, trial, path) in items.clone() {
            let url = format!("{}/v1/score", served.url);
            clients.spawn(async move {
                let body = if copy == 0 {
                    json!({"task": task, "trial": trial, "path": p(&path)})
                } else {
                    json!({"task": task, "trial": trial, "docx_base64": b64(&path)})
                };
                let (status, reply, _) = post(&url, &body).await;
                (task, trial, status, reply)
            });
        }
    }
    assert!(clients.len() >= 32, "{} clients", clients.len());
    while let Some(done) = clients.join_next().await {
        let (task, trial, status, reply) = done.unwrap();
        assert_eq!(status, 200, "{task} {trial}: {reply}");
        let want = &by_score[&(task.clone(), trial.clone())];
        assert_eq!(reply["status"], want["status"], "{task} {trial}");
        assert_eq!(reply["reward"], want["reward"], "{task} {trial}: the same reward as score");
        assert_eq!(
            reply["rubrics"], want["rubrics"],
            "{task} {trial}: the same verdicts and votes"
        );
    }
    let calls = judges.counts();
    let by_serve: Vec<usize> = calls.iter().zip(calls_by_score).map(|(a, b)| a - b).collect();
    assert_eq!(
        by_serve, calls_by_score,
        "each distinct call made once, however often it was asked for"
    );

    served.term();
    assert_eq!(served.wait(Duration::from_secs(30)), Some(0), "{}", served.stderr());
    let (code, text, err) = redjury(args(&["report", &p(&dir.join("served"))]), false).await;
    assert_eq!(code, 0, "{text}{err}");
    let served_summary = summary(&dir.join("served"));
    assert_eq!(
        served_summary["counts"]["results"],
        items.len(),
        "one row per trial, retries folded"
    );
    assert_eq!(
        served_summary["figures"]["overall"],
        summary(&dir.join("run"))["figures"]["overall"],
        "the service's results folder gives the same figures as score's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_concurrent_requests_make_one_judge_call() {
    let dir = temp_dir("serve-dedupe");
    let d = Duration::from_millis(400);
    let (panel, servers) = all_slow(&dir, d).await;
    let served = start(&dir, serve_args(&panel, &dir, &[]));
    let body = json!({"task": "redline-s1-t1-g01a", "docx_base64": b64(&output("strong", "redline-s1-t1-g01a"))});
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..16 {
        let (url, body) = (format!("{}/v1/score", served.url), body.clone());
        clients.spawn(async move { post(&url, &body).await });
    }
    let mut rewards = Vec::new();
    while let Some(done) = clients.join_next().await {
        let (status, reply, _) = done.unwrap();
        assert_eq!(status, 200, "{reply}");
        rewards.push(reply["reward"].clone());
    }
    assert!(rewards.windows(2).all(|w| w[0] == w[1]));
    for s in &servers {
        assert_eq!(s.requests().len(), 1, "16 identical requests, one call per judge");
    }
    // Once more, after the fact: from the cache. The metrics say all of it.
    let (status, _, _) = post(&format!("{}/v1/score", served.url), &body).await;
    assert_eq!(status, 200);
    let metrics =
        reqwest::get(format!("{}/metrics", served.url)).await.unwrap().text().await.unwrap();
    let value = |series: &str| -> Vec<f64> {
        metrics
            .lines()
            .filter(|l| l.starts_with(series) && !l.starts_with('#'))
            .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
            .collect()
    };
    assert_eq!(value("redjury_judge_requests_total{"), [1.0, 1.0, 1.0], "{metrics}");
    assert!(value("redjury_judge_cache_hits_total{").iter().all(|n| *n >= 1.0), "{metrics}");
    assert_eq!(value("redjury_judge_retries_total{"), [0.0, 0.0, 0.0], "{metrics}");
    assert_eq!(value("redjury_judge_failures_total{"), [0.0, 0.0, 0.0], "{metrics}");
    assert!(value("redjury_judge_input_tokens_total{").iter().all(|n| *n > 0.0), "{metrics}");
    assert_eq!(value("redjury_rows_total{status=\"scored\"}"), [17.0], "{metrics}");
    assert_eq!(value("redjury_http_requests_total{route=\"/v1/score\",code=\"200\"}"), [17.0]);
    assert_eq!(value("redjury_queue_depth"), [0.0], "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_answers_429_with_retry_after() {
    let dir = temp_dir("serve-queue");
    let d = Duration::from_millis(1500);
    let (panel, _servers) = all_slow(&dir, d).await;
    let served = start(&dir, serve_args(&panel, &dir, &["--queue", "2"]));
    let item = |task: &str| json!({"task": task, "docx_base64": b64(&output("strong", task))});
    let batch = json!({"items": [item("redline-s1-t1-g01a"), item("redline-s2-t1-g01a")]});
    let url = served.url.clone();
    let first = tokio::spawn(async move { post(&format!("{url}/v1/score/batch"), &batch).await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (status, reply, headers) =
        post(&format!("{}/v1/score", served.url), &item("redline-s3-t1-g01a")).await;
    assert_eq!(status, 429, "{reply}");
    assert!(reply["error"].as_str().unwrap().contains("queue is full"), "{reply}");
    let after: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&after));
    let too_big = json!({"items": [item("redline-s1-t1-g01a"), item("redline-s2-t1-g01a"), item("redline-s3-t1-g01a")]});
    let (status, reply, _) = post(&format!("{}/v1/score/batch", served.url), &too_big).await;
    assert_eq!(status, 413, "{reply}");
    assert!(reply["error"].as_str().unwrap().contains("split the batch"), "{reply}");
    let (status, reply, _) = first.await.unwrap();
    assert_eq!(status, 200, "the queued work finishes: {reply}");
    let text = reqwest::get(format!("{}/metrics", served.url)).await.unwrap().text().await.unwrap();
    assert!(text.contains("redjury_queue_rejected_total 1"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_batch_loses_no_answer() {
    let dir = temp_dir("serve-term");
    let d = Duration::from_millis(800);
    let (panel, servers) = all_slow(&dir, d).await;
    let mut served = start(&dir, serve_args(&panel, &dir, &["--out", &p(&dir.join("served"))]));
    let tasks =
        ["redline-s1-t1-g01a", "redline-s1-t2-g01a", "redline-s2-t1-g01a", "redline-s3-t1-g01a"];
    let items: Vec<Value> = tasks
        .iter()
        .map(|t| json!({"task": t, "docx_base64": b64(&output("strong", t))}))
        .collect();
    let url = format!("{}/v1/score/batch", served.url);
    let batch = tokio::spawn(async move { post(&url, &json!({"items": items})).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        servers[0].requests().len() < 4 || servers.iter().any(|s| s.requests().len() < 4),
        "mid-batch"
    );
    served.term();
    let (status, reply, _) = batch.await.unwrap();
    assert_eq!(status, 200, "the batch in flight is finished: {reply}");
    assert_eq!(reply["results"].as_array().unwrap().len(), 4);
    assert!(reply["results"].as_array().unwrap().iter().all(|r| r["status"] == "scored"));
    assert_eq!(served.wait(Duration::from_secs(30)), Some(0), "{}", served.stderr());
    let rows = results(&dir.join("served"));
    assert_eq!(rows.len(), 4, "every answered row is in the results folder");
    assert!(dir.join("served/summary.json").exists(), "the summary is written at shutdown");
    // Every paid answer is in the cache: scoring again calls no judge.
    let before: Vec<usize> = servers.iter().map(|s| s.requests().len()).collect();
    let served = start(&dir, serve_args(&panel, &dir, &[]));
    let items: Vec<Value> = tasks
        .iter()
        .map(|t| json!({"task": t, "docx_base64": b64(&output("strong", t))}))
        .collect();
    let (status, _, _) =
        post(&format!("{}/v1/score/batch", served.url), &json!({"items": items})).await;
    assert_eq!(status, 200);
    let after: Vec<usize> = servers.iter().map(|s| s.requests().len()).collect();
    assert_eq!(before, after, "answered from the cache");
}

/// Work that outlasts the grace period does not hold the process: it
/// exits 1 when the grace period ends, saying how many outputs were left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_with_the_grace_period_and_says_what_was_left() {
    let dir = temp_dir("serve-grace");
    let (panel, _servers) = all_slow(&dir, Duration::from_secs(20)).await;
    let mut served = start(&dir, serve_args(&panel, &dir, &["--grace", "1"]));
    let body = json!({"task": "redline-s1-t1-g01a", "docx_base64": b64(&output("strong", "redline-s1-t1-g01a"))});
    let url = format!("{}/v1/score", served.url);
    let client = reqwest::Client::new();
    let pending = tokio::spawn(async move { client.post(&url).json(&body).send().await });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let asked = std::time::Instant::now();
    served.term();
    assert_eq!(served.wait(Duration::from_secs(10)), Some(1), "{}", served.stderr());
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(5), "the grace period (1 s) bounds the shutdown: {took:?}");
    assert!(
        served.stderr().contains("stopped with 1 outputs unfinished after the grace period"),
        "{}",
        served.stderr()
    );
    // Regression: the caller waiting when the grace period ran out got a
    // dropped connection; it gets 503 and Retry-After, so it can go to
    // another replica.
    let reply = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("the request ended when the process did")
        .unwrap()
        .expect("an answer, not a dropped connection");
    assert_eq!(reply.status().as_u16(), 503);
    assert!(reply.headers().contains_key("retry-after"));
    let text = reply.text().await.unwrap();
    assert!(text.contains("grace period ran out"), "{text}");
}

/// Regression (issue 37): after `--grace` had run out, `serve` still
/// started a fresh judge retry (and dropped it 0.3 s later), and the work
/// it cut short could reach the results log as rows nobody was answered
/// with. Judges that keep failing with 503 are retried until the grace
/// period ends; none is asked after it, and no row is logged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_judge_attempt_starts_after_the_grace_period_ran_out() {
    let dir = temp_dir("serve-grace-retry");
    let overloaded = |_: &'static str| -> Handler {
        Arc::new(|_req: &Recorded, _| {
            let body = r#"{"error":{"message":"overloaded","type":"server_error"}}"#;
            Action::StatusLater(Duration::from_millis(100), 503, body.into())
        })
    };
    let handlers = [overloaded("openai"), overloaded("anthropic"), overloaded("gemini")];
    let (panel, servers) = panel_of(&dir, 2, handlers).await;
    // Retries every second or so, for far longer than the grace period.
    let text = std::fs::read_to_string(&panel)
        .unwrap()
        .replace("max_attempts = 2", "max_attempts = 20\nretry_max_secs = 1");
    std::fs::write(&panel, text).unwrap();
    let served_dir = dir.join("served");
    let mut served =
        start(&dir, serve_args(&panel, &dir, &["--grace", "2", "--out", &p(&served_dir)]));
    let task = "redline-s1-t1-g01a";
    let body = json!({"task": task, "docx_base64": b64(&output("strong", task))});
    let url = format!("{}/v1/score", served.url);
    let client = reqwest::Client::new();
    let pending = tokio::spawn(async move {
        let reply = client.post(&url).json(&body).send().await;
        (reply, std::time::Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    served.term();
    assert_eq!(served.wait(Duration::from_secs(15)), Some(1), "{}", served.stderr());
    let (reply, answered_at) = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("the request ended when the process did")
        .unwrap();
    assert_eq!(reply.expect("an answer, not a dropped connection").status().as_u16(), 503);
    let asked: Vec<usize> = servers.iter().map(|s| s.requests().len()).collect();
    assert!(asked.iter().all(|n| *n >= 2), "each judge was retried in the grace period: {asked:?}");
    // The 503 goes out as the judges are stopped; a request already on
    // its way then may land a moment later, a retry started after would
    // land a second or more later.
    let late: Vec<Duration> = servers
        .iter()
        .flat_map(|s| s.requests())
        .filter_map(|r| r.at.checked_duration_since(answered_at))
        .filter(|after| *after > Duration::from_millis(300))
        .collect();
    assert!(late.is_empty(), "judge requests after the grace period ran out: {late:?}");
    let logged = std::fs::read_to_string(served_dir.join("results.jsonl")).unwrap_or_default();
    assert!(!logged.contains(task), "a cut-off row reached the results log: {logged}");
}

/// Regression: a path outside --allow-path answered 403 when it existed
/// and 400 "No such file or directory" when it did not (and a dangling
/// symlink inside said 400 too), so a client could probe which files
/// exist anywhere on the machine. Every path outside gets the same 403,
/// judged by its text before the file system is touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paths_outside_allow_path_answer_alike_whether_or_not_they_exist() {
    let dir = temp_dir("serve-paths");
    let (panel, _servers) = all_answering(&dir).await;
    let allowed = dir.join("allowed");
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("secret.docx"), b"not for you").unwrap();
    std::os::unix::fs::symlink(elsewhere.join("secret.docx"), allowed.join("out.docx")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("nope.docx"), allowed.join("dangling.docx")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, allowed.join("door")).unwrap();
    let served = start(&dir, serve_args(&panel, &dir, &["--allow-path", &p(&allowed)]));
    let url = format!("{}/v1/score", served.url);
    let task = "redline-s1-t1-g01a";
    let outside = [
        p(&allowed.join("../elsewhere/secret.docx")),
        p(&allowed.join("../elsewhere/nope.docx")),
        p(&allowed.join("../../../../../../../../etc/passwd")),
        "/etc/passwd".to_string(),
        "/etc/no-such-file".to_string(),
        p(&allowed.join("out.docx")),
        p(&allowed.join("dangling.docx")),
        p(&allowed.join("door/secret.docx")),
        p(&allowed.join("door/nope.docx")),
    ];
    for path in &outside {
        let (status, reply, _) = post(&url, &json!({"task": task, "path": path})).await;
        assert_eq!(status, 403, "{path}: {reply}");
        assert_eq!(
            reply["error"].as_str().unwrap(),
            format!("{path} is outside the folders this server may read (--allow-path)"),
        );
    }
    // Inside, a missing file is just that.
    let missing = p(&allowed.join("missing.docx"));
    let (status, reply, _) = post(&url, &json!({"task": task, "path": missing})).await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["error"].as_str().unwrap().starts_with("cannot read"), "{reply}");
}

/// Regression: an output whose judges kept failing was sent to them again
/// on every request (seconds each). The failure is remembered per call: a
/// request soon after is answered at once as incomplete, with the reason
/// and when it is tried again, and no judge is asked; the metrics count it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_whose_judges_keep_failing_is_answered_at_once_until_its_backoff() {
    let dir = temp_dir("serve-failing");
    let broken = |_: &'static str| -> Handler {
        Arc::new(|_req: &Recorded, _| status(500, &[], r#"{"error":{"message":"internal"}}"#))
    };
    let (panel, servers) =
        panel_of(&dir, 2, [broken("openai"), broken("anthropic"), broken("gemini")]).await;
    let served = start(&dir, serve_args(&panel, &dir, &[]));
    let url = format!("{}/v1/score", served.url);
    let task = "redline-s1-t1-g01a";
    let body = json!({"task": task, "docx_base64": b64(&output("strong", task))});
    let (status, reply, _) = post(&url, &body).await;
    assert_eq!(status, 503, "{reply}");
    let sent: Vec<usize> = servers.iter().map(|s| s.requests().len()).collect();
    assert!(sent.iter().all(|n| *n >= 1), "{sent:?}");
    let asked = std::time::Instant::now();
    let (status, reply, _) = post(&url, &body).await;
    assert_eq!(status, 503, "{reply}");
    assert!(asked.elapsed() < Duration::from_secs(2), "answered at once: {:?}", asked.elapsed());
    let reason = reply["incomplete"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("tried again in"), "{reason}");
    let again: Vec<usize> = servers.iter().map(|s| s.requests().len()).collect();
    assert_eq!(again, sent, "no judge was asked again");
    let metrics =
        reqwest::get(format!("{}/metrics", served.url)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("redjury_judge_failures_remembered{judge=\"gpt\"} 1"), "{metrics}");
    assert!(
        metrics.contains("redjury_judge_failures_remembered_total{judge=\"gpt\"} 1"),
        "{metrics}"
    );
}

/// Regression: every request appended its row, so a trainer asking for
/// the same rollout again grew results.jsonl by ~2 KB a time (61 MB after
/// 28,000 cached requests). Each output is logged once per outcome and
/// repeats are counted in summary.json; past --log-segment-mb the log is
/// sealed into results.N.jsonl, and `report` reads every segment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_results_log_holds_each_output_once_and_is_sealed_in_segments() {
    let dir = temp_dir("serve-log");
    let (panel, _servers) = all_answering(&dir).await;
    let served_dir = dir.join("served");
    let args = serve_args(&panel, &dir, &["--out", &p(&served_dir), "--log-segment-mb", "1"]);
    let mut served = start(&dir, args);
    let task = "redline-s1-t1-g01a";
    let doc = b64(&output("strong", task));
    let url = format!("{}/v1/score", served.url);
    for _ in 0..20 {
        let (status, reply, _) = post(&url, &json!({"task": task, "docx_base64": doc})).await;
        assert_eq!(status, 200, "{reply}");
    }
    assert_eq!(results(&served_dir).len(), 1, "one row for twenty identical requests");
    let batch = format!("{}/v1/score/batch", served.url);
    for round in 0..2 {
        let items: Vec<Value> = (0..200)
            .map(|i| json!({"task": task, "docx_base64": doc, "trial": format!("t{round}-{i}")}))
            .collect();
        let (status, reply, _) = post(&batch, &json!({"items": items})).await;
        assert_eq!(status, 200, "{reply}");
    }
    served.term();
    assert_eq!(served.wait(Duration::from_secs(30)), Some(0), "{}", served.stderr());
    assert!(served_dir.join("results.1.jsonl").is_file(), "a segment was sealed");
    assert!(std::fs::metadata(served_dir.join("results.1.jsonl")).unwrap().len() <= 1 << 20);
    let s = summary(&served_dir);
    assert_eq!(s["counts"]["results"], 401, "{s}");
    assert_eq!(s["repeated_requests"], 19, "{s}");
    let (code, out, err) = redjury(args_list(&["report", &p(&served_dir)]), false).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| 401 |"), "{out}");
    assert!(out.contains("19 requests answered with a row already logged"), "{out}");
}

fn args_list(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_stopped_by_401_yields_the_policy_never_zero() {
    let dir = temp_dir("serve-401");
    let (panel, _servers) =
        panel_of(&dir, 2, [answering("openai", &[]), refusing("anthropic"), refusing("gemini")])
            .await;
    let served = start(&dir, serve_args(&panel, &dir, &["--out", &p(&dir.join("served"))]));
    let task = "redline-s1-t1-g01a";
    let doc = b64(&output("strong", task));
    let url = format!("{}/v1/score", served.url);
    let (status, reply, headers) = post(&url, &json!({"task": task, "docx_base64": doc})).await;
    assert_eq!(status, 503, "{reply}");
    assert!(headers.contains_key("retry-after"));
    assert_eq!(reply["incomplete"][0]["status"], "incomplete", "{reply}");
    assert!(reply["incomplete"][0]["reason"].as_str().unwrap().contains("quorum"), "{reply}");
    let (status, reply, _) =
        post(&url, &json!({"task": task, "docx_base64": doc, "on_incomplete": "null"})).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["reward"], Value::Null);
    assert_eq!(reply["reward_from"], "on_incomplete");
    let (status, reply, _) =
        post(&url, &json!({"task": task, "docx_base64": doc, "on_incomplete": 0.25})).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["reward"], 0.25);
    // A gate failure needs no judge and is a real 0.
    let bad = b64(&output("gate-fail", task));
    let (status, reply, _) = post(&url, &json!({"task": task, "docx_base64": bad})).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["reward"], 0.0);
    assert_eq!(reply["reward_from"], "gate");
    let resp = reqwest::get(format!("{}/readyz", served.url)).await.unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    let text = resp.text().await.unwrap();
    assert!(text.contains("fewer than the quorum") && text.contains("claude"), "{text}");
    let metrics =
        reqwest::get(format!("{}/metrics", served.url)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("redjury_judge_stopped{judge=\"claude\"} 1"), "{metrics}");
    assert!(metrics.contains("redjury_rows_total{status=\"incomplete\"} 3"), "{metrics}");
    let rows = results(&dir.join("served"));
    assert!(rows.iter().all(|r| r["status"] != "scored"));
    assert!(rows.iter().filter(|r| r["status"] == "incomplete").all(|r| r["reward"].is_null()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_addresses_need_a_token_and_keys_never_leak() {
    let dir = temp_dir("serve-token");
    let (panel, _servers) = all_answering(&dir).await;
    let mut a = serve_args(&panel, &dir, &[]);
    let at = a.iter().position(|x| x == "127.0.0.1:0").unwrap();
    a[at] = "0.0.0.0:0".into();
    let failed = Served::start(&root(), &a, &KEYS).err().expect("refused");
    assert_eq!(failed.code, Some(2), "{failed:?}");
    assert!(
        failed.stderr.contains("refusing to listen on 0.0.0.0:0 without a token"),
        "{failed:?}"
    );
    assert!(failed.stderr.contains("REDJURY_TOKEN"), "{failed:?}");

    let mut envs = KEYS.to_vec();
    envs.push(("REDJURY_TOKEN", "t0ken-for-tests"));
    let served = Served::start(&root(), &a, &envs).expect("starts with a token");
    let url = served.url.replace("0.0.0.0", "127.0.0.1");
    let client = reqwest::Client::new();
    let r = client.get(format!("{url}/v1/tasks")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = client.get(format!("{url}/v1/tasks")).bearer_auth("wrong").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
    let r = client.get(format!("{url}/healthz")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200, "probes need no token");
    let task = "redline-s1-t1-g01a";
    let r = client
        .post(format!("{url}/v1/score"))
        .bearer_auth("t0ken-for-tests")
        .json(&json!({"task": task, "docx_base64": b64(&output("strong", task))}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let reply = r.text().await.unwrap();
    let metrics =
        client.get(format!("{url}/metrics")).bearer_auth("t0ken-for-tests").send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    for text in [&reply, &metrics, &served.stdout(), &served.stderr()] {
        assert!(!text.contains("sk-e2e-secret"), "a provider key leaked: {text}");
        assert!(!text.contains("t0ken-for-tests"), "the token leaked: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_a_4xx_that_says_what_is_wrong() {
    let dir = temp_dir("serve-4xx");
    let (panel, servers) = all_answering(&dir).await;
    let allowed = dir.join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    std::fs::copy(output("strong", "redline-s1-t1-g01a"), allowed.join("ok.docx")).unwrap();
    let served = start(
        &dir,
        serve_args(&panel, &dir, &["--max-body-mb", "1", "--allow-path", &p(&allowed)]),
    );
    let url = format!("{}/v1/score", served.url);
    // No idle connections kept: after a 413 the server closes its side, and
    // a request sent on that pooled connection ends as IncompleteMessage
    // (the transport's, not the service's).
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let raw = |body: Vec<u8>| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let r = client
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    // The server answers 413 before the client has sent the whole body and
    // closes; the client may then see its write fail (a reset) instead of
    // the reply. That is the transport, not the service: one of a few
    // attempts must read the 413.
    let mut seen = Vec::new();
    for _ in 0..5 {
        let sent = client
            .post(&url)
            .header("content-type", "application/json")
            .body(vec![b' '; 2 << 20])
            .send()
            .await;
        match sent {
            Ok(r) => {
                let status = r.status().as_u16();
                seen.push((status, r.text().await.unwrap_or_default()));
                break;
            }
            Err(e) => seen.push((0, e.to_string())),
        }
    }
    let (status, text) = seen.last().cloned().unwrap();
    assert_eq!(status, 413, "{seen:?}");
    assert!(text.contains("larger than 1048576 bytes"), "{text}");
    let (status, text) = raw(b"{\"task\": ".to_vec()).await;
    assert_eq!(status, 400);
    assert!(text.contains("invalid request body"), "{text}");
    let doc = b64(&output("strong", "redline-s1-t1-g01a"));
    // An inline task's input document is a path like any other.
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("rubrics/redline-s1-t1-g01a.json")).unwrap(),
    )
    .unwrap();
    // So is a term sheet's output template.
    let mut sheet_spec: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("rubrics/redline-s4-t4-g01a.json")).unwrap(),
    )
    .unwrap();
    sheet_spec.as_object_mut().unwrap().remove("input");
    // And an expert redline (regression: it was read from anywhere).
    let mut expert_spec = spec.clone();
    expert_spec.as_object_mut().unwrap().remove("input");
    assert!(expert_spec.get("expert").is_some());
    let cases: Vec<(Value, u16, &str)> = vec![
        (
            json!({"task": "redline-s1-t1-g01a", "task_spec": expert_spec, "docx_base64": doc}),
            403,
            "outside the folders",
        ),
        (
            json!({"task": "redline-s4-t4-g01a", "task_spec": sheet_spec, "docx_base64": doc}),
            403,
            "outside the folders",
        ),
        (
            json!({"task": "redline-s1-t1-g01a", "docx_base64": doc, "colour": 1}),
            400,
            "unknown field `colour`",
        ),
        (
            json!({"task": "no-such-task", "docx_base64": doc}),
            404,
            "unknown task \\\"no-such-task\\\"",
        ),
        (json!({"task": "redline-s1-t1-g01a"}), 400, "no document"),
        (
            json!({"task": "redline-s1-t1-g01a", "docx_base64": "%%%"}),
            400,
            "docx_base64 is not base64",
        ),
        (json!({"task": "redline-s1-t1-g01a", "path": "ok.docx"}), 400, "must be an absolute path"),
        (json!({"task": "redline-s1-t1-g01a", "path": "/etc/passwd"}), 403, "outside the folders"),
        (
            json!({"task": "redline-s1-t1-g01a", "path": p(&allowed.join("../serve.sqlite"))}),
            403,
            "outside the folders",
        ),
        (
            json!({"task": "redline-s1-t1-g01a", "path": p(&allowed.join("missing.docx"))}),
            400,
            "cannot read",
        ),
        (
            json!({"task": "redline-s1-t1-g01a", "docx_base64": doc, "on_incomplete": "zero"}),
            400,
            "on_incomplete must be",
        ),
        (json!({"task": "x", "task_spec": {"task_id": 1}, "docx_base64": doc}), 400, "task_spec"),
        (json!({"task": "x", "task_spec": spec, "docx_base64": doc}), 403, "outside the folders"),
    ];
    for (body, want, says) in cases {
        let (status, reply, _) = post(&url, &body).await;
        assert_eq!(status, want, "{body}: {reply}");
        assert!(reply.to_string().contains(says), "{body}: {reply} should say {says}");
    }
    let (status, reply, _) = post(
        &format!("{}/openrlhf", served.url),
        &json!({"query": ["q"], "prompts": ["p"], "labels": ["the answer is 42"]}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        reply["error"].as_str().unwrap().starts_with("labels[0]: not a redjury label"),
        "{reply}"
    );
    // Not a .docx at all: a gate failure (a real 0), not an error.
    let junk = base64::engine::general_purpose::STANDARD.encode(b"not a zip");
    let (status, reply, _) =
        post(&url, &json!({"task": "redline-s1-t1-g01a", "docx_base64": junk})).await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["status"], "gate_failed");
    assert_eq!(reply["reward"], 0.0);
    // A path under --allow-path is read.
    let (status, reply, _) =
        post(&url, &json!({"task": "redline-s1-t1-g01a", "path": p(&allowed.join("ok.docx"))}))
            .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["status"], "scored");
    assert!(servers.iter().all(|s| s.requests().len() == 1), "only the good request was judged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openrlhf_and_inline_tasks() {
    let dir = temp_dir("serve-openrlhf");
    let (panel, _servers) = all_answering(&dir).await;
    // The outputs and the inline task's input document are under scenarios/.
    let served =
        start(&dir, serve_args(&panel, &dir, &["--allow-path", &p(&root().join("scenarios"))]));
    let label =
        |task: &str, kind: &str| json!({"task": task, "path": p(&output(kind, task))}).to_string();
    let body = json!({
        "query": ["<prompt> rollout one", "<prompt> rollout two"],
        "prompts": ["<prompt>", "<prompt>"],
        "labels": [label("redline-s1-t1-g01a", "strong"), label("redline-s1-t1-g01a", "gate-fail")],
        "metas": [{}, {}],
    });
    let (status, reply, _) = post(&format!("{}/openrlhf", served.url), &body).await;
    assert_eq!(status, 200, "{reply}");
    let rewards = reply["rewards"].as_array().unwrap();
    assert_eq!(rewards.len(), 2);
    assert!(rewards[0].as_f64().unwrap() >= 0.0);
    assert_eq!(rewards[1], 0.0, "the gate failure");
    assert_eq!(reply["scores"], reply["rewards"]);
    assert_eq!(reply["extra_logs"]["redjury_gate_passed"], json!([1.0, 0.0]));

    // An inline task is validated as a task file is (its expert redline
    // is outside the folders this server reads).
    let mut spec: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("rubrics/redline-s1-t1-g01a.json")).unwrap(),
    )
    .unwrap();
    spec.as_object_mut().unwrap().remove("expert");
    let doc = b64(&output("strong", "redline-s1-t1-g01a"));
    let (status, inline, _) = post(
        &format!("{}/v1/score", served.url),
        &json!({"task": "redline-s1-t1-g01a", "task_spec": spec, "docx_base64": doc}),
    )
    .await;
    assert_eq!(status, 200, "{inline}");
    let (_, named, _) = post(
        &format!("{}/v1/score", served.url),
        &json!({"task": "redline-s1-t1-g01a", "docx_base64": doc}),
    )
    .await;
    assert_eq!(inline["reward"], named["reward"]);
    // The edit shapes stay in the results log: a reply does not carry the
    // task's expert redline on every request.
    assert!(named.get("edits").is_none() && named.get("expert").is_none(), "{named}");
    let mut broken = spec.clone();
    broken["rubrics"][0]["weight"] = json!(11);
    let (status, reply, _) = post(
        &format!("{}/v1/score", served.url),
        &json!({"task": "redline-s1-t1-g01a", "task_spec": broken, "docx_base64": doc}),
    )
    .await;
    assert_eq!(status, 400, "{reply}");
    assert!(reply["error"].as_str().unwrap().contains("weight"), "{reply}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_and_adapters_work_against_the_server() {
    let dir = temp_dir("serve-python");
    let (panel, _servers) = all_answering(&dir).await;
    let scenarios = root().join("scenarios");
    let served =
        start(&dir, serve_args(&panel, &dir, &["--allow-path", &p(&scenarios), "--queue", "4"]));
    let task = "redline-s1-t1-g01a";
    let (good, bad) = (output("strong", task), output("gate-fail", task));
    let run = |python: PathBuf, installed: &'static str| {
        let (url, good, bad) = (served.url.clone(), good.clone(), bad.clone());
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(python)
                .arg(root().join("clients/python/test_clients.py"))
                .current_dir(std::env::temp_dir())
                .env("REDJURY_URL", url)
                .env("REDJURY_TEST_TASK", task)
                .env("REDJURY_TEST_DOCX", good)
                .env("REDJURY_TEST_BAD_DOCX", bad)
                .env("REDJURY_TEST_QUEUE", "4")
                .env("REDJURY_TEST_INSTALLED", installed)
                .output()
                .expect("python3 is installed (CI installs it)")
        })
    };
    let out = run(PathBuf::from("python3"), "0").await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("Ran 19 tests") && !err.contains("skipped"), "{err}");
    // The same tests with the module from `pip install ./clients/python`
    // in a fresh virtual environment.
    let Some(python) = pip_installed_client(&dir) else { return };
    let out = run(python, "1").await.unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "installed: {err}");
    assert!(err.contains("Ran 19 tests") && !err.contains("skipped"), "installed: {err}");
}

/// A virtual environment with `pip install ./clients/python` done in it,
/// offline (no build isolation: setuptools and wheel come from the system
/// Python); its python. None, saying so, where the system Python cannot
/// (no venv module or no `wheel`), unless REDJURY_REQUIRE_PIP is set (CI).
fn pip_installed_client(dir: &Path) -> Option<PathBuf> {
    let venv = dir.join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--system-site-packages"])
        .arg(&venv)
        .output()
        .expect("python3 runs");
    let has_wheel = std::process::Command::new("python3")
        .args(["-c", "import setuptools, wheel"])
        .status()
        .is_ok_and(|s| s.success());
    if !made.status.success() || !has_wheel {
        assert!(
            std::env::var_os("REDJURY_REQUIRE_PIP").is_none(),
            "python3 cannot build the package offline (venv: {}; setuptools and wheel: {has_wheel})",
            String::from_utf8_lossy(&made.stderr)
        );
        eprintln!("SKIPPED the installed-package run: python3 needs venv, setuptools and wheel");
        return None;
    }
    // Built from a copy: a build writes build/ and *.egg-info beside the
    // sources, and the checkout is not the test's to write.
    let package = dir.join("package");
    std::fs::create_dir_all(&package).unwrap();
    for file in ["pyproject.toml", "README.md", "redjury_client.py"] {
        std::fs::copy(root().join("clients/python").join(file), package.join(file)).unwrap();
    }
    let python = venv.join("bin/python");
    let pip = std::process::Command::new(&python)
        .args(["-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", "-q"])
        .arg(&package)
        .current_dir(dir)
        .output()
        .expect("pip runs");
    assert!(pip.status.success(), "pip install: {}", String::from_utf8_lossy(&pip.stderr));
    Some(python)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_deadline_is_503_and_the_work_goes_on() {
    let dir = temp_dir("serve-deadline");
    let (panel, servers) = all_slow(&dir, Duration::from_millis(2500)).await;
    let served = start(&dir, serve_args(&panel, &dir, &["--deadline", "1"]));
    let task = "redline-s1-t1-g01a";
    let body = json!({"task": task, "docx_base64": b64(&output("strong", task))});
    let url = format!("{}/v1/score", served.url);
    let (status, reply, headers) = post(&url, &body).await;
    assert_eq!(status, 503, "{reply}");
    assert!(reply["error"].as_str().unwrap().contains("the work goes on"), "{reply}");
    assert!(headers.contains_key("retry-after"));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let (status, reply, _) = post(&url, &body).await;
    assert_eq!(status, 200, "the retry is answered from the finished work: {reply}");
    assert!(servers.iter().all(|s| s.requests().len() == 1), "no judge was asked twice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_document_can_come_with_the_request() {
    let dir = temp_dir("serve-input");
    let (panel, _servers) = all_answering(&dir).await;
    let served = start(&dir, serve_args(&panel, &dir, &[]));
    let url = format!("{}/v1/score", served.url);
    // Turn 3: the input holds this side's turn-1 changes, which only a
    // gate that knows the input sets apart.
    let task = "redline-s1-t3-g01a";
    let spec_text = std::fs::read_to_string(root().join(format!("rubrics/{task}.json"))).unwrap();
    let mut spec: Value = serde_json::from_str(&spec_text).unwrap();
    let input = root().join("rubrics").join(spec["input"].as_str().unwrap());
    spec.as_object_mut().unwrap().remove("input");
    // A server without --allow-path reads no file, an expert redline neither.
    spec.as_object_mut().unwrap().remove("expert");
    let doc = b64(&output("strong", task));
    let (_, named, _) = post(&url, &json!({"task": task, "docx_base64": doc})).await;
    let (status, sent, _) = post(
        &url,
        &json!({"task": task, "task_spec": spec, "docx_base64": doc, "input_base64": b64(&input)}),
    )
    .await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["gate"], named["gate"], "the gate compares with the input sent");
    assert!(sent["gate"]["reason"].as_str().unwrap().contains("carried over from the input"));
    assert_eq!(sent["reward"], named["reward"]);
    let (status, reply, _) =
        post(&url, &json!({"task": task, "docx_base64": doc, "input_base64": b64(&input)})).await;
    assert_eq!(status, 400);
    assert!(reply["error"].as_str().unwrap().contains("already has an input document"), "{reply}");
}

/// One posted file of each hostile class: each answered as a gate failure
/// naming what the reader met, and the service answers the next request
/// (the reader that crashed was a child; the server is still there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_files_cost_a_reason_each_and_the_service_answers_the_next() {
    let dir = temp_dir("serve-hostile");
    let (panel, _servers) = all_answering(&dir).await;
    let mut a = serve_args(&panel, &dir, &[]);
    a[1] = "scenarios/s5-exhibits/rubrics".into();
    let mut served = start(&dir, a);
    let url = format!("{}/v1/score", served.url);
    let good = root().join("scenarios/s5-exhibits/outputs/strong/redline-s5-t1-g01a.pdf");
    let b64_of = |bytes: &[u8]| base64::engine::general_purpose::STANDARD.encode(bytes);
    for h in crate::common::hostile::classes() {
        let body = json!({"task": "redline-s5-t1-g01a", "trial": h.class, "docx_base64": b64_of(&h.bytes)});
        let (status, reply, _) = post(&url, &body).await;
        assert_eq!(status, 200, "{}: {reply}", h.class);
        assert_eq!(reply["status"], "gate_failed", "{}: {reply}", h.class);
        let why = reply["gate"]["reason"].as_str().unwrap_or_default();
        assert!(why.contains(h.reason), "{}: {why}", h.class);
        let body =
            json!({"task": "redline-s5-t1-g01a", "trial": "good", "docx_base64": b64(&good)});
        let (status, reply, _) = post(&url, &body).await;
        assert_eq!(status, 200, "after {}: {reply}", h.class);
        assert_eq!(reply["gate"]["passed"], true, "after {}: {reply}", h.class);
    }
    served.term();
    assert_eq!(served.wait(Duration::from_secs(30)), Some(0), "{}", served.stderr());
    for raw in ["panicked", "has overflowed its stack", "backtrace"] {
        assert!(!served.stderr().contains(raw), "{raw}: {}", served.stderr());
    }
}
