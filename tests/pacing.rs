//! Pacing against a provider that enforces its limit over a sliding
//! one-second window: one judge, and five processes sharing one rate
//! budget in a PostgreSQL store. Timing tests, so they have a test binary
//! of their own: the other judge tests, running beside them on two cores,
//! took enough CPU to push them under their threshold in some runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

/// The test helpers; most of them serve the main test binary.
#[allow(dead_code, unused_imports)]
#[path = "common/mod.rs"]
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::mock::*;
use redjury::Cache;
use redjury::Templates;
use redjury::{Auth, Judge};
use redjury::{JudgeConfig, Provider, Rate};
use redjury::{Rubric, Side, Task};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_pacing_holds_a_sliding_window_limit() {
    // 40 a second in any sliding second; rpm set to the limit, then
    // learned, from OpenAI's headers and from Anthropic's.
    let cases = [
        (Provider::Openai, Reports::OpenAi, Rate::PerMinute(2400)),
        (Provider::Openai, Reports::OpenAi, Rate::Auto),
        (Provider::Anthropic, Reports::Anthropic, Rate::Auto),
    ];
    let rubrics = vec![Rubric::llm("r1", "Criterion r1", "Legal correctness", 5)];
    let task = Task::named("redline-s1-t1-g01a", Side::A, "Vendor Counsel", rubrics);
    let templates = Templates::builtin();
    // Built before the clock starts: the test measures the pace, not its own work.
    let prompts: Vec<_> =
        (0..200).map(|i| Arc::new(templates.render(&task, &format!("doc {i}")))).collect();
    for (provider, reports, rpm) in cases {
        let (handler, window) = sliding_window(provider.as_str(), 40, reports);
        let server = MockServer::start(handler).await;
        let mut cfg = JudgeConfig::new("paced", provider, "test-model");
        cfg.base_url = match provider {
            Provider::Openai => format!("{}/v1", server.url()),
            _ => server.url(),
        };
        (cfg.rpm, cfg.tpm, cfg.max_concurrency, cfg.max_attempts) =
            (rpm, Rate::PerMinute(10_000_000), 16, 6);
        (cfg.max_output_tokens, cfg.retry_base_ms) = (1024, 20);
        let judge = Arc::new(Judge::new(cfg, Auth::Key("k".into())).expect("judge"));
        let path = std::env::temp_dir().join(format!(
            "redjury-pacing-{}-{rpm:?}-{}.sqlite",
            provider.as_str(),
            std::process::id()
        ));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let cache = Arc::new(Cache::open(&path).expect("cache"));
        let mut set = tokio::task::JoinSet::new();
        for prompt in &prompts {
            let (judge, cache, prompt) = (judge.clone(), cache.clone(), prompt.clone());
            set.spawn(async move { judge.call(&prompt, 0, &cache).await });
        }
        while let Some(r) = set.join_next().await {
            assert_eq!(r.expect("join").failure, None);
        }
        let w = window.lock().unwrap();
        eprintln!(
            "{} {rpm:?}: {:.2}/s of a 40/s limit, {} answered 429",
            provider.as_str(),
            w.rate(),
            w.refused
        );
        // Behaviour, with bounds a loaded two-core machine meets: never
        // over the limit, progress made, the pace taken from the headers.
        // How close to the limit it runs (97% of it, no 429) is the judge
        // benchmark's figure (docs/benchmarks.md), not a test's.
        // Paced exactly at the limit, one request delayed on its way by a
        // busy machine lands in the next window beside its successors: a
        // few 429s (retried) are jitter, not overspending. Unpaced, most
        // of the 200 would be refused. (CI on 2026-12-02: 2 of 202.)
        assert!(
            w.refused_share() <= 0.02,
            "{rpm:?}: {} of {} answered 429",
            w.refused,
            w.accepted.len() + w.refused
        );
        assert!(w.rate() >= 0.5 * 40.0, "{rpm:?}: {:.2}/s of a 40/s limit", w.rate());
        let seen = judge.observed_limits();
        assert_eq!(seen.requests_per_minute, Some(2400), "the limit the provider reported");
        assert!(
            seen.paced_rpm > 0.0 && seen.paced_rpm <= 2400.0,
            "{rpm:?}: paced at {} rpm, under the reported 2,400",
            seen.paced_rpm
        );
    }
}

/// Three `serve` replicas and two `score --shard` workers on one
/// PostgreSQL store share one judge whose provider allows 25 requests in
/// any second: together they stay under it (the shared budget reserves
/// each request's slot in the store) and keep it busy. Bounds a loaded
/// two-core machine meets; how close to the limit they run is the shared
/// store benchmark's figure (docs/benchmarks.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_and_shards_share_one_rate_budget() {
    let Some(store) = common::postgres::store("budget") else { return };
    let limit = 25;
    let (handler, window) = shared_window("openai", limit, Reports::OpenAi, 0);
    let server = MockServer::start(handler).await;
    let dir = common::temp_dir("budget");
    let panel = dir.join("panel.toml");
    std::fs::write(
        &panel,
        format!(
            "[vote]\nquorum = 1\n\n[[judge]]\nname = \"gpt\"\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"{}/v1\"\napi_key_env = \"E2E_OPENAI_KEY\"\nrpm = {}\ntpm = 100000000\nmax_concurrency = 16\ntimeout_secs = 30\nmax_attempts = 6\nretry_base_ms = 50\n",
            server.url(),
            limit * 60
        ),
    )
    .unwrap();
    // Distinct documents: each one call.
    let doc = |i: usize| {
        let body = format!(
            "<w:p>{}</w:p>",
            common::ins(1, "Vendor Counsel", &format!("Clause {i} is amended."))
        );
        common::Docx::body(&body).bytes()
    };
    let outs = dir.join("outs").join("redline-s1-t1-g01a");
    for i in 0..150 {
        let file = outs.join(format!("t{i}")).join("contract.docx");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, doc(i)).unwrap();
    }
    let keys = [("E2E_OPENAI_KEY", "k")];
    let replicas: Vec<common::served::Served> = (0..3)
        .map(|_| {
            let a: Vec<String> = [
                "--tasks",
                "rubrics",
                "--panel",
                &show(&panel),
                "--cache",
                &store,
                "--bind",
                "127.0.0.1:0",
                "--queue",
                "64",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            common::served::Served::start(&common::root(), &a, &keys).unwrap()
        })
        .collect();
    let mut work = tokio::task::JoinSet::new();
    for k in 0..2 {
        let args: Vec<String> = [
            "score",
            "--tasks",
            "rubrics",
            "--outputs",
            &show(&dir.join("outs")),
            "--panel",
            &show(&panel),
            "--cache",
            &store,
            "--out",
            &show(&dir.join(format!("shard{k}"))),
            "--quiet",
            "--shard",
            &format!("{k}/2"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        work.spawn(async move {
            let (code, _, err) =
                common::e2e::redjury_with(&common::root(), args, &["E2E_OPENAI_KEY"]).await;
            assert_eq!(code, 0, "{err}");
        });
    }
    let client = reqwest::Client::new();
    for (r, replica) in replicas.iter().enumerate() {
        for c in 0..8 {
            let (client, url) = (client.clone(), format!("{}/v1/score", replica.url));
            let docs: Vec<Vec<u8>> = (0..10).map(|n| doc(1000 + r * 100 + c * 10 + n)).collect();
            work.spawn(async move {
                use base64::Engine;
                for d in docs {
                    let b64 = base64::engine::general_purpose::STANDARD.encode(d);
                    let body =
                        serde_json::json!({"task": "redline-s1-t1-g01a", "docx_base64": b64});
                    let r = client
                        .post(&url)
                        .json(&body)
                        .timeout(Duration::from_secs(170))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status().as_u16(), 200);
                }
            });
        }
    }
    while let Some(r) = work.join_next().await {
        r.unwrap();
    }
    let w = window.lock().unwrap();
    let total = w.accepted.len() + w.refused;
    eprintln!(
        "5 processes: {:.2}/s of a {limit}/s limit over {} requests, {} answered 429",
        w.rate(),
        total,
        w.refused
    );
    assert_eq!(w.accepted.len(), 150 + 240, "every call answered once");
    // A bound a loaded 2-core machine meets: runs measured 1 and 2 of 392
    // answered 429 (0.26–0.51%; 0.5% failed CI once). Five processes each
    // pacing on a private 25/s budget would send up to five times the
    // limit, so this still tells a shared budget from none.
    assert!(w.refused_share() <= 0.015, "{} of {total} answered 429", w.refused);
    assert!(w.rate() >= 0.8 * limit as f64, "{:.2}/s of a {limit}/s limit", w.rate());
}

fn show(p: &Path) -> String {
    p.display().to_string()
}
