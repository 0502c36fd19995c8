//! The bundled example benchmark: every file renders, every output meant to
//! pass the gate passes it, and every output meant to fail it fails with
//! the reason a user would expect.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::path::{Path, PathBuf};

use redjury::check::gate::check_against;
use redjury::docx;
use redjury::view::{self, ViewKind};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn docx_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            docx_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "docx") {
            out.push(p);
        }
    }
}

#[test]
fn every_example_file_renders_in_every_view() {
    let mut files = Vec::new();
    docx_files(&root().join("scenarios"), &mut files);
    docx_files(&root().join("gold"), &mut files);
    assert!(files.len() >= 48, "only {} example files", files.len());
    for f in &files {
        let doc = docx::load(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(doc.warnings.is_empty(), "{}: {:?}", f.display(), doc.warnings);
        for kind in [ViewKind::Annotated, ViewKind::Accepted, ViewKind::Rejected, ViewKind::Json] {
            assert!(!view::render(&doc, kind, "x").trim().is_empty(), "{} {kind:?}", f.display());
        }
        // Every base contract is auto-numbered: labels come from numbering.xml.
        if f.ends_with("base.docx") {
            let mut labels = 0;
            doc.for_each_body_paragraph(&mut |p| labels += usize::from(p.label.accepted.is_some()));
            assert!(labels >= 30, "{}: {labels} numbered paragraphs", f.display());
        }
    }
}

#[test]
fn the_gate_on_every_sample_output() {
    let tasks = redjury::task::load_tasks(&root().join("rubrics")).expect("tasks");
    for task in &tasks {
        for folder in ["gold/redlines", "scenarios/outputs/strong", "scenarios/outputs/weak"] {
            let path = root().join(folder).join(format!("{}.docx", task.name));
            let r = check_against(&docx::load(&path), &task.author, task.input_doc.as_deref());
            assert!(r.passed, "{folder}/{}: {}", task.name, r.reason);
        }
        let failing =
            root().join("scenarios/outputs/gate-fail").join(format!("{}.docx", task.name));
        if failing.exists() {
            let r = check_against(&docx::load(&failing), &task.author, task.input_doc.as_deref());
            assert!(!r.passed, "gate-fail/{} passed: {}", task.name, r.reason);
            assert!(
                r.reason.starts_with("no tracked change or comment")
                    || r.reason.starts_with("no new tracked change"),
                "{}",
                r.reason
            );
        }
    }
}
