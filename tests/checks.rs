//! Every check type on real files: the shared corpus (Word-made) and the
//! example benchmark (LibreOffice-made), with the verdict and the reason a
//! user would read.
use crate::common::root;
use std::path::{Path, PathBuf};

use crate::common::checks::On;
use redjury::Verdict::{self, Fail, Pass};
use redjury::docx::{self, Document};

/// A file of the shared corpus, or `None` (the test is skipped) without it.
fn corpus(test: &str, name: &str) -> Option<PathBuf> {
    crate::common::shared_corpus(test).map(|c| c.join(name))
}

fn load(path: &Path) -> Document {
    docx::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Runs a check written as JSON; gold paths are relative to the corpus.
fn run(
    check: serde_json::Value,
    doc: &Document,
    input: Option<&Document>,
    author: &str,
) -> (Verdict, String) {
    // Only the corpus tests (which skip without it) name gold documents.
    let base = std::env::var_os("REDJURY_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/corpus"));
    crate::common::checks::verdict(&check, doc, &On { input, author, base })
}

#[test]
fn author() {
    let Some(path) = corpus("author", "pandoc/comments.docx") else { return };
    let doc = load(&path);
    let (v, why) =
        run(serde_json::json!({"type": "author", "authors": ["Jesse Rosenthal"]}), &doc, None, "x");
    assert_eq!(
        (v, why.as_str()),
        (Pass, "all 5 tracked changes and comments are by Jesse Rosenthal")
    );
    let (v, why) =
        run(serde_json::json!({"type": "author", "authors": ["Counterparty"]}), &doc, None, "x");
    assert_eq!((v, why.as_str()), (Fail, "no tracked change or comment by Counterparty"));
    let (v, _) = run(
        serde_json::json!({"type": "author", "authors": ["Counterparty"], "mode": "only"}),
        &doc,
        None,
        "x",
    );
    assert_eq!(v, Fail);
    // Two authors in one turn-2 file: "all" by one of them fails, "any" passes.
    let turn2 = load(&root().join("gold/redlines/redline-s1-t2-g01a.docx"));
    let (v, why) = run(
        serde_json::json!({"type": "author", "authors": ["Customer Counsel"]}),
        &turn2,
        None,
        "x",
    );
    assert_eq!(v, Fail);
    assert!(why.contains("are by others: Vendor Counsel"), "{why}");
    let (v, _) = run(
        serde_json::json!({"type": "author", "authors": ["Customer Counsel"], "mode": "any"}),
        &turn2,
        None,
        "x",
    );
    assert_eq!(v, Pass);
    let (v, _) = run(
        serde_json::json!({"type": "author", "authors": ["Customer Counsel", "Vendor Counsel"], "mode": "only"}),
        &turn2,
        None,
        "x",
    );
    assert_eq!(v, Pass);
}

#[test]
fn no_format_changes_and_revisions_remaining() {
    let Some(path) = corpus(
        "no_format_changes_and_revisions_remaining",
        "powertools/RP024-ParagraphMark-rPr-Change.docx",
    ) else {
        return;
    };
    let formatted = load(&path);
    let Some(path) =
        corpus("no_format_changes_and_revisions_remaining", "powertools/RP002-Deleted-Text.docx")
    else {
        return;
    };
    let plain = load(&path);
    assert_eq!(
        run(serde_json::json!({"type": "no_format_changes"}), &formatted, None, "x").0,
        Fail
    );
    assert_eq!(
        run(serde_json::json!({"type": "no_format_changes"}), &plain, None, "x"),
        (Pass, "no formatting or property revisions".into())
    );
    let Some(path) = corpus(
        "no_format_changes_and_revisions_remaining",
        "powertools/RP002-Deleted-Text-Accepted.docx",
    ) else {
        return;
    };
    let clean = load(&path);
    let zero = serde_json::json!({"type": "revisions_remaining", "kinds": ["insertion", "deletion"], "max": 0});
    assert_eq!(run(zero.clone(), &clean, None, "x").0, Pass);
    let (v, why) = run(zero, &plain, None, "x");
    assert_eq!((v, why.as_str()), (Fail, "1 insertion/deletion remain (wanted ≤ 0)"));
    let by_eric = serde_json::json!({"type": "revisions_remaining", "author": "Eric White", "min": 1, "max": 1});
    assert_eq!(run(by_eric, &plain, None, "x").0, Pass);
}

/// Word's property revisions (numbering, section, table grid, row, table
/// exception) are revisions: the gate counts them, `no_format_changes`
/// names them, `revisions_remaining` counts them by their task-file names.
#[test]
fn property_revisions_in_word_files_are_format_changes() {
    let cases = [
        ("RP026-NumberingChange", "numbering_format", 2),
        ("RP027-Change-Section", "section_format", 1),
        ("RP028-Table-Grid-Change", "table_grid", 1),
        // Its row and row-table property changes record equal old and new
        // values (Word's side effects of a cell change): cancelled.
        ("RP033-Table-Prop-Ex-Change", "cell_format", 6),
    ];
    for (file, kind, n) in cases {
        let name = format!("powertools/{file}.docx");
        let Some(path) = corpus("property_revisions_in_word_files_are_format_changes", &name)
        else {
            return;
        };
        let doc = load(&path);
        let (v, why) = run(serde_json::json!({"type": "no_format_changes"}), &doc, None, "x");
        assert_eq!(v, Fail, "{file}: {why}");
        assert!(why.contains(&format!("{n} {kind}")), "{file}: {why}");
        let exactly =
            serde_json::json!({"type": "revisions_remaining", "kinds": [kind], "min": n, "max": n});
        let (v, why) = run(exactly, &doc, None, "x");
        assert_eq!(v, Pass, "{file}: {why}");
        assert_eq!(why, format!("{n} {kind} remain (wanted exactly {n})"));
        let gate = redjury::gate(&Ok(doc), "Eric White");
        assert!(gate.passed, "{file}: {}", gate.reason);
    }
    // Every property change RP029 records has equal old and new values
    // (the row height it changed is not tracked at all): nothing is left
    // to count, and the gate says there is no change.
    let Some(path) = corpus(
        "property_revisions_in_word_files_are_format_changes",
        "powertools/RP029-Table-Row-Props-Change.docx",
    ) else {
        return;
    };
    let doc = load(&path);
    assert!(doc.revisions.is_empty(), "{:?}", doc.revisions);
    let kinds: Vec<_> = doc.cancelled.iter().map(|c| c.kind).collect();
    use redjury::docx::RevisionKind::*;
    assert_eq!(kinds, [TableGrid, TableExceptionFormat, CellFormat, CellFormat, CellFormat]);
    let gate = redjury::gate(&Ok(doc), "Eric White");
    assert!(!gate.passed && gate.reason.contains("no tracked change"), "{}", gate.reason);
}

#[test]
fn accepted_text_equals_against_a_gold_docx_or_text() {
    let Some(path) = corpus(
        "accepted_text_equals_against_a_gold_docx_or_text",
        "powertools/RP002-Deleted-Text.docx",
    ) else {
        return;
    };
    let doc = load(&path);
    let gold = serde_json::json!({"type": "accepted_text_equals", "gold_docx": "powertools/RP002-Deleted-Text-Accepted.docx"});
    assert_eq!(
        run(gold, &doc, None, "x"),
        (Pass, "accepted text of the document equals the gold text".into())
    );
    let wrong = serde_json::json!({"type": "accepted_text_equals", "gold_docx": "powertools/RP002-Deleted-Text-Rejected.docx"});
    let (v, why) = run(wrong, &doc, None, "x");
    assert_eq!(v, Fail);
    assert!(
        why.starts_with("accepted text of the document differs from the gold from character 6"),
        "{why}"
    );
    let fuzzy = serde_json::json!({"type": "accepted_text_equals", "gold_docx": "powertools/RP002-Deleted-Text-Rejected.docx", "min_f1": 0.9});
    assert_eq!(run(fuzzy, &doc, None, "x").0, Pass, "one word of ~45 differs");
    let text = serde_json::json!({"type": "accepted_text_equals", "text": "Video a powerful way to help you prove your point. When you click Online Video, you can paste in the embed code for the video you want to add. You can also type a keyword to search online for the video that best fits your document."});
    assert_eq!(run(text, &doc, None, "x").0, Pass);
}

#[test]
fn revision_set_f1() {
    let Some(path) = corpus("revision_set_f1", "powertools/RP001-Tracked-Revisions-01.docx") else {
        return;
    };
    let doc = load(&path);
    let same = serde_json::json!({"type": "revision_set_f1", "gold_docx": "powertools/RP001-Tracked-Revisions-01.docx", "min_f1": 0.99});
    assert!(run(same, &doc, None, "x").1.starts_with("inserted/deleted tokens: F1 1.000"));
    let other = serde_json::json!({"type": "revision_set_f1", "gold_docx": "powertools/RP003-Inserted-Text.docx", "min_f1": 0.5});
    let (v, why) = run(other, &doc, None, "x");
    assert_eq!(v, Fail, "{why}");
}

#[test]
fn comments() {
    let Some(path) = corpus("comments", "pandoc/comments.docx") else { return };
    let doc = load(&path);
    let c = |v: serde_json::Value| run(v, &doc, None, "x");
    assert_eq!(c(serde_json::json!({"type": "comment", "author": "Jesse Rosenthal", "contains": "LEFT A COMMENT"})).0, Pass);
    assert_eq!(c(serde_json::json!({"type": "comment", "equals": "I left a comment."})).0, Pass);
    let (v, why) = c(serde_json::json!({"type": "comment", "reply": true, "min": 1, "max": 1}));
    assert_eq!((v, why.as_str()), (Pass, "1 comment(s) replies (wanted exactly 1)"));
    assert_eq!(c(serde_json::json!({"type": "comment", "author": "Someone Else"})).0, Fail);
    assert_eq!(c(serde_json::json!({"type": "comment", "min": 6})).0, Fail);
    // Anchored within a numbered section of the example benchmark.
    let gold = load(&root().join("gold/redlines/redline-s1-t1-g01a.docx"));
    let (v, why) = run(
        serde_json::json!({"type": "comment", "author": "Vendor Counsel", "section": "9"}),
        &gold,
        None,
        "x",
    );
    assert_eq!(v, Pass, "{why}");
    let (v, why) = run(serde_json::json!({"type": "comment", "section": "7"}), &gold, None, "x");
    assert_eq!((v, why.as_str()), (Fail, "0 comment(s) in section 7 (wanted ≥ 1)"));
    let (v, why) = run(serde_json::json!({"type": "comment", "section": "42"}), &gold, None, "x");
    assert_eq!((v, why.as_str()), (Fail, "section 42 is not in the document's numbering"));
}

#[test]
fn contains_and_not_contains() {
    let Some(path) = corpus("contains_and_not_contains", "powertools/RP002-Deleted-Text.docx")
    else {
        return;
    };
    let doc = load(&path);
    let (v, why) = run(
        serde_json::json!({"type": "contains", "pattern": "prov(ides)?", "in": "deleted"}),
        &doc,
        None,
        "x",
    );
    assert_eq!(v, Pass);
    assert!(why.starts_with("deleted text contains \"provides\" (in the body: \""), "{why}");
    assert_eq!(
        run(
            serde_json::json!({"type": "contains", "pattern": "provides", "in": "accepted"}),
            &doc,
            None,
            "x"
        )
        .0,
        Fail
    );
    assert_eq!(
        run(
            serde_json::json!({"type": "not_contains", "pattern": "provides", "in": "accepted"}),
            &doc,
            None,
            "x"
        )
        .0,
        Pass
    );
    assert_eq!(
        run(
            serde_json::json!({"type": "contains", "pattern": ".", "in": "inserted"}),
            &doc,
            None,
            "x"
        )
        .0,
        Fail
    );
    // By section and author on the example benchmark.
    let gold = load(&root().join("gold/redlines/redline-s1-t1-g01a.docx"));
    let in_93 = serde_json::json!({"type": "contains", "pattern": "8\\.1\\(a\\)", "in": "inserted", "section": "9.3(a)", "author": "Vendor Counsel"});
    assert_eq!(run(in_93, &gold, None, "x").0, Pass);
    let elsewhere = serde_json::json!({"type": "contains", "pattern": "8\\.1\\(a\\)", "in": "inserted", "section": "6"});
    assert_eq!(run(elsewhere, &gold, None, "x").0, Fail);
}

#[test]
fn scope() {
    let input = load(&root().join("scenarios/s1-saas-msa/inputs/s1-t1-g01.docx"));
    let gold = load(&root().join("gold/redlines/redline-s1-t1-g01a.docx"));
    let all = serde_json::json!({"type": "scope", "sections": ["4", "6", "9", "10"]});
    let (v, why) = run(all, &gold, Some(&input), "Vendor Counsel");
    assert_eq!(v, Pass, "{why}");
    assert!(why.ends_with("the text elsewhere is unchanged"), "{why}");
    let narrow = serde_json::json!({"type": "scope", "sections": ["9"]});
    let (v, why) = run(narrow, &gold, Some(&input), "Vendor Counsel");
    assert_eq!(v, Fail);
    assert!(why.contains("fall outside section(s) 9"), "{why}");
    // The unedited input is trivially in scope and equal to itself.
    let (v, _) = run(
        serde_json::json!({"type": "scope", "sections": ["9"]}),
        &input,
        Some(&input),
        "Vendor Counsel",
    );
    assert_eq!(v, Pass);
}

/// The gate with an input counts only what the output adds: turn 3 is
/// Vendor Counsel's again, and its input already holds Vendor Counsel's
/// turn-1 changes.
#[test]
fn the_gate_does_not_count_changes_carried_over_from_the_input() {
    use redjury::gate_against;
    let input = load(&root().join("scenarios/s1-saas-msa/inputs/s1-t3-g01.docx"));
    let unedited = docx::load(&root().join("scenarios/s1-saas-msa/inputs/s1-t3-g01.docx"));
    let reference = gate_against(&unedited, "Vendor Counsel", None);
    assert!(
        reference.passed,
        "without an input the reference gate passes an unedited file: {}",
        reference.reason
    );
    let strict = gate_against(&unedited, "Vendor Counsel", Some(&input));
    assert!(!strict.passed);
    assert!(
        strict.reason.starts_with("no new tracked change or comment by 'Vendor Counsel': its "),
        "{}",
        strict.reason
    );
    let strong = docx::load(&root().join("scenarios/outputs/strong/redline-s1-t3-g01a.docx"));
    let r = gate_against(&strong, "Vendor Counsel", Some(&input));
    assert!(
        r.passed
            && r.reason.contains("new tracked change(s)")
            && r.reason.contains("carried over from the input"),
        "{}",
        r.reason
    );
}

/// Every check of the example benchmark gives, on the gold redline and on
/// each sample output, the verdict gold/verdicts/ records for it.
#[test]
fn example_checks_agree_with_the_gold_verdicts() {
    let tasks = redjury::load_tasks(&root().join("rubrics")).expect("tasks load");
    let mut compared = 0;
    for task in tasks.iter().filter(|t| t.rubrics.iter().any(|r| r.is_check())) {
        let verdicts: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                root().join("gold/verdicts").join(format!("{}.json", task.name)),
            )
            .expect("gold verdicts"),
        )
        .expect("json");
        for (kind, dir) in [
            ("gold", "gold/redlines"),
            ("strong", "scenarios/outputs/strong"),
            ("weak", "scenarios/outputs/weak"),
        ] {
            let docx = root().join(dir).join(format!("{}.docx", task.name));
            let xlsx = docx.with_extension("xlsx");
            let pdf_path = docx.with_extension("pdf");
            let book = xlsx.exists().then(|| redjury::xlsx::load(&xlsx).expect("workbook loads"));
            let pdf = pdf_path.exists().then(|| {
                let bytes = std::fs::read(&pdf_path).unwrap();
                redjury::pdf::from_bytes(&bytes, Default::default()).expect("PDF loads")
            });
            let doc = (book.is_none() && pdf.is_none()).then(|| load(&docx));
            for rubric in &task.rubrics {
                let Some(check) = &rubric.check else { continue };
                let (v, why) = match (&doc, &book, &pdf) {
                    (Some(doc), ..) => {
                        redjury::evaluate_check(check, doc, task.input_doc.as_deref(), &task.author)
                    }
                    (None, Some(book), _) => {
                        redjury::evaluate_workbook_checks(&[check], book).pop().unwrap()
                    }
                    (None, None, Some(pdf)) => {
                        redjury::evaluate_pdf_checks(&[check], pdf).pop().unwrap()
                    }
                    (None, None, None) => unreachable!(),
                };
                let want = verdicts["outputs"][kind][&rubric.id]["verdict"].as_str().unwrap_or("?");
                assert_eq!(v.as_str(), want, "{} {kind} {}: {why}", task.name, rubric.id);
                if std::env::var_os("REDJURY_SHOW_REASONS").is_some() {
                    eprintln!("{} {kind} {} {want}: {why}", task.name, rubric.id);
                }
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 3 * (16 + 21), "s3's 16 and s4's 21 checks × 3 files");
}

/// A clause with its own, separately defined "(a)" list: the items stay in
/// the clause's section.
#[test]
fn a_separate_sub_list_nests_inside_its_clause() {
    use crate::common::*;
    let numbering = r#"<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="9"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum><w:abstractNum w:abstractNumId="2"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="(%1)"/></w:lvl></w:abstractNum><w:num w:numId="1"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="2"><w:abstractNumId w:val="2"/></w:num>"#;
    let body = [
        np(1, 0, &run("LIABILITY")),
        np(2, 0, &run("first item")),
        np(
            2,
            0,
            &format!(
                "{}{}",
                run("second item "),
                ins(1, "Buyer Counsel", "capped at twelve (12) months")
            ),
        ),
        np(1, 0, &run("TERM")),
        np(2, 0, &run("renewal")),
    ]
    .concat();
    let doc = Docx { body, numbering: Some(numbering.into()), ..Default::default() }.load();
    let (v, why) =
        run_check(serde_json::json!({"type": "scope", "sections": ["9"]}), &doc, "Buyer Counsel");
    assert_eq!(v, Pass, "{why}");
    let (v, why) = run_check(
        serde_json::json!({"type": "contains", "pattern": "twelve", "in": "inserted", "section": "9(b)"}),
        &doc,
        "x",
    );
    assert_eq!(v, Pass, "{why}");
    let (v, _) = run_check(
        serde_json::json!({"type": "contains", "pattern": "twelve", "in": "inserted", "section": "10"}),
        &doc,
        "x",
    );
    assert_eq!(v, Fail);
}

fn run_check(check: serde_json::Value, doc: &Document, author: &str) -> (Verdict, String) {
    run(check, doc, None, author)
}
