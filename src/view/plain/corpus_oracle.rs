//! The accepted and rejected views against LibreOffice's accept-all /
//! reject-all oracle for every file of ../shared/corpus (see its README).
//!
//! Comparison is "up to whitespace and list-label formatting": runs of
//! whitespace collapse, empty paragraphs are dropped on both sides (Word and
//! LibreOffice disagree on the empty paragraphs a move or a merge leaves
//! behind), and a list label LibreOffice prints before a paragraph is
//! ignored, since labels are checked on their own by the numbering tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::docx::{self, State};
use crate::view::plain;

/// The shared corpus of Word-made files (../shared/corpus beside the
/// checkout, or `REDJURY_CORPUS`). `None` — with a line saying the test
/// was skipped and how to run it — when it is absent, unless
/// `REDJURY_REQUIRE_CORPUS` is set (CI sets it), which makes its absence a
/// failure.
fn shared_corpus() -> Option<PathBuf> {
    let dir = match std::env::var_os("REDJURY_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    };
    if dir.join("README.md").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("REDJURY_REQUIRE_CORPUS").is_none(),
        "the shared corpus is not at {} (REDJURY_REQUIRE_CORPUS is set)",
        dir.display()
    );
    eprintln!(
        "SKIPPED views_agree_with_the_libreoffice_oracle: the shared corpus of Word-made files is not at {}; set REDJURY_CORPUS to its path to run it",
        dir.display()
    );
    None
}

fn normalize(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// LibreOffice's text never shows bullets; ours shows "•" as the label.
fn without_bullets(s: &str) -> String {
    normalize(&s.replace('•', " "))
}

/// Our lines, normalised, without empty lines: (with labels, without labels).
fn ours(doc: &docx::Document, state: State) -> Vec<(String, String)> {
    let with = plain::lines(doc, state);
    let without = plain::lines_without_labels(doc, state);
    with.iter()
        .zip(&without)
        .map(|(a, b)| (without_bullets(a), normalize(b)))
        .filter(|(a, _)| !a.is_empty())
        .collect()
}

fn theirs(value: &serde_json::Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter().filter_map(|v| v.as_str()).map(normalize).filter(|l| !l.is_empty()).collect()
        })
        .unwrap_or_default()
}

/// A line agrees when it is ours with our label, or ours without a label
/// where LibreOffice prints a label of its own ("1.", "a)", "SECTION 1").
fn same_line(oracle: &str, ours: &(String, String)) -> bool {
    let (with, without) = ours;
    if oracle == with || oracle == without {
        return true;
    }
    match oracle.strip_suffix(without.as_str()) {
        Some(prefix) => {
            let prefix = prefix.trim();
            !prefix.is_empty() && prefix.chars().count() <= 16 && prefix.split(' ').count() <= 2
        }
        None => false,
    }
}

fn agrees(oracle: &[String], ours: &[(String, String)]) -> bool {
    oracle.len() == ours.len() && oracle.iter().zip(ours).all(|(x, y)| same_line(x, y))
}

fn first_difference(oracle: &[String], ours: &[(String, String)]) -> String {
    for i in 0..oracle.len().max(ours.len()) {
        let x = oracle.get(i).map(String::as_str).unwrap_or("<none>");
        match ours.get(i) {
            Some(y) if same_line(x, y) => continue,
            Some(y) => return format!("line {i}: oracle {x:?} vs ours {:?}", y.0),
            None => return format!("line {i}: oracle {x:?} vs ours <none>"),
        }
    }
    String::new()
}

/// Files where LibreOffice's oracle is wrong, each with the reason. For
/// every one, our view must instead equal Open-XML-PowerTools' Word-made
/// baseline (`-Accepted.docx` / `-Rejected.docx`) where there is one, or,
/// for a reordering, hold exactly the oracle's lines in another order.
const ORACLE_WRONG: &[(&str, &str)] = &[
    (
        "powertools/RP001-Tracked-Revisions-01.docx",
        "floating tables (w:tblpPr) become LibreOffice frames anchored after the next paragraph, which reorders the text",
    ),
    (
        "powertools/RP001-Tracked-Revisions-02.docx",
        "floating tables (w:tblpPr) become LibreOffice frames anchored after the next paragraph, which reorders the text",
    ),
    (
        "powertools/RP004-Deleted-Text-in-CC.docx",
        "LibreOffice 7.4 does not accept a deletion inside a content control",
    ),
    (
        "powertools/RP013-Deleted-Math-Control-Char.docx",
        "LibreOffice turns Office Math into an embedded object with no paragraph text",
    ),
    (
        "powertools/RP014-Inserted-Math-Control-Char.docx",
        "LibreOffice turns Office Math into an embedded object with no paragraph text",
    ),
    (
        "powertools/RP018-MoveFrom-MoveTo-CC.docx",
        "LibreOffice 7.4 does not accept a move inside a content control",
    ),
    (
        "powertools/RP019-Deleted-Field-Code.docx",
        "LibreOffice recomputes the DATE field at load time; the file's field result is the document's text",
    ),
    (
        "powertools/RP020-Inserted-Field-Code.docx",
        "LibreOffice recomputes the DATE field at load time; the file's field result is the document's text",
    ),
    (
        "powertools/RP051-Arabic.docx",
        "LibreOffice splices the deleted and inserted text of a right-to-left replacement together",
    ),
    (
        "powertools/RP034-Deleted-Cells.docx",
        "LibreOffice 7.4 ignores tracked cell deletion (w:cellDel)",
    ),
    (
        "powertools/RP035-Inserted-Cells.docx",
        "LibreOffice 7.4 ignores tracked cell insertion (w:cellIns)",
    ),
];

/// Disagreements we believe are LibreOffice's but cannot prove here (no
/// Word baseline for that state). They count against the agreement rate.
const UNVERIFIED: &[(&str, &str, &str)] = &[
    (
        "powertools/RP001-Tracked-Revisions-01.docx",
        "rejected",
        "besides reordering floating tables, LibreOffice drops deleted rows whose cells held moved-in text; by OOXML, rejecting keeps those rows with empty cells",
    ),
    ("powertools/RP001-Tracked-Revisions-02.docx", "rejected", "as RP001-01"),
];

fn baseline(folder: &Path, name: &str, state: State) -> Option<Vec<(String, String)>> {
    let suffix = match state {
        State::Accepted => "-Accepted.docx",
        State::Rejected => "-Rejected.docx",
    };
    let path = folder.join(name.replace(".docx", suffix));
    let doc = docx::load(&path).ok()?;
    Some(ours(&doc, State::Accepted))
}

#[test]
fn views_agree_with_the_libreoffice_oracle() {
    let Some(corpus) = shared_corpus() else {
        return;
    };
    let mut failures: BTreeMap<String, String> = BTreeMap::new();
    let mut exceptions_used = Vec::new();
    let mut unverified = Vec::new();
    let mut checked = 0;
    let mut agreeing = 0;
    // Files whose views agree with the oracle, or with Word where the oracle is wrong.
    let mut verified = 0;
    for folder in ["pandoc", "powertools"] {
        let dir = corpus.join(folder);
        let oracle: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("LIBREOFFICE_ORACLE.json")).expect("oracle file"),
        )
        .expect("oracle JSON");
        for (name, entry) in oracle.as_object().expect("oracle object") {
            if entry.get("error").is_some() {
                continue;
            }
            checked += 1;
            let key = format!("{folder}/{name}");
            let doc = match docx::load(&dir.join(name)) {
                Ok(doc) => doc,
                Err(e) => {
                    failures.insert(key, format!("load error: {e}"));
                    continue;
                }
            };
            let mut file_agrees = true;
            for (state, field) in [(State::Accepted, "accepted"), (State::Rejected, "rejected")] {
                let expected = theirs(&entry[field]);
                let got = ours(&doc, state);
                if agrees(&expected, &got) {
                    continue;
                }
                file_agrees = false;
                let exception = ORACLE_WRONG.iter().find(|(k, _)| *k == key);
                let reordered = {
                    let mut a: Vec<&String> = expected.iter().collect();
                    let mut b: Vec<&String> = got.iter().map(|(with, _)| with).collect();
                    a.sort();
                    b.sort();
                    a == b
                };
                match (exception, baseline(&dir, name, state)) {
                    (Some(_), Some(word))
                        if word.len() == got.len()
                            && word.iter().zip(&got).all(|(w, g)| w.0 == g.0) =>
                    {
                        exceptions_used.push(key.clone());
                    }
                    (Some((_, reason)), None) if reason.contains("reorders") && reordered => {
                        exceptions_used.push(key.clone());
                    }
                    (_, None) if UNVERIFIED.iter().any(|(k, s, _)| *k == key && *s == field) => {
                        unverified.push(format!("{key} {field}"));
                    }
                    (Some(_), Some(_)) => {
                        failures.insert(
                            format!("{key} {field}"),
                            "disagrees with the oracle AND the PowerTools baseline".into(),
                        );
                    }
                    _ => {
                        failures
                            .insert(format!("{key} {field}"), first_difference(&expected, &got));
                    }
                }
            }
            if file_agrees {
                agreeing += 1;
            }
            if !unverified.iter().any(|u: &String| u.starts_with(&key)) {
                verified += 1;
            }
        }
    }
    for (k, v) in &failures {
        eprintln!("DISAGREE {k}: {v}");
    }
    eprintln!(
        "{checked} files checked; {agreeing} agree with LibreOffice outright, {verified} with LibreOffice or Word; \
         exceptions used: {exceptions_used:?}; unverified: {unverified:?}"
    );
    assert!(failures.is_empty(), "{} disagreements", failures.len());
    // Every listed exception must still be needed: a stale one hides nothing.
    for (k, _) in ORACLE_WRONG {
        assert!(
            exceptions_used.iter().any(|u| u == k),
            "{k} is listed as an oracle error but agrees now; remove it"
        );
    }
    assert_eq!(
        unverified.len(),
        UNVERIFIED.len(),
        "an unverified disagreement went away; remove it from UNVERIFIED"
    );
    assert!(
        verified * 100 >= checked * 98,
        "fewer than 98% of files agree: {verified} of {checked}"
    );
}
