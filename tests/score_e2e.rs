//! End to end on the bundled example benchmark, with three mock judges (one
//! per provider wire format) answering from the gold verdicts in gold/:
//! score → identical rerun (zero calls) → rejudge with one judge changed
//! (only its calls go out) → report; plus gate failures, incompleteness and
//! the sanity check that the rubrics discriminate.
use std::process::Command;
use std::sync::Arc;

use crate::common::e2e::*;
use crate::common::mock::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn score_rerun_rejudge_report() {
    let judges = Judges::start("gold").await;
    let dir = temp_dir("main");
    let cache = dir.join("cache.sqlite");
    let panel = judges.panel(&dir, "gemini-test");
    let run1 = dir.join("run1");

    let (code, out, err) = redjury(score_args("gold/redlines", &panel, &run1, &cache), true).await;
    assert_eq!(code, 0, "{out}{err}");
    // 15 tasks: 8 judged only, s3-t1 and s3-t2 checks only, s3-t3 and the
    // four s4 tasks (one with a spreadsheet output) mixed.
    assert_eq!(judges.counts(), [13, 13, 13], "one call per task with judge items, per judge");
    let s = summary(&run1);
    assert_eq!(s["counts"]["scored"], 15);
    let headline = s["turn_weighted"].as_f64().expect("headline");
    assert!(headline >= 0.9, "gold redlines judged with gold verdicts score high: {headline}");
    assert_eq!(
        std::fs::read_to_string(run1.join("rewards.jsonl")).expect("rewards").lines().count(),
        15
    );
    let rows = results(&run1);
    let first = &rows[0];
    assert_eq!(first["status"], "scored");
    assert_eq!(first["rubrics"][0]["votes"].as_object().map(|o| o.len()), Some(3));
    assert!(
        first["rubrics"][0]["justifications"]["gpt"].as_str().unwrap_or("").starts_with("Checked")
    );
    assert!(run1.join("views/redline-s1-t2-g01a.md").is_file());
    for f in ["results.jsonl", "summary.json", "prompts.jsonl", "rewards.jsonl"] {
        let text = std::fs::read_to_string(run1.join(f)).expect("read");
        assert!(!text.contains("sk-e2e-secret"), "the API key reached {f}");
    }

    // rewards.jsonl and results.jsonl keep each reward unrounded (only the
    // published figures are rounded to 4 places, as the reference rounds them).
    let rewards: Vec<serde_json::Value> = std::fs::read_to_string(run1.join("rewards.jsonl"))
        .expect("rewards")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let fine = rewards
        .iter()
        .filter_map(|r| r["reward"].as_f64())
        .find(|x| ((x * 1e4).round() / 1e4 - x).abs() > 1e-12)
        .expect("a reward with more than 4 decimal places");
    assert!(rows.iter().any(|r| r["reward"].as_f64() == Some(fine)), "{fine}");

    // An identical rerun is served from the cache: zero network calls. With
    // --model, the reference CI is seeded by the model's name as the
    // reference seeds it ("gpt55": 437).
    let run2 = dir.join("run2");
    let mut a = score_args("gold/redlines", &panel, &run2, &cache);
    a.extend(["--model".to_string(), "gpt55".to_string()]);
    let (code, out, err) = redjury(a, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(judges.counts(), [13, 13, 13], "no call on the rerun");
    assert_eq!(results(&run2), rows, "same results");
    let reference = &summary(&run2)["ci95_reference"];
    assert_eq!(
        (reference["model"].as_str(), reference["seed"].as_u64()),
        (Some("gpt55"), Some(437))
    );
    assert_eq!(summary(&run2)["judges"]["gpt"]["cache_hits"], 13);

    // Rejudge from the stored prompts with the Gemini judge's model changed:
    // only its calls go out.
    let changed = judges.panel(&dir, "gemini-other");
    let run3 = dir.join("run3");
    let args: Vec<String> = [
        "rejudge",
        "--run",
        &run1.display().to_string(),
        "--panel",
        &changed.display().to_string(),
        "--out",
        &run3.display().to_string(),
        "--cache",
        &cache.display().to_string(),
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (code, out, err) = redjury(args, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(judges.counts(), [13, 13, 26], "only the changed judge is called");
    assert_eq!(summary(&run3)["counts"]["scored"], 15);
    assert!(run3.join("views/redline-s1-t2-g01a.md").is_file(), "views carried over");

    // Report with a paired comparison and judge agreement.
    let (code, out, err) = redjury(
        vec![
            "report".into(),
            run3.display().to_string(),
            "--compare".into(),
            run1.display().to_string(),
        ],
        false,
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("# Paired comparison")
            && out.contains("15 task × trial rows scored in both runs"),
        "{out}"
    );
    assert!(out.contains("| turn-weighted |") && out.contains("+0.0000"), "{out}");
    assert!(out.contains("Fleiss' kappa over") && out.contains("| claude – gemini |"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rubrics_discriminate_and_gate_failures_count_as_zero() {
    let judges = Judges::start("weak").await;
    let dir = temp_dir("weak");
    let cache = dir.join("cache.sqlite");
    let panel = judges.panel(&dir, "gemini-test");
    let run = dir.join("weak");
    let (code, out, err) =
        redjury(score_args("scenarios/outputs/weak", &panel, &run, &cache), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let weak = summary(&run)["turn_weighted"].as_f64().expect("headline");
    assert!(weak <= 0.35, "weak outputs score low: {weak}");

    // Gate-failing outputs: reward 0 with a reason, no judge called, and
    // tasks without an output are listed, not dropped.
    let before = judges.counts();
    let run = dir.join("gate");
    let (code, out, err) =
        redjury(score_args("scenarios/outputs/gate-fail", &panel, &run, &cache), true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(judges.counts(), before, "gate failures are not judged");
    let s = summary(&run);
    assert_eq!(s["counts"]["gate_failed"], 3);
    assert_eq!(s["counts"]["missing_outputs"], 12);
    assert_eq!(s["missing"].as_array().map(|a| a.len()), Some(12));
    assert_eq!(s["turn_weighted"], 0.0);
    for row in results(&run) {
        assert_eq!(row["status"], "gate_failed");
        assert_eq!(row["reward"], 0.0);
        assert!(
            row["gate"]["reason"]
                .as_str()
                .unwrap_or("")
                .starts_with("no tracked change or comment"),
            "{row}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judges_without_keys_leave_tasks_incomplete_or_pending_never_zero() {
    let judges = Judges::start("gold").await;
    let dir = temp_dir("keys");
    let cache = dir.join("cache.sqlite");
    let panel = judges.panel(&dir, "gemini-test");
    // No key for any judge: a dry run, exit 0, everything pending.
    let run = dir.join("dry");
    let mut args = score_args("gold/redlines", &panel, &run, &cache);
    args.retain(|a| a != "--quiet");
    let (code, out, err) = redjury(args, false).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("dry run: no judge has an API key (set E2E_ANTHROPIC_KEY, E2E_GEMINI_KEY, E2E_OPENAI_KEY)"), "{out}");
    assert_eq!(judges.counts(), [0, 0, 0]);
    let s = summary(&run);
    // The two tasks made only of checks are scored offline; the rest wait.
    assert_eq!(
        (s["counts"]["pending"].as_u64(), s["counts"]["scored"].as_u64()),
        (Some(13), Some(2))
    );
    assert_eq!(s["dry_run"], true);
    assert!(s["judges"]["gpt"]["estimate"]["calls"].as_u64() == Some(13));
    let rewards = std::fs::read_to_string(run.join("rewards.jsonl")).expect("rewards");
    assert_eq!(rewards.lines().count(), 2, "rewards only for the rows scored offline: {rewards}");
    assert!(
        rewards.contains("\"redline-s3-t1-g01a\"") && rewards.contains("\"redline-s3-t2-g01a\""),
        "{rewards}"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("prompts.jsonl")).expect("prompts").lines().count(),
        13,
        "prompts stored"
    );

    // Two of three judges fail for good (401): quorum 2 cannot be met, so
    // every row is incomplete, exit 3, and no reward is written.
    let bad: Handler =
        Arc::new(|_: &Recorded, _| status(401, &[], r#"{"error":{"message":"bad key"}}"#));
    let openai = MockServer::start(bad.clone()).await;
    let anthropic = MockServer::start(bad).await;
    let broken =
        Judges { openai, anthropic, gemini: MockServer::start(stand_in("gemini", "gold")).await };
    let panel = broken.panel(&dir, "gemini-test");
    let run = dir.join("incomplete");
    let (code, out, err) =
        redjury(score_args("gold/redlines", &panel, &run, &dir.join("cache2.sqlite")), true).await;
    assert_eq!(code, 3, "{out}{err}");
    let s = summary(&run);
    assert_eq!(s["counts"]["incomplete"], 13);
    assert_eq!(s["counts"]["scored"], 2, "the check-only tasks need no judge");
    let row = &results(&run)[0];
    assert!(row["reward"].is_null());
    assert!(
        row["rubrics"][0]["abstentions"]["gpt"].as_str().unwrap_or("").contains("HTTP 401"),
        "{row}"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("rewards.jsonl")).expect("rewards").lines().count(),
        2,
        "no reward for incomplete rows"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_loses_no_answer_and_resumes_from_the_cache() {
    // One slow judge, one call at a time: kill -9 the run mid-way.
    let slow: Handler = Arc::new(|req: &Recorded, _| {
        Action::Later(
            std::time::Duration::from_millis(300),
            success_body("openai", &verdicts_json(&req.rubric_ids(), &|_| "PASS")),
        )
    });
    let server = MockServer::start(slow).await;
    let dir = temp_dir("kill");
    let panel = dir.join("panel.toml");
    std::fs::write(
        &panel,
        format!(
            "[vote]\nquorum = 1\n\n[[judge]]\nname = \"gpt\"\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"{}/v1\"\napi_key_env = \"E2E_OPENAI_KEY\"\nrpm = 6000\ntpm = 10000000\nmax_concurrency = 1\ntimeout_secs = 10\nmax_attempts = 2\n",
            server.url()
        ),
    )
    .expect("panel");
    let cache = dir.join("cache.sqlite");
    let args = score_args("gold/redlines", &panel, &dir.join("run"), &cache);
    let mut child = Command::new(env!("CARGO_BIN_EXE_redjury"))
        .args(&args)
        .current_dir(root())
        .env("E2E_OPENAI_KEY", "k")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start redjury");
    // Wait until three answers went out and a fourth call is in flight.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.requests().len() < 4 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    child.kill().expect("kill -9");
    let _ = child.wait();
    let sent_before = server.requests().len();
    assert!((4..13).contains(&sent_before), "killed mid-run after {sent_before} calls");
    let stored = redjury::Cache::open(&cache).expect("cache").response_count().expect("count");
    assert!(stored >= 3, "every answer received before the kill is in the cache: {stored}");
    // Resume: only the calls without a stored answer go out.
    let (code, out, err) = redjury(args, true).await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        server.requests().len() - sent_before,
        13 - stored as usize,
        "the rerun asks only for what is missing"
    );
    assert_eq!(summary(&dir.join("run"))["counts"]["scored"], 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_trials_share_one_paid_call_and_clashing_trials_are_refused() {
    let judges = Judges::start("gold").await;
    let dir = temp_dir("dedupe");
    let outputs = dir.join("outputs");
    for trial in ["a", "b", "c"] {
        let t = outputs.join("redline-s1-t2-g01a").join(trial);
        std::fs::create_dir_all(&t).expect("mkdir");
        std::fs::copy(
            root().join("gold/redlines/redline-s1-t2-g01a.docx"),
            t.join("contract.docx"),
        )
        .expect("copy");
    }
    let panel = judges.panel(&dir, "gemini-test");
    let run = dir.join("run");
    let (code, out, err) = redjury(
        score_args(&outputs.display().to_string(), &panel, &run, &dir.join("cache.sqlite")),
        true,
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(judges.counts(), [1, 1, 1], "three identical trials, one call per judge");
    let s = summary(&run);
    assert_eq!(s["counts"]["scored"], 3);
    assert_eq!(s["best_at_k"]["k"], 3);
    assert_eq!(s["counts"]["missing_outputs"], 14);
    // <task>/contract.docx and <task>/1/contract.docx are both trial 1.
    let t = outputs.join("redline-s1-t2-g01a");
    std::fs::create_dir_all(t.join("1")).expect("mkdir");
    std::fs::copy(t.join("a/contract.docx"), t.join("contract.docx")).expect("copy");
    std::fs::copy(t.join("a/contract.docx"), t.join("1/contract.docx")).expect("copy");
    let (code, _, err) = redjury(
        score_args(
            &outputs.display().to_string(),
            &panel,
            &dir.join("run2"),
            &dir.join("cache.sqlite"),
        ),
        true,
    )
    .await;
    assert_eq!(code, 2, "found before any work: refused");
    assert!(err.contains("a second output for task redline-s1-t2-g01a trial 1"), "{err}");
}
