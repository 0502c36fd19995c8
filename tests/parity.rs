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
    for (ours, key) in [
        (f.n_trials, "n_trials"),
        (f.n_input_groups, "n_input_groups"),
        (f.n_gate_failures, "n_gate_failures"),
    ] {
        assert_eq!(Some(ours as u64), board[key].as_u64(), "{run}: {key}");
    }
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

/// What the reference's `docx_metrics.py` reads from every bundled .docx
/// (each output and gold redline), unfiltered and filtered by the task's
/// author as it filters (a substring), equals what redjury's reader reads
/// (tests/parity/expected/docx_shape.json, made by
/// tests/parity/docx_shape.py with the reference's own module): event
/// kinds at the 0.30 threshold and sizes, edit operations, touched
/// paragraphs, redline clusters and the touched paragraphs' positions.
#[test]
fn the_docx_shape_reads_as_the_references_docx_metrics() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("expected/docx_shape.json")).expect("expected"),
    )
    .expect("json");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let files = expected.as_object().expect("object");
    assert_eq!(files.len(), 45);
    let mut events = 0;
    for (file, want) in files {
        let doc = redjury::docx::load(&root.join(file)).expect("loads");
        let author = want["author"].as_str().expect("author").to_string();
        let own = move |a: &str| a.contains(&author);
        for (side, counts) in [("all", &(|_: &str| true) as &dyn Fn(&str) -> bool), ("own", &own)] {
            let got = doc.shape.edits(counts);
            let want = &want[side];
            let kinds: Vec<&str> = got
                .events
                .iter()
                .map(|e| if e.is_inline(0.30) { "inline" } else { "block" })
                .collect();
            let strings = |v: &Value| -> Vec<String> {
                v.as_array()
                    .expect("array")
                    .iter()
                    .map(|x| x.to_string().replace('"', ""))
                    .collect()
            };
            assert_eq!(kinds, strings(&want["event_kinds"]), "{file} {side}: kinds");
            let sizes: Vec<String> = got.events.iter().map(|e| e.size.to_string()).collect();
            assert_eq!(sizes, strings(&want["event_sizes"]), "{file} {side}: sizes");
            assert_eq!(Some(got.operations), want["edit_op_count"].as_u64(), "{file} {side}: ops");
            assert_eq!(
                Some(got.touched_paragraphs),
                want["touched_paras"].as_u64(),
                "{file} {side}: touched"
            );
            assert_eq!(Some(got.redlines()), want["clusters"].as_u64(), "{file} {side}: redlines");
            let touched: Vec<String> = got.touched.iter().map(u32::to_string).collect();
            assert_eq!(touched, strings(&want["touched"]), "{file} {side}: positions");
            assert_eq!(
                doc.shape.paragraphs.len() as u64,
                want["n_paragraphs"].as_u64().expect("n"),
                "{file}: paragraphs"
            );
            events += got.events.len();
        }
    }
    assert!(events > 300, "only {events} events compared");
}

/// The docx-shape sections of a scored run equal the reference's
/// `compute_surgicalness` and `compute_verbosity_turn1` on the same files
/// (tests/parity/expected/docx_shape_runs.json): the strong and weak
/// sample runs, dry-run scored, the expert row from the gold redlines the
/// tasks name as `"expert"`.
#[tokio::test]
async fn surgicalness_and_verbosity_equal_the_references() {
    let expected: Value = serde_json::from_str(
        &std::fs::read_to_string(dir().join("expected/docx_shape_runs.json")).expect("expected"),
    )
    .expect("json");
    let tmp = crate::common::temp_dir("docx-shape-runs");
    for run in ["strong", "weak"] {
        let out = tmp.join(run);
        let outputs = format!("scenarios/outputs/{run}");
        let args: Vec<String> =
            ["score", "--tasks", "rubrics", "--outputs", &outputs, "--dry-run", "--quiet", "--out"]
                .iter()
                .map(|s| s.to_string())
                .chain([
                    out.display().to_string(),
                    "--cache".into(),
                    tmp.join(format!("{run}.db")).display().to_string(),
                ])
                .collect();
        let (code, _, err) = crate::common::e2e::redjury(args, false).await;
        assert_eq!(code, 0, "{err}");
        let summary: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("summary.json")).expect("summary"),
        )
        .expect("json");
        assert_eq!(summary["docx_shape"], expected[run], "{run}");
    }
}

/// A judged row of `rubrics` (as results.jsonl holds them), settled.
fn planted_row(task: &str, gate: bool, rubrics: Value) -> TaskResult {
    let mut r: TaskResult = serde_json::from_value(serde_json::json!({
        "task": task, "trial": "1", "scenario": "1", "turn": 1, "side": "A",
        "group": "s1-t1-g01", "variant": "a", "status": "pending",
        "gate": {"passed": gate, "reason": "x"}, "reward": null, "earned": null,
        "penalty": null, "total_positive": 0, "rubrics": rubrics,
    }))
    .expect("row");
    r.settle_judged();
    r
}

/// The reference's severity scale (`src/severity.py`) on planted rows,
/// computed by hand: a scored row (8 failed → L4, 5 met → L0, a −6
/// penalty triggered → L4, 2 failed → L1), a gate failure (its 3 and −2
/// items count as FAIL → L2, L0) and an incomplete row (left out).
#[test]
fn severity_grades_planted_verdicts_as_the_reference_does() {
    let row = |task: &str, gate: bool, rubrics: &[(i32, Option<&str>)]| {
        let rubrics: Vec<Value> = rubrics
            .iter()
            .enumerate()
            .map(|(i, (w, v))| {
                serde_json::json!({"id": format!("r{i}"), "kind": "llm", "weight": w,
                    "category": "C", "verdict": v, "votes": {}})
            })
            .collect();
        planted_row(task, gate, Value::Array(rubrics))
    };
    let rows = vec![
        row(
            "redline-s1-t1-g01a",
            true,
            &[(8, Some("FAIL")), (5, Some("PASS")), (-6, Some("PASS")), (2, Some("FAIL"))],
        ),
        row("redline-s1-t1-g01b", false, &[(3, Some("PASS")), (-2, Some("PASS"))]),
        row("redline-s1-t2-g01a", true, &[(9, Some("FAIL")), (4, None)]),
    ];
    let s = Summary::build(&rows, vec![], vec![], Bootstrap::default(), None);
    let got = serde_json::to_value(s.severity.expect("severity")).expect("json");
    assert_eq!(
        got,
        serde_json::json!({
            "levels": {"L0": 2, "L1": 1, "L2": 1, "L3": 0, "L4": 2},
            "share": {"L0": 0.3333, "L1": 0.1667, "L2": 0.1667, "L3": 0.0, "L4": 0.3333},
            "mean_severity": 1.8333, "mean_fail_severity": 2.75, "max_severity": 4,
            "n_records": 6, "n_failures": 4,
            "high_severity_failures": {"count": 2, "share_of_failures": 0.5},
        })
    );
}

/// Pivotal votes (`src/pivotal_votes.py`) on planted votes, computed by
/// hand: row 1 has a 2–1 PASS (weight 5) and a 1–2 penalty (−4) among
/// three judge rubrics, and a check (never pivotal); flipping both moves
/// its reward from 1.0 to 0.1. Row 2 has a 2–0 vote (one judge
/// abstained) and a 1–1 tie: neither is pivotal. A gate failure is left
/// out.
#[test]
fn pivotal_votes_of_planted_panels() {
    let row = planted_row;
    let votes = |v: &[Option<&str>]| -> Value {
        v.iter().enumerate().map(|(i, x)| (format!("j{i}"), serde_json::json!(x))).collect()
    };
    let llm = |id: &str, w: i32, verdict: &str, v: Value| serde_json::json!({"id": id, "kind": "llm", "weight": w, "category": "C", "verdict": verdict, "votes": v});
    let (p, f) = (Some("PASS"), Some("FAIL"));
    let rows = vec![
        row(
            "redline-s1-t1-g01a",
            true,
            serde_json::json!([
                llm("r0", 5, "PASS", votes(&[p, p, f])),
                llm("r1", 3, "PASS", votes(&[p, p, p])),
                llm("r2", -4, "FAIL", votes(&[p, f, f])),
                {"id": "r3", "kind": "check", "weight": 2, "category": "C", "verdict": "PASS", "votes": {"check": "PASS"}},
            ]),
        ),
        row(
            "redline-s1-t1-g01b",
            true,
            serde_json::json!([
                llm("r0", 6, "PASS", votes(&[p, p, None])),
                llm("r1", 2, "FAIL", votes(&[p, f])),
            ]),
        ),
        row(
            "redline-s1-t2-g01a",
            false,
            serde_json::json!([llm("r0", 5, "PASS", votes(&[p, p, f]))]),
        ),
    ];
    assert_eq!(rows[0].reward, Some(1.0));
    let s = Summary::build(&rows, vec![], vec![], Bootstrap::default(), None);
    let got = serde_json::to_value(s.pivotal.expect("pivotal")).expect("json");
    assert_eq!(
        got,
        serde_json::json!({
            "n_rubrics": 5, "n_pivotal": 2, "fraction_pivotal": 0.4, "pivotal_weight_share": 0.3125,
            "n_rows": 2, "mean_swing": 0.45, "max_swing": 0.9,
            "largest": [{"task": "redline-s1-t1-g01a", "trial": "1", "n_rubrics": 3, "n_pivotal": 2,
                         "swing": 0.9, "rubrics": ["r0", "r2"]}],
        })
    );
}

/// A main part the reader takes (it stops at the body's end) but the raw
/// walk of the docx-shape figures cannot (a mismatched tag after the
/// body) still loads: its figures count no tracked change, and a warning
/// says why.
#[test]
fn a_main_part_the_shape_walk_cannot_read_still_loads() {
    let doc =
        crate::common::Docx::body("<w:p><w:r><w:t>Fees.</w:t></w:r></w:p></w:body><w:x></w:y>")
            .load();
    assert!(doc.shape.paragraphs.is_empty());
    assert!(doc.warnings.iter().any(|w| w.contains("edit shape")), "{:?}", doc.warnings);
}
