//! The reference benchmark's leaderboard, figure for figure: for each
//! synthetic judged run in tests/parity/runs/ (multi-trial, gate failures,
//! incomplete rows, categories spelled two ways, exact rounding ties),
//! redjury's summary must equal, bit for bit, what the reference's own code
//! computed (tests/parity/expected/, made by tests/parity/generate.py from
//! salma-remyx/redline-bench's src/ — see that script for the command).
use std::collections::BTreeMap;
use std::path::PathBuf;

use redjury::Bootstrap;
use redjury::Summary;
use redjury::TaskResult;
use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/parity")
}

fn map(v: &Value) -> BTreeMap<String, f64> {
    v.as_object()
        .map(|o| o.iter().filter_map(|(k, x)| Some((k.clone(), x.as_f64()?))).collect())
        .unwrap_or_default()
}

fn check(run: &str) {
    let rows: Vec<TaskResult> = std::fs::read_to_string(dir().join(format!("runs/{run}.jsonl")))
        .expect("run file")
        .lines()
        .map(|l| {
            let mut r: TaskResult = serde_json::from_str(l).expect("row");
            // The rows hold verdicts only: redjury computes the rewards.
            r.settle_judged();
            r
        })
        .collect();
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join(format!("expected/{run}.json"))).expect("expected"),
    )
    .expect("json");
    let board = &expected["leaderboard"];
    let model = expected["model"].as_str().expect("model");
    let s =
        Summary::build(&rows, vec![], vec![], Bootstrap { seed: 0, resamples: 5000 }, Some(model));
    let f = &s.figures;
    assert_eq!(f.turn_weighted, board["overall_turn_weighted"].as_f64(), "{run}: headline");
    assert_eq!(
        s.best_at_k.turn_weighted,
        board["best_at_k_turn_weighted"].as_f64(),
        "{run}: best@k"
    );
    let ci: Vec<f64> =
        board["ci"].as_array().expect("ci").iter().filter_map(Value::as_f64).collect();
    assert_eq!(s.ci95.map(|c| c.to_vec()), Some(ci), "{run}: CI");
    assert_eq!(
        s.ci95_reference.as_ref().map(|r| r.seed),
        expected["model_seed"].as_u64(),
        "{run}: seed"
    );
    assert_eq!(f.by_turn, map(&board["by_turn"]), "{run}: by_turn");
    assert_eq!(f.by_side, map(&board["by_side_turn_weighted"]), "{run}: by_side");
    assert_eq!(f.by_scenario, map(&board["by_scenario_turn_weighted"]), "{run}: by_scenario");
    assert_eq!(f.by_category, map(&board["by_category"]), "{run}: by_category");
    assert_eq!(f.by_scenario_turn, map(&expected["by_scenario_turn"]), "{run}: cells");
    assert_eq!(f.overall, expected["overall_score"].as_f64(), "{run}: overall");
    assert_eq!(f.mean_per_task, expected["mean_per_task_reward"].as_f64(), "{run}: mean per task");
    assert_eq!(
        Some(s.counts.gate_failed as u64),
        board["n_gate_failures"].as_u64(),
        "{run}: gate failures"
    );
    assert_eq!(
        Some((s.counts.scored + s.counts.gate_failed) as u64),
        board["n_trials"].as_u64(),
        "{run}: trials"
    );
    assert_eq!(Some(f.groups.len() as u64), board["n_input_groups"].as_u64(), "{run}: groups");
}

#[test]
fn exact_rounding_ties() {
    check("ties");
}

#[test]
fn trials_gate_failures_and_incomplete_rows() {
    check("trials");
}

#[test]
fn categories_spelled_two_ways_and_penalties() {
    check("categories");
}

#[test]
fn one_hundred_and_forty_random_tasks() {
    check("random");
}
