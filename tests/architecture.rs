//! The architecture invariant "data flows one way" (ARCHITECTURE.md): every
//! edge between the library's top-level modules must be in [`ALLOWED`].
//!
//! The reader works on the source with comments and string literals
//! blanked out, so a path in a URL or a comment is not an edge; it
//! resolves `crate::`, `super::` chains (from the file's place and the
//! inline modules it is in) and `self::` to the top-level module they
//! name; and it refuses what would hide an edge from it: `use crate as`,
//! `extern crate self`, and `super` beyond the crate root.
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The readers (crates/readers, re-exported at the crate root) and the
/// vocabulary any module may use; the vocabulary uses no module itself.
const EVERYONE_MAY_USE: &[&str] =
    &["docx", "xlsx", "pdf", "calendar", "isolated", "hash", "verdict"];

/// Every edge the data flow allows, module by module: a stage uses only
/// stages to its left (readers → view → task → check / prompt → cache →
/// judge → panel → score → aggregate → report → pipeline → serve,
/// calibrate → commands), and only where it needs them.
const ALLOWED: &[(&str, &[&str])] = &[
    ("hash", &[]),
    ("verdict", &[]),
    ("view", &[]),
    ("task", &[]),
    ("check", &["task", "view"]),
    ("prompt", &["task", "view"]),
    ("cache", &["prompt"]),
    ("judge", &["cache", "prompt"]),
    ("panel", &[]),
    ("score", &["check", "task"]),
    // `judge`: the counters that cost is computed from.
    ("aggregate", &["check", "judge", "score", "task"]),
    // `judge`: the counters and observed limits a summary carries.
    ("report", &["aggregate", "check", "judge", "prompt", "score", "task"]),
    (
        "pipeline",
        &[
            "aggregate",
            "cache",
            "check",
            "judge",
            "panel",
            "prompt",
            "report",
            "score",
            "task",
            "view",
        ],
    ),
    ("serve", &["aggregate", "check", "judge", "pipeline", "report", "score", "task"]),
    (
        "calibrate",
        &["aggregate", "judge", "panel", "pipeline", "prompt", "report", "score", "task"],
    ),
    (
        "commands",
        &[
            "aggregate",
            "cache",
            "calibrate",
            "check",
            "judge",
            "pipeline",
            "prompt",
            "report",
            "serve",
            "task",
            "view",
        ],
    ),
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

/// The module path of a file: `src/judge/http.rs` → [judge, http],
/// `src/judge/mod.rs` → [judge], `src/lib.rs` → [].
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> =
        rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let last = parts.pop().unwrap_or_default();
    match last.trim_end_matches(".rs") {
        "mod" | "lib" | "main" => {}
        name => parts.push(name.to_string()),
    }
    parts
}

/// The source with comments, string literals and character literals
/// replaced by spaces (newlines kept, so line numbers stay true).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&chars, i) {
            (i..end).for_each(|k| out.push(blank(chars[k])));
            i = end;
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let skip = if chars[i] == '\\' { 2 } else { 1 };
                (i..(i + skip).min(chars.len())).for_each(|k| out.push(blank(chars[k])));
                i += skip;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && is_char_literal(&chars, i) {
            let end = (i + 1..chars.len()).find(|&k| chars[k] == '\'' && chars[k - 1] != '\\');
            let end = end.map_or(chars.len(), |e| e + 1);
            (i..end).for_each(|k| out.push(blank(chars[k])));
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where a raw string (`r"…"`, `r#"…"#`, `br#"…"#`) starting at `i` ends.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if !starts_word || chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|c| **c == '#').count();
    j += hashes;
    if chars.get(j) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    (j + 1..chars.len()).find(|&k| chars[k..].starts_with(&close)).map(|k| k + close.len())
}

/// A `'` that opens a character literal ('a', '\n', '\u{1F600}'), not a
/// lifetime or a label.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!((chars.get(i + 1), chars.get(i + 2)), (Some('\\'), _) | (Some(_), Some('\'')))
}

/// Inline `mod name {` blocks: for each byte offset of `code`, the inline
/// modules it is inside.
fn inline_modules(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut marks = vec![(0, Vec::new())];
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => {
                depth += 1;
                let before = code[..i].trim_end();
                let words: Vec<&str> = before.rsplit(char::is_whitespace).take(2).collect();
                if let [name, "mod"] = words.as_slice() {
                    stack.push((name.to_string(), depth));
                    marks.push((i, stack.iter().map(|(n, _)| n.clone()).collect()));
                }
            }
            b'}' => {
                if stack.last().is_some_and(|(_, d)| *d == depth) {
                    stack.pop();
                    marks.push((i, stack.iter().map(|(n, _)| n.clone()).collect()));
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    marks
}

/// Every path that names a module of the crate, at its byte offset: the
/// words joined by `::` starting with `crate`, `super` or `self`, with
/// `{…}` groups expanded into one path per item.
fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for start in ["crate", "super", "self"] {
        for (i, _) in code.match_indices(start) {
            let before = code[..i].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[i + start.len()..];
            let after = rest.trim_start();
            if !after.starts_with("::") {
                continue;
            }
            let _ = bytes;
            for tail in expand(after.trim_start_matches("::")) {
                let mut path = vec![start.to_string()];
                path.extend(tail);
                found.push((i, path));
            }
        }
    }
    found
}

/// `a::b::{c, d::{e}}, …` → [[a, b, c], [a, b, d, e]]: the words of a path
/// and of each item of its groups.
fn expand(text: &str) -> Vec<Vec<String>> {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        return group_items(group).iter().flat_map(|item| expand(item)).collect();
    }
    let word: String = text.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if word.is_empty() {
        return vec![Vec::new()];
    }
    let rest = text[word.len()..].trim_start();
    match rest.strip_prefix("::") {
        Some(more) => expand(more)
            .into_iter()
            .map(|t| std::iter::once(word.clone()).chain(t).collect())
            .collect(),
        None => vec![vec![word]],
    }
}

/// The top-level items of a `{…}` group (the text after its `{`).
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

/// The top-level module a path names from module `here`, or why it
/// cannot be resolved.
fn resolve(here: &[String], path: &[String]) -> Result<Option<String>, String> {
    let mut base: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        _ => here.to_vec(),
    };
    let mut words = path.iter().skip(1).peekable();
    if path.first().map(String::as_str) == Some("super") {
        if base.pop().is_none() {
            return Err("`super` beyond the crate root".into());
        }
        while words.peek().map(|w| w.as_str()) == Some("super") {
            words.next();
            if base.pop().is_none() {
                return Err("`super` beyond the crate root".into());
            }
        }
    }
    Ok(match base.first() {
        Some(top) => Some(top.clone()),
        None => words.next().filter(|w| w.as_str() != "self").cloned(),
    })
}

/// Every edge `file` makes to another top-level module, with its line, and
/// every construct that would hide one.
fn edges(src: &Path, file: &Path, text: &str) -> (Vec<(usize, String)>, Vec<String>) {
    let code = code_only(text);
    let here = module_path(src, file);
    let from = here.first().cloned().unwrap_or_default();
    let line_of = |offset: usize| code[..offset].matches('\n').count() + 1;
    let name = file.strip_prefix(src).unwrap_or(file).display().to_string();
    let mut refused = Vec::new();
    for hidden in ["crate as", "extern crate self", "crate::self as"] {
        for (i, _) in code.match_indices(hidden) {
            refused.push(format!("{name}:{}: `{hidden}` hides edges from this test", line_of(i)));
        }
    }
    let marks = inline_modules(&code);
    let mut out = Vec::new();
    for (offset, path) in paths(&code) {
        let inline = marks.iter().rev().find(|(at, _)| *at <= offset).map(|(_, m)| m.clone());
        let mut scope = here.clone();
        scope.extend(inline.unwrap_or_default());
        match resolve(&scope, &path) {
            Ok(Some(to)) if to != from => out.push((line_of(offset), to)),
            Ok(_) => {}
            Err(why) => refused.push(format!("{name}:{}: {why}", line_of(offset))),
        }
    }
    (out, refused)
}

/// Every edge against [`ALLOWED`], and every construct that hides one.
fn check_source(src: &Path, files: &[(PathBuf, String)]) -> Vec<String> {
    let allowed: BTreeMap<&str, BTreeSet<&str>> =
        ALLOWED.iter().map(|(m, to)| (*m, to.iter().copied().collect())).collect();
    let mut wrong = Vec::new();
    for (file, text) in files {
        let from = module_path(src, file).first().cloned().unwrap_or_default();
        let (found, refused) = edges(src, file, text);
        wrong.extend(refused);
        if from.is_empty() || from == "cli" {
            continue; // the crate root declares and re-exports; the binary uses the root
        }
        let name = file.strip_prefix(src).unwrap_or(file).display();
        let Some(may) = allowed.get(from.as_str()) else {
            wrong.push(format!("{name}: module {from} is not in the table of allowed edges"));
            continue;
        };
        for (line, to) in found {
            let vocabulary = EVERYONE_MAY_USE.contains(&to.as_str())
                && !EVERYONE_MAY_USE.contains(&from.as_str());
            if !vocabulary && !may.contains(to.as_str()) {
                wrong.push(format!("{name}:{line}: {from} uses {to}"));
            }
        }
    }
    wrong
}

/// Allowed edges no file makes: a stale allowance would let the next edge
/// through unseen.
fn stale(files_edges: &BTreeSet<(String, String)>) -> Vec<String> {
    ALLOWED
        .iter()
        .flat_map(|(from, tos)| tos.iter().map(move |to| (from.to_string(), to.to_string())))
        .filter(|edge| !files_edges.contains(edge))
        .map(|(from, to)| format!("{from} may use {to}, but does not: drop it from ALLOWED"))
        .collect()
}

#[test]
fn data_flows_one_way() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: Vec<(PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("source is UTF-8");
            (p, text)
        })
        .collect();
    let mut wrong = check_source(&src, &files);
    let mut made = BTreeSet::new();
    for (file, text) in &files {
        let from = module_path(&src, file).first().cloned().unwrap_or_default();
        made.extend(edges(&src, file, text).0.into_iter().map(|(_, to)| (from.clone(), to)));
    }
    wrong.extend(stale(&made));
    assert!(
        wrong.is_empty(),
        "edges against the data flow (see ARCHITECTURE.md):\n{}",
        wrong.join("\n")
    );
}

/// The four ways an edge used to slip past the test, and the forms a real
/// edge takes.
#[test]
fn the_reader_cannot_be_fooled() {
    let src = Path::new("/src");
    let check = |file: &str, text: &str| check_source(src, &[(src.join(file), text.to_string())]);
    // `use super::report::utc` from a top-level mod.rs.
    assert_eq!(check("pipeline/mod.rs", "use super::report::utc;"), Vec::<String>::new());
    assert_eq!(
        check("judge/mod.rs", "use super::report::utc;"),
        ["judge/mod.rs:1: judge uses report"]
    );
    // `super::super::pipeline::Scorer` from two levels down.
    assert_eq!(
        check("report/html/mod.rs", "fn f() { super::super::pipeline::Scorer::new(); }"),
        ["report/html/mod.rs:1: report uses pipeline"]
    );
    // `use crate as root; root::serve::…`.
    assert_eq!(
        check("view/mod.rs", "use crate as root;\nfn f() { root::serve::x(); }"),
        ["view/mod.rs:1: `crate as` hides edges from this test"]
    );
    // A `crate::` path after a URL on the same line.
    assert_eq!(
        check("task/mod.rs", "let u = \"http://x\"; let s = crate::serve::X;"),
        ["task/mod.rs:1: task uses serve"]
    );
    // Groups, nesting, inline modules, and what is not an edge.
    assert_eq!(
        check("check/mod.rs", "use crate::{task::{A, B}, judge::C};"),
        ["check/mod.rs:1: check uses judge"]
    );
    assert_eq!(
        check("check/text.rs", "mod tests {\n    use super::super::super::super::judge;\n}"),
        ["check/text.rs:2: `super` beyond the crate root"]
    );
    assert_eq!(
        check("check/text.rs", "mod tests {\n    use super::super::gate;\n}"),
        Vec::<String>::new()
    );
    assert_eq!(
        check("check/text.rs", "mod tests {\n    use super::super::super::judge;\n}"),
        ["check/text.rs:2: check uses judge"]
    );
    assert_eq!(
        check(
            "check/mod.rs",
            "// crate::judge\nlet s = \"crate::judge\"; let r = r#\"crate::judge\"#;"
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        check("view/mod.rs", "let c = '\"'; let d = crate::judge::X;"),
        ["view/mod.rs:1: view uses judge"]
    );
    assert_eq!(check("hash.rs", "use crate::verdict::Verdict;"), ["hash.rs:1: hash uses verdict"]);
}
