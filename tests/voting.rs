//! Vote mode "decided": the judges asked in order, each only about the
//! rubrics still open; the verdicts those all judges give, for fewer calls.
use crate::common::e2e::*;

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// claude and gemini each disagree with the attorney on a different 1 in
/// 12 (task, rubric) pairs; gpt agrees on every one.
fn claude_flips(task: &str, rubric: &str) -> bool {
    fnv(&format!("{task}/{rubric}/claude")).is_multiple_of(12)
}

fn gemini_flips(task: &str, rubric: &str) -> bool {
    fnv(&format!("{task}/{rubric}/gemini")).is_multiple_of(12)
}

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
            let panel = judges.panel(&dir, "gemini-test");
            let text = std::fs::read_to_string(&panel).unwrap();
            std::fs::write(
                &panel,
                text.replace(
                    "[vote]\nquorum = 2",
                    &format!("[vote]\nquorum = 2\nmode = \"{mode}\""),
                ),
            )
            .unwrap();
            let mut a = score_args(
                "gold/redlines",
                &panel,
                &dir.join(&out),
                &dir.join(format!("{out}.sqlite")),
            );
            a.extend(args(&["--prices", &dir.join("prices.toml").display().to_string()]));
            let (code, o, e) = redjury(a, true).await;
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
