//! Vote mode "decided": the judges asked in order, each only about the
//! rubrics still open; the verdicts those all judges give, for fewer calls.
use crate::common::e2e::*;
use crate::common::mock::*;

const PRICES: &str = "[models.gpt-test]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n\n[models.claude-test]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n\n[models.gemini-test]\ninput = 2.0\ncached_input = 0.2\noutput = 8.0\n";

/// The same verdicts as mode "all" on the same answers, the third judge
/// asked only where the first two disagree (with a prompt of just those
/// rubrics), and the summary saying what was saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decided_voting_gives_all_modes_verdicts_for_fewer_calls() {
    let dir = temp_dir("decided");
    std::fs::write(dir.join("prices.toml"), PRICES).unwrap();
    let run = |mode: &'static str, out: &str| {
        let dir = dir.to_path_buf();
        let out = out.to_string();
        async move {
            let judges = Judges::with([
                stand_in_flipping("openai", "gold", |_, _| false),
                stand_in_flipping("anthropic", "gold", claude_flips),
                stand_in_flipping("gemini", "gold", gemini_flips),
            ])
            .await;
            let panel = judges.panel_voting(&dir, "gemini-test", &format!("mode = \"{mode}\""));
            let (code, o, e) = score_priced(&dir, &panel, &out, &format!("{out}.sqlite")).await;
            assert_eq!(code, 0, "{o}{e}");
            let asked: Vec<usize> =
                judges.gemini.requests().iter().map(|r| r.rubric_ids().len()).collect();
            (results(&dir.join(&out)), summary(&dir.join(&out)), judges.counts(), asked)
        }
    };
    let (all_rows, _, all_calls, full) = run("all", "all").await;
    let (rows, s, calls, narrowed) = run("decided", "decided").await;
    eprintln!("gemini's calls: {full:?} rubrics each in mode all, {narrowed:?} in mode decided");
    assert!(narrowed.iter().sum::<usize>() < full.iter().sum::<usize>() / 4, "{narrowed:?}");
    assert_eq!(all_calls, [13, 13, 13]);
    let verdicts = |rows: &[serde_json::Value]| -> Vec<(String, String, serde_json::Value, serde_json::Value)> {
        rows.iter()
            .flat_map(|r| {
                let task = r["task"].as_str().unwrap().to_string();
                let reward = r["reward"].clone();
                r["rubrics"].as_array().unwrap().iter().map(move |x| {
                    (task.clone(), x["id"].as_str().unwrap().to_string(), x["verdict"].clone(), reward.clone())
                })
            })
            .collect()
    };
    assert_eq!(verdicts(&rows), verdicts(&all_rows), "every verdict and reward as in mode all");
    assert_eq!(&calls[..2], &[13, 13], "the first two judges are asked about every task");
    let gemini = calls[2];
    assert!(gemini < 13, "gemini asked only where gpt and claude disagree: {gemini} of 13 calls");
    let j = &s["judges"]["gemini"];
    assert_eq!(j["decided_skips"].as_u64(), Some(13 - gemini as u64), "{j}");
    assert!(j["saved_usd"].as_f64().is_some_and(|x| x > 0.0), "{j}");
    // Where gemini was asked, it was asked about the open rubrics only.
    let asked = rows
        .iter()
        .flat_map(|r| r["rubrics"].as_array().unwrap().iter())
        .filter(|x| x["votes"].get("gemini").is_some())
        .count();
    let not_asked: Vec<&serde_json::Value> = rows
        .iter()
        .flat_map(|r| r["rubrics"].as_array().unwrap().iter())
        .filter(|x| x["not_asked"].get("gemini").is_some())
        .collect();
    assert!(asked > 0 && !not_asked.is_empty(), "{asked} asked, {} not", not_asked.len());
    assert!(
        not_asked[0]["not_asked"]["gemini"]
            .as_str()
            .unwrap()
            .contains("settled by the 2 judges before it"),
        "{}",
        not_asked[0]
    );
    let md = std::fs::read_to_string(dir.join("decided/summary.md")).unwrap();
    assert!(md.contains("gemini: vote mode \"decided\" left out"), "{md}");
}

/// Regression (issue 36): `saved_usd` was 24-54% below the truth, since a
/// skipped call's output was priced at the judge's average over its own
/// (short, narrowed) calls — 0 when it made none — and the rubrics left
/// out of narrowed prompts saved no output. Against judges that bill by
/// size, what decided mode reports saving is what mode all cost more:
/// with the third judge narrowed, and with it never asked at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decided_mode_reports_the_saving_the_bills_show() {
    let dir = temp_dir("decided-saving");
    std::fs::write(dir.join("prices.toml"), PRICES).unwrap();
    let run = |mode: &'static str, claude: fn(&str, &str) -> bool, out: String| {
        let dir = dir.to_path_buf();
        async move {
            let judges = Judges::with([
                billing_by_size("openai", stand_in_flipping("openai", "gold", |_, _| false)),
                billing_by_size("anthropic", stand_in_flipping("anthropic", "gold", claude)),
                billing_by_size("gemini", stand_in_flipping("gemini", "gold", gemini_flips)),
            ])
            .await;
            let panel = judges.panel_voting(&dir, "gemini-test", &format!("mode = \"{mode}\""));
            let (code, o, e) = score_priced(&dir, &panel, &out, &format!("{out}.sqlite")).await;
            assert_eq!(code, 0, "{o}{e}");
            summary(&dir.join(&out))["judges"].clone()
        }
    };
    let agrees: fn(&str, &str) -> bool = |_, _| false;
    for (n, (case, claude)) in
        [("narrowed", claude_flips as fn(&str, &str) -> bool), ("never asked", agrees)]
            .into_iter()
            .enumerate()
    {
        let all = run("all", claude, format!("all-{n}")).await;
        let decided = run("decided", claude, format!("decided-{n}")).await;
        let cost = |j: &serde_json::Value| j["cost"].as_f64().unwrap_or(f64::NAN);
        for first in ["gpt", "claude"] {
            assert_eq!(cost(&all[first]), cost(&decided[first]), "{case}: {first} asked alike");
        }
        let truth = cost(&all["gemini"]) - cost(&decided["gemini"]);
        let saved = decided["gemini"]["saved_usd"].as_f64().unwrap_or(f64::NAN);
        eprintln!(
            "{case}: saved {saved:.6} reported, {truth:.6} true ({:+.2}%)",
            100.0 * (saved / truth - 1.0)
        );
        assert!(truth > 0.0, "{case}: {}", decided["gemini"]);
        assert!((saved - truth).abs() <= 0.01 * truth, "{case}: {saved} reported, {truth} saved");
        if case == "never asked" {
            assert_eq!(decided["gemini"]["requests"].as_u64(), Some(0), "{}", decided["gemini"]);
        }
    }
}

/// Regression (issue 36): decided mode asked the first wave one judge
/// after the other, so it took 2.5x the wall time of mode all with judges
/// of 200 ms. Nothing one of them answers changes what another is asked:
/// claude's first call goes out while gpt's are still under way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decided_mode_asks_the_first_wave_at_once() {
    let dir = temp_dir("decided-wave");
    let delay = std::time::Duration::from_millis(300);
    let judges = Judges::with([
        slowed(delay, stand_in_flipping("openai", "gold", |_, _| false)),
        slowed(delay, stand_in_flipping("anthropic", "gold", claude_flips)),
        slowed(delay, stand_in_flipping("gemini", "gold", gemini_flips)),
    ])
    .await;
    let panel = judges.panel(&dir, "gemini-test");
    let text = std::fs::read_to_string(&panel).unwrap();
    let vote = "[vote]\nquorum = 2\nmode = \"decided\"";
    std::fs::write(&panel, text.replace("[vote]\nquorum = 2", vote)).unwrap();
    let a = score_args("gold/redlines", &panel, &dir.join("out"), &dir.join("cache.sqlite"));
    let (code, o, e) = redjury(a, true).await;
    assert_eq!(code, 0, "{o}{e}");
    let at = |s: &MockServer| s.requests().iter().map(|r| r.at).collect::<Vec<_>>();
    let (gpt, claude) = (at(&judges.openai), at(&judges.anthropic));
    assert_eq!((gpt.len(), claude.len()), (13, 13));
    // 13 calls at max_concurrency 8: gpt's last ones go out when its first
    // are answered, 300 ms in; one after the other, claude's would start
    // after all of gpt's were answered.
    let (first_claude, last_gpt) = (claude.iter().min().unwrap(), gpt.iter().max().unwrap());
    assert!(first_claude < last_gpt, "claude's first call waited for gpt's last");
}

/// Regression (issue 36): switching a cache made in mode all to decided
/// made new narrowed calls (22 on the bench) although every full answer
/// was cached. A cached full answer is free and is the vote mode all
/// counts: the decided rerun makes no call and gives mode all's verdicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decided_mode_uses_the_full_answers_a_mode_all_run_cached() {
    let dir = temp_dir("decided-after-all");
    let cache = dir.join("cache.sqlite");
    let mut rows = Vec::new();
    // One set of servers: a judge's cache key holds its base URL.
    let judges = Judges::with([
        stand_in_flipping("openai", "gold", |_, _| false),
        stand_in_flipping("anthropic", "gold", claude_flips),
        stand_in_flipping("gemini", "gold", gemini_flips),
    ])
    .await;
    for mode in ["all", "decided"] {
        let before = judges.counts();
        let panel = judges.panel(&dir, "gemini-test");
        let text = std::fs::read_to_string(&panel).unwrap();
        let vote = format!("[vote]\nquorum = 2\nmode = \"{mode}\"");
        std::fs::write(&panel, text.replace("[vote]\nquorum = 2", &vote)).unwrap();
        let out = dir.join(mode);
        let (code, o, e) = redjury(score_args("gold/redlines", &panel, &out, &cache), true).await;
        assert_eq!(code, 0, "{o}{e}");
        let expected = if mode == "all" { [13, 13, 13] } else { [0, 0, 0] };
        let sent: Vec<usize> = judges.counts().iter().zip(before).map(|(n, b)| n - b).collect();
        assert_eq!(sent, expected, "{mode}");
        let verdicts: Vec<(String, String)> = results(&out)
            .iter()
            .flat_map(|r| r["rubrics"].as_array().unwrap().clone())
            .map(|x| (x["id"].to_string(), x["verdict"].to_string()))
            .collect();
        rows.push(verdicts);
        if mode == "decided" {
            let j = &summary(&out)["judges"]["gemini"];
            assert_eq!(j["decided_skips"].as_u64(), Some(0), "{j}");
            assert_eq!(j["cache_hits"].as_u64(), Some(13), "{j}");
        }
    }
    assert_eq!(rows[0], rows[1], "mode all's verdicts");
}

/// Vote mode "escalate" never gives a verdict no judge is sure of: with
/// every judge's two repeats disagreeing on every rubric, each rubric
/// abstains and each row is incomplete, with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escalate_mode_abstains_where_no_judge_is_sure() {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};
    let dir = temp_dir("escalate-unsure");
    // The first time a judge sees a request body it says PASS to every
    // rubric, the second time FAIL.
    let torn = |provider: &'static str| -> Handler {
        let seen: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        Arc::new(move |req: &Recorded, _| {
            let mut seen = seen.lock().unwrap();
            let n = seen.entry(req.body.clone()).or_insert(0);
            *n += 1;
            let verdict = if *n % 2 == 1 { "PASS" } else { "FAIL" };
            ok(success_body(provider, &verdicts_json(&req.rubric_ids(), &|_| verdict)))
        })
    };
    let judges = Judges::with([torn("openai"), torn("anthropic"), torn("gemini")]).await;
    let panel = judges.panel_voting(&dir, "gemini-test", "mode = \"escalate\"");
    let text = std::fs::read_to_string(&panel).unwrap();
    let text =
        text.replace("retry_base_ms = 10\n", "retry_base_ms = 10\nrepeats = 2\nthreshold = 0.9\n");
    std::fs::write(&panel, text).unwrap();
    let out = dir.join("out");
    let (code, o, e) =
        redjury(score_args("gold/redlines", &panel, &out, &dir.join("c.sqlite")), true).await;
    assert_eq!(code, 3, "incomplete rows: {o}{e}");
    assert_eq!(judges.counts(), [26, 26, 26], "every judge asked, twice per task");
    // Tasks with judge rubrics (one of the example's has checks only).
    let rows: Vec<serde_json::Value> = results(&out)
        .into_iter()
        .filter(|r| r["rubrics"].as_array().unwrap().iter().any(|x| x["kind"] == "llm"))
        .collect();
    assert_eq!(rows.len(), 13);
    for r in &rows {
        assert_eq!(r["status"], "incomplete", "{r}");
        let reason = r["reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("not sure enough: 0.50 of its calls agree, its threshold is 0.90"),
            "{reason}"
        );
        for x in r["rubrics"].as_array().unwrap().iter().filter(|x| x["votes"].get("gpt").is_some())
        {
            assert!(x["verdict"].is_null(), "{x}");
            assert_eq!(x["confidence"]["gemini"], 0.5, "{x}");
        }
    }
}
