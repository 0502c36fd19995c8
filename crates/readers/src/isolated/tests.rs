//! The child's answer decodes to the model the reader made: what a check
//! reads in process it reads the same from a child. (The pool itself is
//! tested against the real binary, in the main crate's tests.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use super::wire::{self, Model};
use super::{Bounds, Failure};
use crate::{docx, pdf, xlsx};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file of `dir` (recursively) ending in `ext`.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

fn round_trip(model: Model) -> (String, String) {
    let json = serde_json::to_vec(&model).unwrap();
    let decoded = wire::decode(json.clone()).unwrap_or_else(|f| panic!("{f}"));
    (String::from_utf8(json).unwrap(), serde_json::to_string(&decoded).unwrap())
}

#[test]
fn every_example_model_comes_back_from_its_json_as_it_was() {
    let mut seen = [0usize; 3];
    for ext in ["docx", "xlsx", "pdf"] {
        let mut paths = Vec::new();
        files(&repo().join("scenarios"), ext, &mut paths);
        files(&repo().join("gold"), ext, &mut paths);
        for path in paths {
            let bytes = std::fs::read(&path).unwrap();
            let model = match ext {
                "docx" => match docx::from_bytes(bytes, docx::Limits::default()) {
                    Ok(d) => {
                        seen[0] += 1;
                        Model::Document(Box::new(d))
                    }
                    Err(_) => continue,
                },
                "xlsx" => {
                    seen[1] += 1;
                    Model::Workbook(xlsx::from_bytes(bytes, docx::Limits::default()).unwrap())
                }
                _ => {
                    seen[2] += 1;
                    Model::Pdf(Box::new(pdf::from_bytes(&bytes, pdf::Limits::default()).unwrap()))
                }
            };
            let (sent, back) = round_trip(model);
            assert!(sent == back, "{} changed on the way back", path.display());
        }
    }
    assert!(seen.iter().all(|n| *n > 0), "example files of each kind: {seen:?}");
}

#[test]
fn a_comment_is_found_by_its_id_after_the_way_back() {
    let path = repo().join("scenarios/outputs/strong");
    let mut paths = Vec::new();
    files(&path, "docx", &mut paths);
    let with_comments = paths
        .iter()
        .filter_map(|p| docx::load(p).ok())
        .find(|d| !d.comments.is_empty())
        .expect("an example output with comments");
    let ids: Vec<String> = with_comments.comments.iter().map(|c| c.id.clone()).collect();
    let json = serde_json::to_vec(&Model::Document(Box::new(with_comments))).unwrap();
    let Ok(Model::Document(back)) = wire::decode(json) else { panic!("a document") };
    for id in ids {
        assert_eq!(back.comment(&id).map(|c| c.id.as_str()), Some(id.as_str()));
    }
}

#[test]
fn a_shared_text_is_held_once_after_the_way_back() {
    let mut book = xlsx::Workbook::default();
    let mut sheet = xlsx::Sheet { name: "S".into(), ..Default::default() };
    let text: std::sync::Arc<str> = "the same long text".into();
    for r in 1..=100 {
        sheet.cells.insert((r, 1), xlsx::Cell::Text(text.clone()));
    }
    book.sheets.push(sheet);
    let json = serde_json::to_vec(&Model::Workbook(book)).unwrap();
    let Ok(Model::Workbook(back)) = wire::decode(json) else { panic!("a workbook") };
    let cells: Vec<_> = back.sheets[0].cells.values().collect();
    let (xlsx::Cell::Text(a), xlsx::Cell::Text(b)) = (cells[0], cells[99]) else { panic!() };
    assert!(std::sync::Arc::ptr_eq(a, b), "one allocation for one shared text");
}

#[test]
fn nesting_as_deep_as_a_document_may_decodes() {
    // 600 levels of JSON nesting: deeper than serde_json's default guard.
    let mut json = String::new();
    for _ in 0..600 {
        json.push_str("{\"model\":\"refused\",\"read\":");
    }
    // Not a model: decoding says so, as a reason, without overflowing.
    match wire::decode(json.into_bytes()) {
        Err(Failure::Crashed { how }) => assert!(how.contains("cannot be read"), "{how}"),
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn each_bound_has_a_reason_a_person_can_act_on() {
    let b = Bounds::default();
    expect_test::expect![[r#"
        the reader needed more than 256 MB to read this file (a file made to cost memory, or one larger than redjury reads)
        the reader took longer than 5 s to read this file (a file made to cost time)
        the reader crashed on this file (stack overflow)"#]]
    .assert_eq(
        &[
            Failure::Memory { limit_bytes: b.memory_bytes },
            Failure::Time { limit: b.wall },
            Failure::Crashed { how: "stack overflow".into() },
        ]
        .map(|f| f.to_string())
        .join("\n"),
    );
}
