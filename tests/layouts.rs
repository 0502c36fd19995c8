//! Task and output layouts on disk: reference task files, Harbor task
//! folders, and every output layout, including Harbor job folders.
use crate::common::root;
use std::path::{Path, PathBuf};

use redjury::{find_outputs, load_tasks};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn harbor_task_folders_with_metadata_and_an_input() {
    let dir = crate::common::temp_dir("harbor-tasks");
    let task = dir.join("redline-s2-t1-g01a");
    // rubrics.json without the fields task.toml's [metadata] supplies.
    write(
        &task.join("tests/rubrics.json"),
        r#"{"task_id": 7, "side": "B", "rubrics": [{"id": "rubric_1", "criteria": "Deletes 9.2", "category": "legal correctness", "weight": 5}]}"#,
    );
    write(
        &task.join("task.toml"),
        "[task]\nname = \"redline-s2-t1-g01a\"\n\n[metadata]\nscenario_id = 2\nrepresented_party = \"Buyer\"\ncounterparty = \"Seller\"\nauthor = \"Buyer Counsel\"\n",
    );
    std::fs::create_dir_all(task.join("environment/app")).expect("mkdir");
    std::fs::copy(
        root().join("scenarios/s2-services-agreement/inputs/s2-t1-g01.docx"),
        task.join("environment/app/contract.docx"),
    )
    .expect("copy");
    let tasks = load_tasks(&dir).expect("loads");
    let t = &tasks[0];
    assert_eq!(
        (t.name.as_str(), t.scenario.as_str(), t.turn, t.input_group.as_str()),
        ("redline-s2-t1-g01a", "2", 1, "s2-t1-g01")
    );
    assert_eq!(t.variant.as_deref(), Some("a"));
    assert_eq!((t.represented_party.as_str(), t.author.as_str()), ("Buyer", "Buyer Counsel"));
    assert_eq!(
        t.rubrics[0].category, "legal correctness",
        "categories are kept as written, as the reference keys them"
    );
    assert!(t.input_doc.is_some(), "the environment's contract is the input");
}

#[test]
fn task_errors_name_the_file_and_the_problem() {
    let dir = crate::common::temp_dir("bad-tasks");
    let base = r#""scenario_id": 1, "side": "A", "level": 1, "input_group": "s1-t1-g01", "represented_party": "V", "counterparty": "C", "author": "A""#;
    for (name, rubrics, expected) in [
        (
            "redline-s1-t1-g01a",
            r#"[{"id": "r1", "criteria": "x", "category": "c", "weight": 0}]"#,
            "rubric r1: weight 0 is out of range",
        ),
        (
            "redline-s1-t1-g01b",
            r#"[{"id": "r1", "criteria": "x", "category": "c", "weight": 11}]"#,
            "rubric r1: weight 11 is out of range",
        ),
        (
            "redline-s1-t1-g01c",
            r#"[{"id": "r1", "criteria": "x", "category": "c", "weight": 3}, {"id": "r1", "criteria": "y", "category": "c", "weight": 2}]"#,
            "duplicate rubric id \"r1\"",
        ),
        (
            "redline-s1-t1-g01d",
            r#"[{"id": "r1", "criteria": "x", "category": "c", "weight": -3}]"#,
            "no rubric with a positive weight",
        ),
        (
            "redline-s1-t1-g01e",
            r#"[{"id": "r1", "criteria": "x", "category": "c", "weight": 3, "kind": "check", "check": {"type": "contains", "pattern": "[", "in": "accepted"}}]"#,
            "rubric r1: check parameter `pattern`: invalid regex",
        ),
    ] {
        let one = dir.join(format!("{name}.json"));
        write(&one, &format!("{{{base}, \"rubrics\": {rubrics}}}"));
        let e = load_tasks(&one).expect_err("invalid").to_string();
        assert!(e.starts_with(&one.display().to_string()) && e.contains(expected), "{e}");
    }
    let side = dir.join("redline-s1-t1-g01f.json");
    write(
        &side,
        &format!("{{{}, \"rubrics\": []}}", base.replace("\"A\", \"level\"", "\"C\", \"level\"")),
    );
    assert!(load_tasks(&side).expect_err("invalid").to_string().contains("unknown side \"C\""));
}

#[test]
fn every_output_layout_is_found_and_strays_are_reported() {
    let dir = crate::common::temp_dir("outputs");
    let doc = root().join("gold/redlines/redline-s1-t2-g01a.docx");
    let cp = |to: PathBuf| {
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&doc, to).expect("copy");
    };
    cp(dir.join("redline-s1-t1-g01a.docx"));
    cp(dir.join("redline-s1-t1-g01b/contract.docx"));
    cp(dir.join("redline-s1-t2-g01a/run-1/contract.docx"));
    cp(dir.join("redline-s1-t2-g01a/run-2/contract.docx"));
    // Harbor job folder: trials named <task>__<id>, the task in result.json
    // or config.json, the file in artifacts/ or artifacts/app/.
    let job = dir.join("2026-11-30__10-00-00");
    cp(job.join("redline-s1-t3-g01a__AbC1234/artifacts/contract.docx"));
    write(
        &job.join("redline-s1-t3-g01a__AbC1234/result.json"),
        r#"{"task_name": "redline-s1-t3-g01a", "trial_name": "redline-s1-t3-g01a__AbC1234"}"#,
    );
    cp(job.join("trial-9/artifacts/app/contract.docx"));
    write(&job.join("trial-9/config.json"), r#"{"task": {"path": "tasks/redline-s1-t3-g01b"}}"#);
    cp(dir.join("notes.docx"));
    let names: Vec<String> = [
        "redline-s1-t1-g01a",
        "redline-s1-t1-g01b",
        "redline-s1-t2-g01a",
        "redline-s1-t3-g01a",
        "redline-s1-t3-g01b",
        "redline-s2-t2-g01a",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let found = find_outputs(&dir, &names).expect("outputs");
    let got: Vec<(String, String)> =
        found.found.iter().map(|o| (o.task.clone(), o.trial.clone())).collect();
    assert_eq!(
        got,
        [
            ("redline-s1-t1-g01a".to_string(), "1".to_string()),
            ("redline-s1-t1-g01b".into(), "1".into()),
            ("redline-s1-t2-g01a".into(), "run-1".into()),
            ("redline-s1-t2-g01a".into(), "run-2".into()),
            ("redline-s1-t3-g01a".into(), "redline-s1-t3-g01a__AbC1234".into()),
            ("redline-s1-t3-g01b".into(), "trial-9".into()),
        ]
    );
    assert_eq!(found.unmatched, [dir.join("notes.docx")]);
    assert!(found.unusable.is_empty());
}

#[test]
fn files_named_after_a_task_that_cannot_be_outputs_are_listed_with_the_reason() {
    let dir = crate::common::temp_dir("unusable");
    write(&dir.join("redline-s1-t1-g01a.doc"), "legacy");
    write(&dir.join("redline-s1-t1-g01b.pdf"), "%PDF");
    write(&dir.join("redline-s1-t2-g01a/contract.odt"), "odt");
    write(&dir.join("README.txt"), "not an output");
    let names: Vec<String> = ["redline-s1-t1-g01a", "redline-s1-t1-g01b", "redline-s1-t2-g01a"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let found = find_outputs(&dir, &names).expect("outputs");
    // A PDF is an output (of a PDF task; a .docx task's gate fails it by
    // kind), so it is found, not listed as unusable.
    let pdf: Vec<&str> = found.found.iter().map(|o| o.task.as_str()).collect();
    assert_eq!(pdf, ["redline-s1-t1-g01b"]);
    let reasons: Vec<(String, String)> = found
        .unusable
        .iter()
        .map(|(p, why)| {
            (
                p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                why.clone(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            (
                "redline-s1-t1-g01a.doc".to_string(),
                "a legacy Word 97-2003 .doc: open it in Word and save it as .docx".to_string()
            ),
            (
                "contract.odt".into(),
                "an OpenDocument text: save it as Word (.docx) with changes still tracked".into()
            ),
        ]
    );
}

#[test]
fn task_files_typos_ids_and_byte_order_marks() {
    let dir = crate::common::temp_dir("typos");
    let good = r#""task_id": 1111, "scenario_id": 1, "side": "A", "level": 1, "input_group": "s1-t1-g01", "represented_party": "V", "counterparty": "C", "author": "A""#;
    // Unknown keys at both levels, each with the nearest known key; an
    // empty rubric id; all reported in one pass.
    let typo = dir.join("redline-s1-t1-g01a.json");
    write(
        &typo,
        &format!(
            r#"{{{}, "autor": "A", "rubrics": [{{"id": "r1", "criteria": "x", "catgory": "c", "weight": 3}}, {{"id": " ", "criteria": "y", "category": "c", "weight": 2}}]}}"#,
            good
        ),
    );
    let e = load_tasks(&typo).expect_err("typos").to_string();
    assert!(e.contains(r#"unknown key "autor" (did you mean "author"?)"#), "{e}");
    assert!(e.contains(r#"rubric "r1": unknown key "catgory" (did you mean "category"?)"#), "{e}");
    assert!(e.contains("rubric #2 has an empty id"), "{e}");
    // A string task_id that is not the file's name.
    let wrong = dir.join("redline-s1-t1-g01b.json");
    write(
        &wrong,
        &format!(
            r#"{{{}, "rubrics": [{{"id": "r1", "criteria": "x", "category": "c", "weight": 3}}]}}"#,
            good.replace("1111", "\"redline-s9-t1-g01a\"")
        ),
    );
    let e = load_tasks(&wrong).expect_err("contradiction").to_string();
    assert!(
        e.contains(
            r#"task_id "redline-s9-t1-g01a" contradicts the task's name "redline-s1-t1-g01b""#
        ),
        "{e}"
    );
    // Both files' errors come back together from the folder.
    let e = load_tasks(&dir).expect_err("two bad files").to_string();
    assert!(
        e.starts_with("2 task files are invalid:")
            && e.contains("autor")
            && e.contains("contradicts"),
        "{e}"
    );
    // A UTF-8 byte-order mark (as Windows editors save) is accepted.
    let bom = dir.join("redline-s1-t1-g01c.json");
    write(
        &bom,
        &format!(
            "\u{feff}{{{good}, \"rubrics\": [{{\"id\": \"r1\", \"criteria\": \"x\", \"category\": \"c\", \"weight\": 3}}]}}"
        ),
    );
    assert_eq!(load_tasks(&bom).expect("a BOM is fine")[0].name, "redline-s1-t1-g01c");
}
