//! The architecture invariant "data flows one way": a module may use only
//! the vocabulary modules and the stages before it (ARCHITECTURE.md). This
//! test reads every `crate::` path in `src/` and fails on an edge that
//! points back up the pipeline, naming the file and the line.
use std::path::{Path, PathBuf};

/// Modules any stage may use; they use none of the crate themselves.
const VOCABULARY: &[&str] = &["calendar", "hash", "verdict"];

/// The stages in data-flow order.
const STAGES: &[&str] = &[
    "docx",
    "xlsx",
    "view",
    "task",
    "check",
    "prompt",
    "cache",
    "judge",
    "panel",
    "score",
    "aggregate",
    "report",
    "pipeline",
    "serve",
    "calibrate",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file belongs to (`src/judge/http.rs` → judge).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let first =
        rel.components().next().expect("non-empty").as_os_str().to_string_lossy().into_owned();
    first.trim_end_matches(".rs").to_string()
}

/// Modules named by `crate::X` paths in a line (comments skipped).
fn crate_refs(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut refs = Vec::new();
    for (i, _) in code.match_indices("crate::") {
        // `redjury::` paths live only in the binary and tests; `super::crate` is not a thing.
        let before = &code[..i];
        if before.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[i + "crate::".len()..];
        if let Some(rest) = rest.strip_prefix('{') {
            refs.extend(
                group_items(rest)
                    .iter()
                    .map(|p| p.trim().split("::").next().unwrap_or("").trim().to_string()),
            );
        } else {
            refs.push(
                rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
                    .to_string(),
            );
        }
    }
    refs.retain(|r| !r.is_empty() && r != "self");
    refs
}

/// The top-level items of a `{…}` group (the text after its `{`), nested
/// groups kept whole: `docx::{A, B}, view}` → ["docx::{A, B}", " view"].
fn group_items(rest: &str) -> Vec<String> {
    let (mut items, mut item, mut depth) = (Vec::new(), String::new(), 0usize);
    for c in rest.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut item));
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    items.push(item);
    items
}

/// The file as statements a reader can scan line by line: a `use` group
/// spread over several lines is joined onto its first line (whose number
/// it keeps), so `use crate::{\n    docx,\n    view,\n};` is seen whole.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = 0i64;
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        if open > 0 {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(code);
            }
        } else {
            out.push((n, code.to_string()));
        }
        if open > 0 || code.contains("crate::{") {
            open += code.matches('{').count() as i64 - code.matches('}').count() as i64;
            open = open.max(0);
        }
    }
    out
}

#[test]
fn data_flows_one_way() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let rank = |m: &str| STAGES.iter().position(|s| *s == m);
    let mut wrong = Vec::new();
    for file in &files {
        let from = module_of(&src, file);
        if matches!(from.as_str(), "lib" | "main" | "cli") {
            continue; // the crate root and the binary may use everything
        }
        let text = std::fs::read_to_string(file).expect("source is UTF-8");
        for (n, line) in logical_lines(&text) {
            for to in crate_refs(&line) {
                if to == from {
                    continue;
                }
                let ok = if VOCABULARY.contains(&from.as_str()) {
                    false
                } else if VOCABULARY.contains(&to.as_str()) {
                    true
                } else {
                    match (rank(&from), rank(&to)) {
                        (Some(a), Some(b)) => b < a,
                        _ => false,
                    }
                };
                if !ok {
                    wrong.push(format!(
                        "{}:{}: {from} uses {to}",
                        file.strip_prefix(&src).unwrap_or(file).display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "edges against the data flow (see ARCHITECTURE.md):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_reader_finds_every_form_of_path() {
    assert_eq!(crate_refs("use crate::docx::{Block, Document};"), ["docx"]);
    assert_eq!(crate_refs("use crate::{docx, view};"), ["docx", "view"]);
    assert_eq!(crate_refs("    let x = crate::hash::sha256_hex(&s); // crate::run"), ["hash"]);
    assert_eq!(crate_refs("use redjury::crate_like::x;"), Vec::<String>::new());
    assert_eq!(crate_refs("use crate::{docx::{Block, Document}, view};"), ["docx", "view"]);
    let spread =
        "use crate::{\n    docx::{Block,\n        Document},\n    report, // later\n};\nfn f() {}";
    let lines = logical_lines(spread);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(crate_refs(&lines[0].1), ["docx", "report"]);
}
