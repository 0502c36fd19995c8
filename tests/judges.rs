//! Judges against in-process mock servers on 127.0.0.1 that speak each
//! provider's wire format, with injected faults.
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::mock::*;
use crate::common::{Scratch, temp_dir};
use redjury::Cache;
use redjury::JudgeVote;
use redjury::Verdict;
use redjury::{Auth, Judge};
use redjury::{JudgeConfig, Provider, Rate};
use redjury::{Prompt, Templates};
use redjury::{Rubric, Side, Task};

const KEY: &str = "sk-test-SECRET-0123456789";

fn config(provider: Provider, url: &str) -> JudgeConfig {
    let mut c = JudgeConfig::new(&format!("{}-judge", provider.as_str()), provider, "test-model");
    c.base_url = match provider {
        Provider::Openai => format!("{url}/v1"),
        _ => url.to_string(),
    };
    c.api_key_env = Some("UNUSED".into());
    (c.rpm, c.tpm, c.max_concurrency, c.timeout_secs, c.max_attempts) =
        (Rate::PerMinute(6000), Rate::PerMinute(10_000_000), 4, 5, 4);
    (c.max_output_tokens, c.retry_base_ms, c.retry_max_secs) = (1024, 20, 5);
    c
}

/// A judge of `provider` against the mock at `url`, with the test key.
fn judge_for(provider: Provider, url: &str) -> Judge {
    with_config(config(provider, url))
}

fn with_config(c: JudgeConfig) -> Judge {
    Judge::new(c, Auth::Key(KEY.into())).expect("judge")
}

fn task() -> Task {
    let rubrics = vec![
        Rubric::llm("r1", "Criterion r1", "Legal correctness", 5),
        Rubric::llm("r2", "Criterion r2", "Legal correctness", 3),
        Rubric::llm("r3", "Criterion r3", "Legal correctness", -4),
    ];
    let mut t = Task::named("redline-s1-t1-g01a", Side::A, "Vendor Counsel", rubrics);
    (t.represented_party, t.counterparty) = ("Vendor Ltd".into(), "Buyer plc".into());
    t
}

fn prompt(doc: &str) -> Prompt {
    Templates::builtin().render(&task(), doc)
}

/// A new cache, `cache.sqlite` in a scratch folder that lives as long as
/// the second value.
fn temp_cache(tag: &str) -> (Arc<Cache>, Scratch) {
    let dir = temp_dir(tag);
    (Arc::new(Cache::open(&dir.join("cache.sqlite")).expect("cache opens")), dir)
}

fn verdict(v: &JudgeVote) -> Option<Verdict> {
    v.verdict()
}

#[tokio::test]
async fn each_provider_speaks_its_wire_format_and_verdicts_are_recovered() {
    for (provider, name) in [
        (Provider::Openai, "openai"),
        (Provider::Anthropic, "anthropic"),
        (Provider::Gemini, "gemini"),
    ] {
        let server = MockServer::start(answering(name, &["r1", "r3"])).await;
        let judge = judge_for(provider, &server.url());
        let (cache, _dir) = temp_cache(name);
        let result = judge.call(&prompt("[p-000] text"), 0, &cache).await;
        assert_eq!(result.failure, None, "{name}");
        assert_eq!(verdict(&result.votes["r1"]), Some(Verdict::Pass), "{name}");
        assert_eq!(verdict(&result.votes["r2"]), Some(Verdict::Fail), "{name}");
        assert_eq!(verdict(&result.votes["r3"]), Some(Verdict::Pass), "{name}");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 1);
        let r = &reqs[0];
        let body = r.json();
        match provider {
            Provider::Openai => {
                assert_eq!(r.path, "/v1/chat/completions");
                assert_eq!(r.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
                assert_eq!(body["response_format"]["type"], "json_schema");
                assert_eq!(body["response_format"]["json_schema"]["strict"], true);
                assert_eq!(body["max_completion_tokens"], 1024);
                assert!(body.get("temperature").is_none(), "no temperature unless configured");
                assert_eq!(body["messages"][0]["role"], "system");
                assert_eq!(result.usage.cached, 800);
            }
            Provider::Anthropic => {
                assert_eq!(r.path, "/v1/messages");
                assert_eq!(
                    r.header("authorization"),
                    Some(format!("Bearer {KEY}").as_str()),
                    "as the current SDK sends it"
                );
                // The version the client is written against (judge/config.rs).
                assert_eq!(r.header("anthropic-version"), Some("2026-10-21"));
                assert_eq!(
                    body["tool_choice"],
                    serde_json::json!({"type": "tool", "name": "record_verdicts"})
                );
                assert_eq!(body["max_tokens"], 1024);
                assert_eq!(body["messages"][0]["content"][0]["cache_control"]["type"], "ephemeral");
                assert!(
                    body["messages"][0]["content"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .contains("BEGIN DOCUMENT")
                );
                assert!(
                    body["messages"][0]["content"][1]["text"]
                        .as_str()
                        .unwrap_or("")
                        .contains("## Rubric 1")
                );
                assert_eq!(result.usage.input, 1000);
            }
            Provider::Gemini => {
                assert_eq!(r.path, "/v1/models/test-model:generateContent");
                assert_eq!(r.header("x-goog-api-key"), Some(KEY));
                assert_eq!(body["generationConfig"]["responseMimeType"], "application/json");
                assert_eq!(body["generationConfig"]["responseSchema"]["type"], "OBJECT");
                assert!(
                    body["systemInstruction"]["parts"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .contains("STRICT")
                );
            }
            other => panic!("no wire-format test for {other:?}"),
        }
        let with_key = r.headers.iter().filter(|(_, v)| v.contains(KEY)).count();
        assert_eq!(with_key, 1, "the key in one header only");
        let types = r.headers.iter().filter(|(k, _)| k == "content-type").count();
        assert_eq!(types, 1, "content-type is sent once");
    }
}

#[tokio::test]
async fn retry_after_is_honoured_on_429() {
    let handler: Handler = Arc::new(|req: &Recorded, i| {
        if i == 0 {
            status(
                429,
                &[("retry-after", "1")],
                r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            )
        } else {
            ok(success_body("openai", &verdicts_json(&req.rubric_ids(), &|_| "PASS")))
        }
    });
    let server = MockServer::start(handler).await;
    let judge = judge_for(Provider::Openai, &server.url());
    let (cache, _dir) = temp_cache("retry-after");
    let result = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(verdict(&result.votes["r1"]), Some(Verdict::Pass));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_millis(950), "waited {gap:?}, server asked for 1 s");
    assert_eq!(judge.counters.snapshot().retries, 1);
    // retry-after-ms wins over the backoff too (Anthropic 529 overloaded).
    let handler: Handler = Arc::new(|req: &Recorded, i| {
        if i == 0 {
            status(
                529,
                &[("retry-after-ms", "600")],
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
        } else {
            ok(success_body("anthropic", &verdicts_json(&req.rubric_ids(), &|_| "FAIL")))
        }
    });
    let server = MockServer::start(handler).await;
    let judge = judge_for(Provider::Anthropic, &server.url());
    let result = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(verdict(&result.votes["r1"]), Some(Verdict::Fail));
    let reqs = server.requests();
    assert!(reqs[1].at - reqs[0].at >= Duration::from_millis(580));
}

#[tokio::test]
async fn transient_faults_are_retried_until_an_answer_arrives() {
    // 500, 503, a stall past the timeout, a dropped connection, malformed
    // JSON, then fenced JSON with prose: the answer is still recovered.
    let handler: Handler = Arc::new(|req: &Recorded, i| match i {
        0 => status(500, &[], r#"{"error":{"message":"internal"}}"#),
        1 => status(
            503,
            &[],
            r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
        ),
        2 => Action::Stall(Duration::from_secs(3)),
        3 => Action::Drop,
        4 => ok(success_body("gemini", "{\"verdicts\": [ {\"rubric_id\": \"r1\", ")),
        _ => {
            let text = format!(
                "Here you go:\n```json\n{}\n```\nThanks",
                verdicts_json(&req.rubric_ids(), &|id| if id == "r2" { "PASS" } else { "FAIL" })
            );
            ok(success_body("gemini", &text))
        }
    });
    let server = MockServer::start(handler).await;
    let mut cfg = config(Provider::Gemini, &server.url());
    cfg.timeout_secs = 1;
    cfg.max_attempts = 6;
    let judge = with_config(cfg);
    let (cache, _dir) = temp_cache("faults");
    let started = Instant::now();
    let result = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(result.failure, None);
    assert_eq!(result.attempts, 6);
    assert_eq!(verdict(&result.votes["r2"]), Some(Verdict::Pass));
    assert_eq!(verdict(&result.votes["r1"]), Some(Verdict::Fail));
    assert!(started.elapsed() >= Duration::from_secs(1), "the stall ran into the timeout");
    let c = judge.counters.snapshot();
    assert_eq!((c.requests, c.retries, c.failures), (6, 5, 0));
}

#[tokio::test]
async fn missing_unknown_and_duplicate_ids() {
    let handler: Handler = Arc::new(|_: &Recorded, _| {
        let text = r#"{"verdicts":[{"rubric_id":"r1","verdict":"PASS","justification":"first"},{"rubric_id":"r1","verdict":"FAIL","justification":"second"},{"rubric_id":"zz","verdict":"PASS","justification":"unknown"},{"rubric_id":"r3","verdict":"PASSED","justification":"odd"}]}"#;
        ok(success_body("openai", text))
    });
    let server = MockServer::start(handler).await;
    let judge = judge_for(Provider::Openai, &server.url());
    let (cache, _dir) = temp_cache("ids");
    let result = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(
        result.votes["r1"],
        JudgeVote::Verdict { verdict: Verdict::Pass, justification: "first".into() }
    );
    assert_eq!(
        result.votes["r2"],
        JudgeVote::Abstain { reason: "the judge returned no verdict for this rubric".into() }
    );
    assert_eq!(
        result.votes["r3"],
        JudgeVote::Abstain { reason: "invalid verdict \"PASSED\"".into() }
    );
    assert_eq!(result.votes.len(), 3);
}

#[tokio::test]
async fn refusals_and_safety_blocks_are_abstentions_with_their_reason() {
    let refusal: Handler = Arc::new(|_: &Recorded, _| {
        ok(r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't assist with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}"#.into())
    });
    let server = MockServer::start(refusal).await;
    let judge = judge_for(Provider::Openai, &server.url());
    let (cache, _dir) = temp_cache("refusal");
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(
        r.votes["r1"],
        JudgeVote::Abstain { reason: "refused: I can't assist with that.".into() }
    );
    assert_eq!(server.requests().len(), 1, "a refusal is an answer, not a fault to retry");

    let blocked: Handler = Arc::new(|_: &Recorded, _| {
        ok(r#"{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12}}"#
            .into())
    });
    let server = MockServer::start(blocked).await;
    let judge = judge_for(Provider::Gemini, &server.url());
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(r.votes["r2"], JudgeVote::Abstain { reason: "prompt blocked (SAFETY)".into() });
}

#[tokio::test]
async fn a_permanent_failure_ends_as_an_abstention_and_a_bad_key_stops_traffic() {
    let always_503: Handler =
        Arc::new(|_: &Recorded, _| status(503, &[], r#"{"error":{"message":"unavailable"}}"#));
    let server = MockServer::start(always_503).await;
    let judge = judge_for(Provider::Openai, &server.url());
    let (cache, _dir) = temp_cache("permanent");
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(server.requests().len(), 4, "max_attempts");
    let reason = r.failure.expect("failed");
    assert!(
        reason.contains("failed after 4 attempt(s)") && reason.contains("HTTP 503"),
        "{reason}"
    );
    assert!(matches!(&r.votes["r1"], JudgeVote::Abstain { .. }));

    let unauthorized: Handler = Arc::new(|_: &Recorded, _| {
        status(
            401,
            &[],
            r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        )
    });
    let server = MockServer::start(unauthorized).await;
    let judge = judge_for(Provider::Openai, &server.url());
    let r = judge.call(&prompt("doc one"), 0, &cache).await;
    let reason = r.failure.expect("failed");
    assert_eq!(
        reason,
        "judge stopped: the key in UNUSED is refused: judge 'openai-judge' (openai): HTTP 401: Incorrect API key provided."
    );
    assert!(!reason.contains(KEY));
    let r = judge.call(&prompt("doc two"), 0, &cache).await;
    assert!(r.failure.expect("failed").starts_with("judge stopped: "));
    assert_eq!(server.requests().len(), 1, "no traffic after a non-retryable 4xx");
}

#[tokio::test]
async fn the_limiter_keeps_requests_under_the_rate() {
    let server = MockServer::start(answering("openai", &["r1"])).await;
    let mut cfg = config(Provider::Openai, &server.url());
    cfg.rpm = Rate::PerMinute(600); // 10 a second
    cfg.max_concurrency = 16;
    let judge = Arc::new(with_config(cfg));
    let (cache, _dir) = temp_cache("limiter");
    let mut handles = Vec::new();
    for i in 0..25 {
        let (judge, cache) = (judge.clone(), cache.clone());
        handles.push(tokio::spawn(async move {
            judge.call(&prompt(&format!("doc {i}")), 0, &cache).await
        }));
    }
    for h in handles {
        assert_eq!(h.await.expect("join").failure, None);
    }
    let times: Vec<Instant> = server.requests().iter().map(|r| r.at).collect();
    assert_eq!(times.len(), 25);
    // No one-second window holds more than the 10 a second configured (+1
    // for the window's closed end), and no burst releases the quota at once.
    for (i, t) in times.iter().enumerate() {
        let in_window = times[i..].iter().filter(|u| **u - *t < Duration::from_secs(1)).count();
        assert!(in_window <= 11, "{in_window} requests within 1 s of request {i}");
    }
    let span = times[24] - times[0];
    assert!(span >= Duration::from_millis(2300), "25 requests at 10/s take ≥ 2.4 s, took {span:?}");
}

#[tokio::test]
async fn a_second_run_is_served_from_the_cache_and_keys_never_reach_it() {
    let server = MockServer::start(answering("anthropic", &["r2"])).await;
    let first_judge = judge_for(Provider::Anthropic, &server.url());
    let (cache, dir) = temp_cache("rerun");
    let path = dir.join("cache.sqlite");
    let p = prompt("doc");
    cache.put_prompt(&p).expect("prompt stored");
    let first = first_judge.call(&p, 0, &cache).await;
    assert!(!first.from_cache);
    let again = judge_for(Provider::Anthropic, &server.url());
    let second = again.call(&p, 0, &cache).await;
    assert!(second.from_cache);
    assert_eq!(first.votes, second.votes);
    assert_eq!(server.requests().len(), 1, "zero network calls on the rerun");
    assert_eq!(again.counters.snapshot().cache_hits, 1);
    // Another repeat index is another call.
    let third = again.call(&p, 1, &cache).await;
    assert!(!third.from_cache);
    assert_eq!(cache.get_prompt(&p.hash).expect("read"), Some(p.clone()));
    drop(cache);
    let bytes = std::fs::read(&path).expect("cache file");
    let wal = std::fs::read(path.with_extension("sqlite-wal")).unwrap_or_default();
    for b in [bytes, wal] {
        assert!(
            !b.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "the API key reached the cache"
        );
    }
}

#[tokio::test]
async fn no_key_means_abstention_without_traffic() {
    let server = MockServer::start(answering("openai", &[])).await;
    let judge =
        Judge::new(config(Provider::Openai, &server.url()), Auth::Missing { env: "UNUSED".into() })
            .expect("judge");
    let (cache, _dir) = temp_cache("nokey");
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(r.failure.as_deref(), Some("no API key: set UNUSED"));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_per_prompt_4xx_fails_only_that_call() {
    let handler: Handler = Arc::new(|req: &Recorded, i| {
        if i == 0 {
            status(
                400,
                &[],
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
            )
        } else {
            ok(success_body("openai", &verdicts_json(&req.rubric_ids(), &|_| "PASS")))
        }
    });
    let server = MockServer::start(handler).await;
    let judge = judge_for(Provider::Openai, &server.url());
    let (cache, _dir) = temp_cache("per-prompt-4xx");
    let first = judge.call(&prompt("a very long document"), 0, &cache).await;
    assert!(
        first.failure.expect("failed").contains("HTTP 400: This model's maximum context length")
    );
    let second = judge.call(&prompt("a short document"), 0, &cache).await;
    assert_eq!(second.failure, None, "the judge still takes other prompts");
    assert_eq!(server.requests().len(), 2, "a 400 is not retried");
}

#[tokio::test]
async fn the_token_limiter_paces_large_calls() {
    let server = MockServer::start(answering("openai", &["r1"])).await;
    let mut cfg = config(Provider::Openai, &server.url());
    cfg.tpm = Rate::PerMinute(600_000); // 10,000 tokens a second, a bucket of 30,000
    cfg.max_output_tokens = 8192; // each call is estimated at ~9,400 tokens
    cfg.max_concurrency = 8;
    let judge = Arc::new(with_config(cfg));
    let (cache, _dir) = temp_cache("tpm");
    let started = Instant::now();
    let mut handles = Vec::new();
    for i in 0..6 {
        let (judge, cache) = (judge.clone(), cache.clone());
        handles.push(tokio::spawn(async move {
            judge.call(&prompt(&format!("doc {i}")), 0, &cache).await
        }));
    }
    for h in handles {
        assert_eq!(h.await.expect("join").failure, None);
    }
    // ~56,000 tokens against a 30,000 bucket refilling at 10,000/s.
    assert!(started.elapsed() >= Duration::from_millis(2200), "took {:?}", started.elapsed());
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured() {
    let handler: Handler = Arc::new(|req: &Recorded, i| {
        if i == 0 {
            // Two seconds ahead, to the second: the wait is 1–2 s.
            let at = std::time::SystemTime::now() + Duration::from_secs(2);
            let secs =
                at.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
            let date =
                httpdate::fmt_http_date(std::time::UNIX_EPOCH + Duration::from_secs(secs as u64));
            Action::Respond {
                status: 503,
                headers: vec![("retry-after".into(), date)],
                body: r#"{"error":{"message":"busy"}}"#.into(),
            }
        } else {
            ok(success_body("openai", &verdicts_json(&req.rubric_ids(), &|_| "PASS")))
        }
    });
    let server = MockServer::start(handler).await;
    let judge = judge_for(Provider::Openai, &server.url());
    let (cache, _dir) = temp_cache("http-date");
    assert_eq!(judge.call(&prompt("doc"), 0, &cache).await.failure, None);
    let reqs = server.requests();
    assert!(
        reqs[1].at - reqs[0].at >= Duration::from_millis(900),
        "waited {:?}",
        reqs[1].at - reqs[0].at
    );
}

async fn calls(judge: &Arc<Judge>, cache: &Arc<Cache>, n: usize) -> Vec<redjury::CallResult> {
    let mut handles = Vec::new();
    for i in 0..n {
        let (judge, cache) = (judge.clone(), cache.clone());
        handles.push(tokio::spawn(async move {
            judge.call(&prompt(&format!("doc {i}")), 0, &cache).await
        }));
    }
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("join"));
    }
    out
}

#[tokio::test]
async fn a_stopped_judge_gets_no_more_requests_than_its_concurrency() {
    // Slow 401s: every slot is busy when the first comes back; the calls
    // queued at the limiter must not go out after it.
    let handler: Handler = Arc::new(|_: &Recorded, _| {
        Action::StatusLater(
            Duration::from_millis(150),
            401,
            r#"{"error":{"message":"Incorrect API key provided.","code":"invalid_api_key"}}"#
                .into(),
        )
    });
    let server = MockServer::start(handler).await;
    let judge = Arc::new(judge_for(Provider::Openai, &server.url()));
    let (cache, _dir) = temp_cache("stop-after-permit");
    let results = calls(&judge, &cache, 80).await;
    let sent = server.requests().len();
    assert!(
        sent <= 1 + judge.config.max_concurrency as usize,
        "{sent} requests went out after a 401 (max_concurrency 4)"
    );
    assert!(
        results.iter().all(|r| r.failure.as_deref().is_some_and(|f| f.contains("HTTP 401"))),
        "every call abstains naming the 401"
    );
    assert!(judge.stopped().is_some_and(|why| why.contains("Incorrect API key")));
}

#[tokio::test]
async fn bad_keys_stop_the_judge_whatever_the_status() {
    let gemini: Handler = Arc::new(|_: &Recorded, _| {
        status(
            400,
            &[],
            r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}]}}"#,
        )
    });
    let gateway: Handler = Arc::new(|_: &Recorded, _| {
        status(
            400,
            &[],
            r#"{"error":{"message":"Invalid API key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        )
    });
    for (provider, handler) in [(Provider::Gemini, gemini), (Provider::Openai, gateway)] {
        let server = MockServer::start(handler).await;
        let judge = Arc::new(judge_for(provider, &server.url()));
        let (cache, _dir) = temp_cache(&format!("bad-key-{}", provider.as_str()));
        let first = judge.call(&prompt("one"), 0, &cache).await;
        assert!(first.failure.as_deref().is_some_and(|f| f.contains("HTTP 400")), "{first:?}");
        let second = judge.call(&prompt("two"), 0, &cache).await;
        assert!(
            second.failure.as_deref().is_some_and(|f| f.starts_with("judge stopped: ")),
            "{second:?}"
        );
        assert_eq!(server.requests().len(), 1, "{provider:?}: no traffic after a bad key");
    }
}

#[tokio::test]
async fn truncated_replies_are_retried_never_cached_and_billed() {
    // A complete-looking tool input, but cut off at max_tokens.
    let cut = |req: &Recorded| {
        let input: serde_json::Value =
            serde_json::from_str(&verdicts_json(&req.rubric_ids(), &|_| "PASS"))
                .unwrap_or_default();
        serde_json::json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "tool_use", "id": "t", "name": "record_verdicts", "input": input}],
            "stop_reason": "max_tokens",
            "usage": {"input_tokens": 300, "output_tokens": 1024, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        })
        .to_string()
    };
    let always_cut: Handler = Arc::new(move |req: &Recorded, _| ok(cut(req)));
    let server = MockServer::start(always_cut).await;
    let mut c = config(Provider::Anthropic, &server.url());
    c.max_attempts = 2;
    let judge = with_config(c);
    let (cache, _dir) = temp_cache("truncated");
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    let reason = r.failure.expect("no answer");
    assert!(reason.contains("truncated"), "{reason}");
    assert_eq!(server.requests().len(), 2, "retried");
    assert_eq!(cache.response_count().expect("count"), 0, "a truncated reply is never cached");
    let c = judge.counters.snapshot();
    assert_eq!((c.input_tokens, c.output_tokens), (600, 2048), "both billed replies are counted");
    // A rerun asks again rather than serving the truncated reply.
    let again = with_config(config(Provider::Anthropic, &server.url()));
    assert!(!again.call(&prompt("doc"), 0, &cache).await.from_cache);
    assert!(server.requests().len() > 2, "the rerun asked again");
}

#[tokio::test]
async fn an_oversized_reply_is_a_failed_attempt() {
    oversized_reply_refused(false).await;
    // Sent in chunks, with no length announced: refused as it streams in.
    oversized_reply_refused(true).await;
}

async fn oversized_reply_refused(chunked: bool) {
    let handler: Handler = Arc::new(move |req: &Recorded, i| {
        if i == 0 {
            // A valid answer, but 2 MB of it.
            let items: Vec<serde_json::Value> = req
                .rubric_ids()
                .iter()
                .map(|id| serde_json::json!({"rubric_id": id, "justification": "x".repeat(1 << 20), "verdict": "FAIL"}))
                .collect();
            let body =
                success_body("openai", &serde_json::json!({ "verdicts": items }).to_string());
            if chunked { Action::Chunked(body) } else { ok(body) }
        } else {
            ok(success_body("openai", &verdicts_json(&req.rubric_ids(), &|_| "PASS")))
        }
    });
    let server = MockServer::start(handler).await;
    let mut c = config(Provider::Openai, &server.url());
    c.max_reply_bytes = 1 << 20;
    let judge = with_config(c);
    let (cache, _dir) = temp_cache("oversized");
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(r.failure, None);
    assert_eq!(
        (r.attempts, server.requests().len()),
        (2, 2),
        "the 2 MB reply was refused and retried"
    );
    assert_eq!(r.votes["r1"].verdict(), Some(Verdict::Pass), "the answer is the second, small one");
}

#[tokio::test]
async fn openai_compatible_servers_get_their_fields_and_no_key() {
    let server = MockServer::start(answering("openai", &["r1"])).await;
    let mut c = config(Provider::Openai, &server.url());
    c.output_tokens_field = redjury::OutputTokensField::MaxTokens;
    c.structured_output = redjury::StructuredOutput::JsonObject;
    c.api_key_env = None;
    let judge = Judge::new(c, Auth::None).expect("judge");
    assert!(judge.can_call());
    let (cache, _dir) = temp_cache("compatible");
    assert_eq!(judge.call(&prompt("doc"), 0, &cache).await.failure, None);
    let r = &server.requests()[0];
    let body = r.json();
    assert_eq!(body["max_tokens"], 1024);
    assert!(body.get("max_completion_tokens").is_none());
    assert_eq!(body["response_format"], serde_json::json!({"type": "json_object"}));
    assert!(r.header("authorization").is_none(), "no key, no auth header");
    // The verdict schema names the rubric, reasons, then decides.
    let default = MockServer::start(answering("openai", &["r1"])).await;
    let judge = judge_for(Provider::Openai, &default.url());
    judge.call(&prompt("doc"), 0, &cache).await;
    let raw = &default.requests()[0].body;
    let at = |s: &str| raw.find(&format!("\"{s}\":{{\"type\"")).unwrap_or(usize::MAX);
    assert!(at("rubric_id") < at("justification") && at("justification") < at("verdict"), "{raw}");
    // A server with no structured output at all: no response_format, and
    // the verdicts are still read from the reply's JSON text.
    let plain = MockServer::start(answering("openai", &["r1"])).await;
    let mut c = config(Provider::Openai, &plain.url());
    c.structured_output = redjury::StructuredOutput::None;
    let (cache, _dir) = temp_cache("compatible-none");
    let r = with_config(c).call(&prompt("doc"), 0, &cache).await;
    assert_eq!(r.failure, None);
    assert_eq!(r.votes["r1"].verdict(), Some(Verdict::Pass));
    assert!(plain.requests()[0].json().get("response_format").is_none());
}

#[tokio::test]
async fn identical_concurrent_calls_share_one_request() {
    let slow: Handler = Arc::new(|req: &Recorded, _| {
        Action::Later(
            Duration::from_millis(200),
            success_body("openai", &verdicts_json(&req.rubric_ids(), &|_| "PASS")),
        )
    });
    let server = MockServer::start(slow).await;
    let judge = Arc::new(judge_for(Provider::Openai, &server.url()));
    let (cache, _dir) = temp_cache("coalesce");
    let mut handles = Vec::new();
    for _ in 0..10 {
        let (judge, cache) = (judge.clone(), cache.clone());
        handles.push(tokio::spawn(async move {
            judge.call(&prompt("the same document"), 0, &cache).await
        }));
    }
    for h in handles {
        assert_eq!(h.await.expect("join").failure, None);
    }
    assert_eq!(server.requests().len(), 1, "ten identical calls in flight at once, one request");
}

/// Another process holds the cache's write lock while an answer comes in:
/// the call waits for it off the async workers (a timer on the same
/// single-threaded runtime keeps ticking), sends one request, and the
/// answer is stored once the lock is released — none lost, none paid twice.
#[tokio::test(flavor = "current_thread")]
async fn a_cache_locked_by_another_process_loses_no_answer_and_blocks_no_worker() {
    let server = MockServer::start(answering("openai", &["r1", "r2", "r3"])).await;
    let judge = with_config(config(Provider::Openai, &server.url()));
    let (cache, dir) = temp_cache("locked");
    let path = dir.join("cache.sqlite");
    let other = rusqlite::Connection::open(&path).expect("second connection");
    other.execute_batch("BEGIN EXCLUSIVE").expect("write lock");
    let holder = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        other.execute_batch("COMMIT").expect("release");
    });
    let ticks = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let ticker = {
        let ticks = ticks.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        })
    };
    let started = Instant::now();
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    let waited = started.elapsed();
    ticker.abort();
    holder.join().expect("holder");
    assert_eq!(r.failure, None, "{:?}", r.failure);
    assert_eq!(server.requests().len(), 1, "one request, no spurious retry");
    assert!(waited >= Duration::from_millis(1400), "the write waited for the lock: {waited:?}");
    let ticks = ticks.load(std::sync::atomic::Ordering::Relaxed);
    assert!(ticks >= 15, "the runtime kept running while SQLite waited: {ticks} ticks");
    let key = judge.call_key(&prompt("doc"), 0);
    assert!(cache.get_response(&key).expect("read").is_some(), "the answer is stored");
}

/// The same with a lock held past the cache's busy timeout: the answer
/// cannot wait, so it goes to the journal beside the cache, and the next
/// open stores it — the paid answer is still not lost.
#[tokio::test(flavor = "current_thread")]
async fn an_answer_the_locked_cache_cannot_take_in_time_is_journalled() {
    let server = MockServer::start(answering("openai", &["r1", "r2", "r3"])).await;
    let judge = with_config(config(Provider::Openai, &server.url()));
    let (_, dir) = temp_cache("journal");
    let path = dir.join("cache.sqlite");
    let cache = Arc::new(Cache::open_with(&path, Duration::from_millis(200)).expect("cache"));
    let other = rusqlite::Connection::open(&path).expect("second connection");
    other.execute_batch("BEGIN EXCLUSIVE").expect("write lock");
    let r = judge.call(&prompt("doc"), 0, &cache).await;
    assert_eq!(r.failure, None, "{:?}", r.failure);
    assert_eq!(server.requests().len(), 1);
    other.execute_batch("COMMIT").expect("release");
    drop(cache);
    let reopened = Cache::open(&path).expect("reopen");
    let key = judge.call_key(&prompt("doc"), 0);
    assert!(
        reopened.get_response(&key).expect("read").is_some(),
        "the journalled answer is stored"
    );
}

/// An endpoint that refuses connections: the first failure names the URL
/// and the operating system's reason (it said "connection error: error
/// sending request"), and a judge that never answered stops after one
/// call's attempts, like a judge with a bad key, instead of every call
/// retrying (13 silent minutes on the example).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_that_refuses_connections_stops_its_judge_and_says_where() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let judge = Arc::new(judge_for(Provider::Openai, &url));
    let (cache, _dir) = temp_cache("refused");
    let first = judge.call(&prompt("doc"), 0, &cache).await;
    let why = first.failure.unwrap_or_default();
    let expected = format!("cannot connect to {url}/v1/chat/completions: Connection refused");
    assert!(why.contains(&expected), "{why}");
    assert!(why.contains("on all 4 attempts"), "{why}");
    assert!(judge.stopped().is_some_and(|s| s.contains(&expected)), "{:?}", judge.stopped());
    let started = Instant::now();
    let next = judge.call(&prompt("another"), 0, &cache).await;
    assert!(next.failure.unwrap_or_default().starts_with("judge stopped:"));
    assert!(started.elapsed() < Duration::from_secs(1), "no more attempts");
}

/// Regression (issue 39): with the default panel's settings (6 attempts
/// from 1 s, doubling; claude's 50 rpm, 50,000 tpm, 4 at once) a judge at
/// a closed port was still retrying after minutes (a run of the example
/// with every judge at a closed port: > 300 s; now 8.8 s), where a bad key
/// stops it at the first reply: its retries waited out the backoff and the
/// rate budgets, behind the calls queued on them. An endpoint that never
/// answered is retried quickly outside the budgets, and the judge stops
/// within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_port_stops_its_judge_within_seconds_with_the_default_settings() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut c = config(Provider::Openai, &url);
    (c.max_attempts, c.retry_base_ms, c.retry_max_secs) = (6, 1000, 60);
    (c.rpm, c.tpm, c.max_concurrency) = (Rate::PerMinute(50), Rate::PerMinute(50_000), 4);
    let judge = Arc::new(with_config(c));
    let (cache, _dir) = temp_cache("refused-default");
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..13 {
        let (judge, cache) = (judge.clone(), cache.clone());
        set.spawn(async move { judge.call(&prompt(&format!("doc {i}")), 0, &cache).await });
    }
    let mut why = Vec::new();
    while let Some(r) = set.join_next().await {
        why.push(r.unwrap().failure.unwrap_or_default());
    }
    let took = started.elapsed();
    assert!(why.iter().any(|w| w.contains("on all 6 attempts")), "{why:?}");
    assert!(judge.stopped().is_some());
    // The backoff alone would wait 1 + 2 + 4 + 8 + 16 = 31 s at least.
    assert!(took < Duration::from_secs(10), "stopped after {took:?}");
}

/// A bad key stopped the judge within seconds, but the calls queued
/// behind its limiter waited out the pace before abstaining (131 s to end
/// the run). They now end at once, and the message names the variable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_queued_behind_a_stopped_judge_end_at_once() {
    let server = MockServer::start(Arc::new(|_: &Recorded, _| {
        status(401, &[], r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#)
    }))
    .await;
    let mut c = config(Provider::Openai, &server.url());
    (c.rpm, c.max_concurrency, c.api_key_env) =
        (Rate::PerMinute(60), 1, Some("OPENAI_API_KEY".into()));
    let judge = Arc::new(with_config(c));
    let (cache, _dir) = temp_cache("queued");
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..20 {
        let (judge, cache) = (judge.clone(), cache.clone());
        set.spawn(async move { judge.call(&prompt(&format!("doc {i}")), 0, &cache).await });
    }
    while let Some(r) = set.join_next().await {
        assert!(r.unwrap().failure.is_some());
    }
    // At 60 a minute, 20 calls that waited their turn would take 19 s.
    assert!(started.elapsed() < Duration::from_secs(8), "took {:?}", started.elapsed());
    assert!(server.requests().len() <= 2, "{} requests", server.requests().len());
    let why = judge.stopped().unwrap_or_default();
    assert!(why.starts_with("the key in OPENAI_API_KEY is refused: "), "{why}");
}
