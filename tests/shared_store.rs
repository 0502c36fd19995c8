//! The store beyond one machine: the same guarantees from PostgreSQL as
//! from SQLite; replicas of `serve` and shards of `score` on one
//! PostgreSQL store; `redjury merge`; `redjury cache copy` both ways. The
//! PostgreSQL tests need a server (`tests/common/postgres.rs`).
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::common::e2e::*;
use crate::common::mock::*;
use crate::common::postgres;
use crate::common::served::Served;
use redjury::{BatchRecord, BatchState, Cache, CallKey, Lease, Outcome, StoredResponse, Usage};
use serde_json::{Value, json};

fn key(n: u32) -> CallKey {
    CallKey {
        provider: "openai".into(),
        model: "m".into(),
        params: "p".into(),
        template_version: "v".into(),
        prompt_hash: format!("h{n}"),
        repeat: 0,
    }
}

fn answer(text: &str) -> StoredResponse {
    StoredResponse {
        outcome: Outcome::Text,
        text: text.into(),
        usage: Usage { input: 10, output: 2, cached: 0, cache_write: 0 },
        latency_ms: 5,
        attempts: 1,
    }
}

/// What every engine must do, asked of one store.
fn keeps_what_a_store_keeps(cache: &Cache) {
    let prompt = redjury::Templates::builtin().render(
        &redjury::Task::named(
            "redline-s1-t1-g01a",
            redjury::Side::A,
            "A",
            vec![redjury::Rubric::llm("r1", "Criterion", "Legal correctness", 5)],
        ),
        "doc",
    );
    cache.put_prompt(&prompt).unwrap();
    cache.put_prompt(&prompt).unwrap();
    assert_eq!(cache.get_prompt(&prompt.hash).unwrap(), Some(prompt.clone()));
    // The first paid answer is the one kept.
    cache.put_response(&key(1), &answer("first")).unwrap();
    cache.put_response(&key(1), &answer("second")).unwrap();
    assert_eq!(cache.get_response(&key(1)).unwrap().unwrap().text, "first");
    assert_eq!(cache.get_response(&key(2)).unwrap(), None);
    assert_eq!(cache.response_count().unwrap(), 1);
    // One owner at a time; renewed by its owner; free once released or expired.
    let ttl = Duration::from_secs(60);
    assert_eq!(cache.claim(&key(3), "elsewhere/1/a", ttl).unwrap(), Lease::Granted);
    assert_eq!(cache.claim(&key(3), "elsewhere/2/b", ttl).unwrap(), Lease::HeldElsewhere);
    assert_eq!(cache.claim(&key(3), "elsewhere/1/a", ttl).unwrap(), Lease::Granted);
    cache.release(&key(3), "elsewhere/1/a").unwrap();
    assert_eq!(cache.claim(&key(3), "elsewhere/2/b", ttl).unwrap(), Lease::Granted);
    let short = Duration::from_millis(300);
    assert_eq!(cache.claim(&key(4), "elsewhere/1/a", short).unwrap(), Lease::Granted);
    assert_eq!(cache.claim(&key(4), "elsewhere/2/b", ttl).unwrap(), Lease::HeldElsewhere);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(cache.claim(&key(4), "elsewhere/2/b", ttl).unwrap(), Lease::Granted, "expired");
    // Renders and check verdicts.
    cache.put_render("r", "{\"passed\":true}", Some("view")).unwrap();
    assert_eq!(
        cache.get_render("r").unwrap(),
        Some(("{\"passed\":true}".into(), Some("view".into())))
    );
    cache.put_checks("c", "[1]").unwrap();
    cache.put_checks("c", "[2]").unwrap();
    assert_eq!(cache.get_checks("c").unwrap(), Some("[2]".into()));
    // A batch intent, found by its call, adopted under the provider's id.
    let intent = BatchRecord {
        id: BatchRecord::intent_id("tag-1"),
        judge: "gpt".into(),
        provider: "openai".into(),
        base_url: "http://x/v1".into(),
        model: "m".into(),
        state: BatchState::Intent,
        items: 2,
        input_file: None,
        note: None,
        created_at: 1_700_000_000,
        tag: Some("tag-1".into()),
        owner: Some("me".into()),
    };
    let items: Vec<redjury::BatchItem> = (5..7)
        .map(|n| redjury::BatchItem {
            custom_id: key(n).digest(),
            key: key(n),
            rubric_ids: Some(vec!["r1".into()]),
            position: n - 5,
        })
        .collect();
    cache.record_batch(&intent, &items).unwrap();
    assert_eq!(
        cache.open_batch_of(&key(6).digest(), "http://x/v1").unwrap(),
        Some((intent.id.clone(), BatchState::Intent))
    );
    cache.adopt_intent(&intent.id, "batch_1", Some("file_1")).unwrap();
    let b = cache.batch("batch_1").unwrap().unwrap();
    assert_eq!(
        (b.state, b.input_file.as_deref(), b.tag.as_deref()),
        (BatchState::Submitted, Some("file_1"), Some("tag-1"))
    );
    assert_eq!(cache.batch(&intent.id).unwrap(), None);
    assert_eq!(cache.batch_items("batch_1").unwrap(), items);
    cache.set_batch_state("batch_1", BatchState::Collected, Some("done")).unwrap();
    let all = cache.batches().unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!((all[0].state, all[0].note.as_deref()), (BatchState::Collected, Some("done")));
    assert!(cache.adopt_intent("intent:none", "x", None).is_err());
}

#[test]
fn a_postgres_store_keeps_what_a_sqlite_store_keeps() {
    let dir = temp_dir("store-conformance");
    keeps_what_a_store_keeps(&Cache::open(&dir.join("c.sqlite")).unwrap());
    let Some(url) = postgres::store("conformance") else { return };
    let cache = Cache::open(Path::new(&url)).unwrap();
    assert!(cache.shared());
    keeps_what_a_store_keeps(&cache);
    let shown = cache.path().display().to_string();
    assert!(!shown.contains(":secret@"), "{shown}");
}

/// A schema a newer redjury wrote is refused, and nothing is written to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_schema_a_newer_redjury_wrote_is_refused_untouched() {
    let Some(url) = postgres::store("newer") else { return };
    let cache = Cache::open(Path::new(&url)).unwrap();
    drop(cache);
    let schema = url.rsplit("redjury_schema=").next().unwrap().to_string();
    let base = url.split('?').next().unwrap().to_string();
    let (client, conn) = tokio_postgres::connect(&base, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    client
        .batch_execute(&format!(
            "UPDATE {schema}.meta SET value = 99 WHERE name = 'schema_version'"
        ))
        .await
        .unwrap();
    let u = url.clone();
    let e = tokio::task::spawn_blocking(move || {
        Cache::open(Path::new(&u)).err().map(|e| e.to_string())
    })
    .await
    .unwrap()
    .expect("refused");
    assert!(e.contains("written by a newer redjury (schema version 99"), "{e}");
    let v: i64 = client
        .query_one(&format!("SELECT value FROM {schema}.meta WHERE name = 'schema_version'"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 99, "left as it was");
}

/// A team's paid answers carry over: SQLite → PostgreSQL → SQLite, and a
/// run on the copy calls no judge. A copy run again adds nothing twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_copy_moves_every_answer_both_ways_and_can_run_again() {
    let Some(url) = postgres::store("copy") else { return };
    let judges = Judges::start("gold").await;
    let dir = temp_dir("cache-copy");
    let panel = judges.panel(&dir, "gemini-test");
    let first = dir.join("first.sqlite");
    let (code, o, e) =
        redjury(score_args("gold/redlines", &panel, &dir.join("run1"), &first), true).await;
    assert_eq!(code, 0, "{o}{e}");
    let calls = judges.counts();
    for _ in 0..2 {
        let (code, out, err) = redjury(args(&["cache", "copy", &shown(&first), &url]), false).await;
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("responses: 39 in the source, 39 in the destination"), "{out}");
    }
    let back = dir.join("back.sqlite");
    let (code, out, err) = redjury(args(&["cache", "copy", &url, &shown(&back)]), false).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("prompts: 13 in the source, 13 in the destination"), "{out}");
    for cache in [url.clone(), shown(&back)] {
        let run = dir.join(format!("again-{}", cache.len()));
        let (code, o, e) =
            redjury(score_args("gold/redlines", &panel, &run, Path::new(&cache)), true).await;
        assert_eq!(code, 0, "{o}{e}");
        assert_eq!(judges.counts(), calls, "answered from the copy in {cache}");
        assert_eq!(results(&run), results(&dir.join("run1")));
    }
    let (code, _, err) =
        redjury(args(&["cache", "copy", &shown(&dir.join("none.sqlite")), &url]), false).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no cache at"), "{err}");
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

fn serve_on(store: &str, panel: &Path) -> Served {
    let a = args(&[
        "--tasks",
        "rubrics",
        "--panel",
        &shown(panel),
        "--cache",
        store,
        "--bind",
        "127.0.0.1:0",
    ]);
    Served::start(
        &root(),
        &a,
        &[
            ("E2E_OPENAI_KEY", "k"),
            ("E2E_ANTHROPIC_KEY", "k"),
            ("E2E_GEMINI_KEY", "k"),
            ("REDJURY_LEASE_SECS", "2"),
        ],
    )
    .unwrap_or_else(|f| panic!("serve did not start: {f:?}"))
}

/// 32 identical requests spread over three replicas on one store make one
/// call per judge: the lease makes the others wait for the first's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn replicas_on_one_store_make_one_call_for_identical_requests() {
    let Some(url) = postgres::store("replicas") else { return };
    let dir = temp_dir("replicas");
    let delay = Duration::from_millis(800);
    let slow = |provider: &'static str| -> Handler {
        Arc::new(move |req: &Recorded, _| {
            Action::Later(
                delay,
                success_body(provider, &verdicts_json(&req.rubric_ids(), &|_| "PASS")),
            )
        })
    };
    let judges = Judges::with(["openai", "anthropic", "gemini"].map(slow)).await;
    let panel = judges.panel(&dir, "gemini-test");
    let replicas: Vec<Served> = (0..3).map(|_| serve_on(&url, &panel)).collect();
    let task = "redline-s1-t1-g01a";
    let doc = base64_of(&root().join("scenarios/outputs/strong").join(format!("{task}.docx")));
    let client = reqwest::Client::new();
    let mut sent = tokio::task::JoinSet::new();
    for i in 0..32 {
        let url = format!("{}/v1/score", replicas[i % 3].url);
        let body = json!({"task": task, "docx_base64": doc});
        let client = client.clone();
        sent.spawn(async move {
            let r = client.post(url).json(&body).send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        });
    }
    let mut rewards = Vec::new();
    while let Some(r) = sent.join_next().await {
        let (status, reply) = r.unwrap();
        assert_eq!(status, 200, "{reply}");
        rewards.push(reply["reward"].as_f64().unwrap());
    }
    assert!(rewards.windows(2).all(|w| w[0] == w[1]), "{rewards:?}");
    assert_eq!(judges.counts(), [1, 1, 1], "one call per judge across the replicas");
}

/// A replica killed with SIGKILL mid-call holds its lease no longer than
/// the lease lasts (REDJURY_LEASE_SECS=2 here): another replica asked the
/// same then takes the call over and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_mid_call_has_its_call_taken_over_when_the_lease_ends() {
    let Some(url) = postgres::store("takeover") else { return };
    let dir = temp_dir("takeover");
    let slow = |provider: &'static str| -> Handler {
        Arc::new(move |req: &Recorded, _| {
            Action::Later(
                Duration::from_secs(3),
                success_body(provider, &verdicts_json(&req.rubric_ids(), &|_| "PASS")),
            )
        })
    };
    let judges = Judges::with(["openai", "anthropic", "gemini"].map(slow)).await;
    let panel = judges.panel(&dir, "gemini-test");
    let mut a = serve_on(&url, &panel);
    let b = serve_on(&url, &panel);
    let task = "redline-s1-t1-g01a";
    let doc = base64_of(&root().join("scenarios/outputs/strong").join(format!("{task}.docx")));
    let body = json!({"task": task, "docx_base64": doc});
    let client = reqwest::Client::new();
    let to_a = tokio::spawn(client.post(format!("{}/v1/score", a.url)).json(&body).send());
    // A has the calls in flight (and their leases) when it dies.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(judges.counts(), [1, 1, 1]);
    a.child.kill().unwrap();
    let _ = a.child.wait();
    assert!(to_a.await.unwrap().is_err(), "A's caller lost its connection");
    let started = std::time::Instant::now();
    let r = client.post(format!("{}/v1/score", b.url)).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(judges.counts(), [2, 2, 2], "B sent the calls again once A's leases ended");
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "B waited for the judges, {:?}",
        started.elapsed()
    );
}

/// Two shards on one store score what one process scores, each about half
/// the judge calls, and `redjury merge` writes what one process writes:
/// results.jsonl, rewards.jsonl and summary.json the same bytes (the
/// cache warm, as when a benchmark is rescored).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_on_one_store_merge_into_what_one_process_writes() {
    let Some(url) = postgres::store("shards") else { return };
    let judges = Judges::start("strong").await;
    let dir = temp_dir("shards");
    let panel = judges.panel(&dir, "gemini-test");
    let store = Path::new(&url);
    let outputs = "scenarios/outputs/strong";
    // Cold, sharded: every call once between the two.
    for k in 0..2 {
        let mut a = score_args(outputs, &panel, &dir.join(format!("cold{k}")), store);
        a.extend(args(&["--shard", &format!("{k}/2")]));
        let (code, o, e) = redjury(a, true).await;
        assert_eq!(code, 0, "{o}{e}");
        let n = judges.counts();
        eprintln!("after shard {k}: {n:?}");
    }
    assert_eq!(judges.counts(), [13, 13, 13], "each call once over the two shards");
    let part = |k: u32| results(&dir.join(format!("cold{k}"))).len();
    assert_eq!(part(0) + part(1), 15);
    // Warm: one process, and two shards merged.
    let (code, o, e) = redjury(score_args(outputs, &panel, &dir.join("single"), store), true).await;
    assert_eq!(code, 0, "{o}{e}");
    for k in 0..2 {
        let mut a = score_args(outputs, &panel, &dir.join(format!("warm{k}")), store);
        a.extend(args(&["--shard", &format!("{k}/2")]));
        let (code, o, e) = redjury(a, true).await;
        assert_eq!(code, 0, "{o}{e}");
    }
    let merged = dir.join("merged");
    let (code, out, err) = redjury(
        args(&[
            "merge",
            &shown(&dir.join("warm1")),
            &shown(&dir.join("warm0")),
            "--out",
            &shown(&merged),
        ]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("15 results: 15 scored"), "{out}");
    for file in ["results.jsonl", "rewards.jsonl", "summary.json", "prompts.jsonl"] {
        let (a, b) = (
            std::fs::read(dir.join("single").join(file)).unwrap(),
            std::fs::read(merged.join(file)).unwrap(),
        );
        assert!(a == b, "{file} differs between one process and the merged shards");
    }
    assert_eq!(judges.counts(), [13, 13, 13], "the warm runs called no judge");
    // Parts that do not make a whole run are refused.
    let (code, _, err) = redjury(
        args(&["merge", &shown(&dir.join("warm0")), "--out", &shown(&dir.join("half"))]),
        false,
    )
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the parts 1/2 are missing"), "{err}");
    let (code, _, err) = redjury(
        args(&[
            "merge",
            &shown(&dir.join("warm0")),
            &shown(&dir.join("cold0")),
            "--out",
            &shown(&dir.join("twice")),
        ]),
        false,
    )
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give each part once"), "{err}");
}

/// Runs `{ctl} {action}` (`pg_ctl -D … stop -m immediate`, `start`).
fn pg_ctl(ctl: &str, action: &str) {
    let done =
        std::process::Command::new("sh").arg("-c").arg(format!("{ctl} {action}")).output().unwrap();
    assert!(done.status.success(), "{action}: {}", String::from_utf8_lossy(&done.stderr));
}

/// Judges that answer every call after 1.5 s, so that a store stopped
/// meanwhile is down when the answers arrive.
async fn slow_judges() -> Judges {
    let slow = |provider: &'static str| -> Handler {
        Arc::new(move |req: &Recorded, _| {
            Action::Later(
                Duration::from_millis(1500),
                success_body(provider, &verdicts_json(&req.rubric_ids(), &|_| "PASS")),
            )
        })
    };
    Judges::with(["openai", "anthropic", "gemini"].map(slow)).await
}

/// `score` of the strong outputs on `store`, writing to `out`.
fn strong_run(panel: &Path, out: &Path, store: &str) -> Vec<String> {
    let outputs = root().join("scenarios/outputs/strong");
    let mut a = score_args(&shown(&outputs), panel, out, Path::new(store));
    a[2] = shown(&root().join("rubrics"));
    a
}

/// Waits for the judges' first request: a fixed time would miss it on a
/// loaded machine. False when none came within 60 s.
async fn first_request(judges: &Judges) -> bool {
    let waited = std::time::Instant::now();
    while judges.counts().iter().sum::<usize>() == 0 {
        if waited.elapsed() > Duration::from_secs(60) {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// The rows of a results folder the judges did not complete.
fn incomplete_rows(out: &Path) -> usize {
    let rows = std::fs::read_to_string(out.join("results.jsonl")).unwrap_or_default();
    rows.lines().filter(|l| l.contains(r#""status":"incomplete""#)).count()
}

fn journals_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".pending.jsonl"))
                .collect()
        })
        .unwrap_or_default()
}

/// The store down (a crash: `pg_ctl stop -m immediate`) for 2.5 s under
/// two `score` processes on the same outputs, stopped as the first call
/// goes out (every first answer arrives while it is down), 1.6 s later
/// (the first answers stored, the next ones arriving while it is down) and
/// 3.2 s later (answers in, the processes finishing or waiting on the
/// other's leases). Every time the calls answered equal the distinct
/// calls, both exit 0 with every answer stored, and a rerun pays nothing.
/// (Issue 35: 12 of 16 restarts paid 1–4 calls twice — a holder journaled
/// its answers and exited while the store was down and the other process
/// took its leases over, or holders kept their answers journaled and their
/// leases taken until the leases expired.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_restarted_under_two_processes_has_every_call_paid_once() {
    for (round, stop_after) in [0u64, 1600, 3200].into_iter().enumerate() {
        let test = format!("restart{round}");
        let Some((url, ctl, _turn)) = postgres::restartable(&test).await else { return };
        let dir = temp_dir(&test);
        let judges = slow_judges().await;
        let panel = judges.panel(&dir, "gemini-test");
        // Each process in a folder of its own: a PostgreSQL store's
        // journal is written in the current folder.
        let mut runs = Vec::new();
        for who in ["a", "b"] {
            let cwd = dir.join(who);
            std::fs::create_dir_all(&cwd).unwrap();
            let a = strong_run(&panel, &cwd.join("run"), &url);
            runs.push(tokio::spawn(async move { redjury_at(&cwd, a, true).await }));
        }
        if !first_request(&judges).await {
            for run in runs {
                let (code, out, err) = run.await.unwrap();
                eprintln!("exit {code}: {out}{err}");
            }
            panic!("round {round}: no judge call within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(stop_after)).await;
        pg_ctl(&ctl, "-m immediate stop");
        tokio::time::sleep(Duration::from_millis(2500)).await;
        pg_ctl(&ctl, "start");
        for run in runs {
            let (code, out, err) = run.await.unwrap();
            assert_eq!(code, 0, "round {round}: {out}{err}");
        }
        assert_eq!(judges.counts(), [13, 13, 13], "round {round}: each call paid once");
        for who in ["a", "b"] {
            assert_eq!(journals_in(&dir.join(who)), Vec::<String>::new(), "round {round}: {who}");
            assert_eq!(incomplete_rows(&dir.join(who).join("run")), 0, "round {round}: {who}");
        }
        let (code, out, err) =
            redjury_at(&dir, strong_run(&panel, &dir.join("again"), &url), true).await;
        assert_eq!(code, 0, "{out}{err}");
        assert_eq!(judges.counts(), [13, 13, 13], "round {round}: every answer was stored");
        assert_eq!(incomplete_rows(&dir.join("again")), 0, "round {round}");
    }
}

/// The store stopped as the calls go out and left down: the answers that
/// arrive are journaled, the run waits for the store as long as
/// `REDJURY_STORE_WAIT_SECS` says, then exits 1 naming the journal (never
/// 0 with answers the store does not have); the next run, with the store
/// back, stores them first and pays only for the calls never sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_stays_down_ends_the_run_non_zero_naming_the_journal() {
    let Some((url, ctl, _turn)) = postgres::restartable("stays-down").await else { return };
    let dir = temp_dir("stays-down");
    let judges = slow_judges().await;
    let panel = judges.panel(&dir, "gemini-test");
    let (cwd, a) = (dir.to_path_buf(), strong_run(&panel, &dir.join("run"), &url));
    let run = tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_redjury"))
            .args(&a)
            .current_dir(&cwd)
            .env_remove("RUST_LOG")
            .env("REDJURY_STORE_WAIT_SECS", "4")
            .envs(["E2E_OPENAI_KEY", "E2E_ANTHROPIC_KEY", "E2E_GEMINI_KEY"].map(|k| (k, "sk-e2e")))
            .output()
            .expect("run redjury");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    });
    if !first_request(&judges).await {
        let (code, err) = run.await.unwrap();
        panic!("no judge call within 60 s: exit {code:?}: {err}");
    }
    pg_ctl(&ctl, "-m immediate stop");
    let (code, err) = run.await.unwrap();
    pg_ctl(&ctl, "start");
    assert_eq!(code, Some(1), "{err}");
    let journal = journals_in(&dir);
    assert_eq!(journal.len(), 1, "{err}");
    assert!(err.contains(&journal[0]) && err.contains("not in the store"), "{err}");
    let paid = judges.counts();
    assert!(
        paid.iter().sum::<usize>() > 0 && paid.iter().all(|&n| n < 13),
        "some calls were sent, not all: {paid:?}"
    );
    let (code, out, err) =
        redjury_at(&dir, strong_run(&panel, &dir.join("again"), &url), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(judges.counts(), [13, 13, 13], "the journaled answers were not paid again: {err}");
    assert_eq!(incomplete_rows(&dir.join("again")), 0, "{err}");
    assert!(journals_in(&dir).is_empty(), "the journal was emptied into the store");
}

fn base64_of(path: &Path) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(path).unwrap())
}

/// Every byte a run writes — its standard output and error, and every file
/// under the folder it runs in — for a planted password.
fn assert_secret_nowhere(secret: &str, streams: &[&str], dir: &Path) {
    for s in streams {
        assert!(!s.contains(secret), "the password is printed:\n{s}");
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap();
                let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
                assert!(!found, "the password is in {}", path.display());
            }
        }
    }
}

/// A store URL's password (userinfo and `password=`) is never printed or
/// written, when the server refuses the connection and when it accepts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_password_is_printed_and_written_nowhere() {
    const SECRET: &str = "Planted-Secret-4711";
    let root = crate::common::root();
    let (tasks, outputs) = (root.join("rubrics"), root.join("scenarios/outputs/strong"));
    let score = |cache: &str, out: &Path| {
        args(&[
            "score",
            "--tasks",
            &shown(&tasks),
            "--outputs",
            &shown(&outputs),
            "--out",
            &shown(out),
            "--cache",
            cache,
        ])
    };
    let dir = crate::common::temp_dir("store-password");
    let refused = format!(
        "postgres://redjury:{SECRET}@127.0.0.1:1/postgres?password={SECRET}&connect_timeout=2"
    );
    let (code, out, err) = redjury_at(&dir, score(&refused, &dir.join("refused")), false).await;
    assert_ne!(code, 0, "{out}{err}");
    assert!(
        out.contains("redjury:***@127.0.0.1:1") || err.contains("redjury:***@127.0.0.1:1"),
        "{out}{err}"
    );
    assert_secret_nowhere(SECRET, &[&out, &err], &dir);
    let Some(store) = postgres::store("a_store_password_is_printed_and_written_nowhere") else {
        return;
    };
    // The CI server trusts loopback, so any password connects.
    let with_password =
        store.replacen("postgres://redjury@", &format!("postgres://redjury:{SECRET}@"), 1);
    assert_ne!(with_password, store, "the test server's URL names the user redjury: {store}");
    let (code, out, err) =
        redjury_at(&dir, score(&with_password, &dir.join("accepted")), false).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_secret_nowhere(SECRET, &[&out, &err], &dir);
}

/// A lease whose holder is a process of this machine that is gone, and
/// eight waiters (each with a store connection of its own, as processes
/// have) asking for it at the same instant: exactly one takes it over,
/// every time (the takeover is one compare-and-set statement).
fn exactly_one_waiter_takes_over_a_dead_holders_lease(open: &(dyn Fn() -> Cache + Sync)) {
    let host =
        std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let dead = format!("{host}/{dead_pid}/dead");
    let ttl = Duration::from_secs(60);
    let waiters: Vec<Cache> = (0..8).map(|_| open()).collect();
    for round in 0..25u32 {
        let k = key(10_000 + round);
        assert!(matches!(open().claim(&k, &dead, ttl).unwrap(), Lease::Granted));
        let barrier = std::sync::Barrier::new(waiters.len());
        let granted: usize = std::thread::scope(|s| {
            let handles: Vec<_> = waiters
                .iter()
                .enumerate()
                .map(|(i, cache)| {
                    let (k, barrier) = (&k, &barrier);
                    let me = format!("{host}/{}/waiter{i}", std::process::id());
                    s.spawn(move || {
                        barrier.wait();
                        matches!(cache.claim(k, &me, ttl).unwrap(), Lease::Granted) as usize
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(granted, 1, "round {round}: {granted} waiters took over the same lease");
    }
}

#[test]
fn exactly_one_waiter_takes_over_a_dead_holders_lease_in_sqlite() {
    let dir = crate::common::temp_dir("lease-cas-sqlite");
    let path = dir.join("cache.sqlite");
    exactly_one_waiter_takes_over_a_dead_holders_lease(&|| Cache::open(&path).unwrap());
}

#[test]
fn exactly_one_waiter_takes_over_a_dead_holders_lease_in_postgres() {
    let Some(store) =
        postgres::store("exactly_one_waiter_takes_over_a_dead_holders_lease_in_postgres")
    else {
        return;
    };
    exactly_one_waiter_takes_over_a_dead_holders_lease(&|| Cache::open(Path::new(&store)).unwrap());
}
