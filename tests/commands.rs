//! Every command line README.md and docs/*.md show, as written: the
//! `redjury` commands in code blocks (and inline ones that name the
//! example's folders) run in a sandbox that holds the repository's
//! folders, with only paths and ports changed; synopses (`DIR`, `[…]`)
//! name only flags and values the binary has; `cargo` lines name targets
//! that exist. (`redjury report results/example --html` failed as written,
//! and the `render` synopsis lacked `--view reference`.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::e2e::*;
use crate::common::served::Served;

/// One command line, where it is written.
#[derive(Debug, Clone)]
struct Line {
    file: String,
    line: usize,
    words: Vec<String>,
    /// From a code block (meant to be run) or inline.
    block: bool,
}

impl Line {
    fn at(&self) -> String {
        format!("{}:{}: {}", self.file, self.line, self.words.join(" "))
    }
}

/// The documents the rule covers: the README and every page of docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

/// Shell words, with single and double quotes.
fn words(text: &str) -> Vec<String> {
    let (mut out, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in text.chars() {
        match (quote, c) {
            (None, '\'' | '"') => (quote, any) = (Some(c), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => (word, any) = (word + &c.to_string(), true),
        }
    }
    if any {
        out.push(word);
    }
    out
}

/// Every command line of `file`: code-block lines (continued with `\`,
/// comments after `#` dropped) and inline spans.
fn lines_of(file: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(file).unwrap();
    let name = file.strip_prefix(root()).unwrap_or(file).display().to_string();
    let mut out = Vec::new();
    let (mut in_block, mut shell, mut pending): (bool, bool, Option<(usize, String)>) =
        (false, false, None);
    for (i, raw) in text.lines().enumerate() {
        if let Some(fence) = raw.trim_start().strip_prefix("```") {
            (in_block, shell) = (!in_block, !in_block && matches!(fence.trim(), "sh" | "bash"));
            continue;
        }
        if in_block && shell {
            let code = raw.split("  #").next().unwrap_or("").trim_end();
            let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
            joined.push_str(code.trim_end_matches('\\'));
            joined.push(' ');
            if code.ends_with('\\') {
                pending = Some((start, joined));
            } else if !joined.trim().is_empty() {
                out.push(Line {
                    file: name.clone(),
                    line: start,
                    words: words(&joined),
                    block: true,
                });
            }
        } else if !in_block {
            for span in raw.split('`').skip(1).step_by(2) {
                // `REDJURY_SHOW_CALIBRATION=1 cargo test …`: the command after
                // its variables.
                let w: Vec<String> = words(span)
                    .into_iter()
                    .skip_while(|w| {
                        w.split_once('=').is_some_and(|(k, _)| {
                            k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                        })
                    })
                    .collect();
                let command = w.first().map(String::as_str);
                if matches!(command, Some("redjury" | "cargo")) && w.len() > 1 {
                    out.push(Line { file: name.clone(), line: i + 1, words: w, block: false });
                }
            }
        }
    }
    out
}

/// A synopsis, not a command: a placeholder (`DIR`, `FILE.xlsx`) or an
/// option list (`[--seed N]`, `…`).
fn is_synopsis(line: &Line) -> bool {
    line.words.iter().any(|w| {
        w.contains('[') || w.contains('…') || w.contains("...") || {
            let stem = w.split('.').next().unwrap_or(w);
            stem.len() > 1 && stem.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        }
    })
}

/// The binary's help for a subcommand.
fn help(sub: &str) -> String {
    // The short help lists each flag's values on its line.
    let out = Command::new(env!("CARGO_BIN_EXE_redjury")).args([sub, "-h"]).output().unwrap();
    assert!(out.status.success(), "redjury {sub} -h");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The values a flag takes, as its help lists them.
fn possible_values(help: &str, flag: &str) -> Option<BTreeSet<String>> {
    let at = help.find(&format!("{flag} "))?;
    let rest = help.get(at..)?;
    let list = rest.split("[possible values: ").nth(1)?.split(']').next()?;
    // Where the next flag's line starts ("  -q, --quiet" or "      --cache").
    let next_flag = rest
        .match_indices('\n')
        .map(|(i, _)| i)
        .find(|&i| rest.get(i + 1..).is_some_and(|l| l.trim_start().starts_with('-')))
        .unwrap_or(usize::MAX);
    (rest.find("[possible values: ")? < next_flag)
        .then(|| list.split(", ").map(str::to_string).collect())
}

/// Every `--flag` a synopsis names is one the subcommand has, and a value
/// list (`a|b|c`) is exactly the flag's.
fn check_synopsis(line: &Line, helps: &mut std::collections::BTreeMap<String, String>) {
    let Some(sub) = line.words.get(1).filter(|s| !s.starts_with('-')) else { return };
    let text = helps.entry(sub.clone()).or_insert_with(|| help(sub));
    for (i, w) in line.words.iter().enumerate() {
        let flag = w.trim_start_matches('[').trim_end_matches([']', ',']);
        let flag = flag.split('=').next().unwrap_or(flag);
        if !flag.starts_with("--") || flag.len() < 3 {
            continue;
        }
        assert!(
            text.contains(&format!("{flag} ")) || text.contains(&format!("{flag}\n")),
            "{}: redjury {sub} has no {flag}",
            line.at()
        );
        let value = line.words.get(i + 1).map(|v| v.trim_matches(['[', ']']));
        if let Some(v) = value.filter(|v| v.contains('|') && !v.starts_with('-')) {
            let shown: BTreeSet<String> = v.split('|').map(str::to_string).collect();
            // A flag that also takes a free value (`error|null|VALUE`)
            // lists no closed set to compare with.
            if let Some(have) = possible_values(text, flag) {
                assert_eq!(shown, have, "{}: the values of {flag}", line.at());
            }
        }
    }
}

/// A `cargo` line names a test target, a bench and a test filter that exist.
fn check_cargo(line: &Line) {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for pair in line.words.windows(2) {
        if matches!(pair[0].as_str(), "--test" | "--bench") {
            assert!(
                manifest.contains(&format!("name = \"{}\"", pair[1])),
                "{}: no {} target {}",
                line.at(),
                pair[0],
                pair[1]
            );
        }
    }
}

/// A folder holding what the README's commands expect in the current
/// folder (links to the repository's), and the default panel pointed at
/// local mock judges that need no key.
fn sandbox(dir: &Path, judges: &Judges) {
    for name in ["rubrics", "scenarios", "gold", "prompts", "prices.toml"] {
        std::os::unix::fs::symlink(root().join(name), dir.join(name)).unwrap();
    }
    let panel = std::fs::read_to_string(root().join("panel.toml"))
        .unwrap()
        .replace("https://api.openai.com/v1", &format!("{}/v1", judges.openai.url()))
        .replace("https://api.anthropic.com", &judges.anthropic.url())
        .replace("https://generativelanguage.googleapis.com", &judges.gemini.url())
        .replace("timeout_secs = 180", "timeout_secs = 10\napi_key_env = \"\"")
        .replace("rpm = 50\n", "rpm = 60000\n")
        .replace("rpm = 150\n", "rpm = 60000\n")
        .replace("rpm = 500\n", "rpm = 60000\n")
        .replace("tpm = 50000\n", "tpm = 100000000\n")
        .replace("tpm = 200000\n", "tpm = 100000000\n")
        .replace("tpm = 1000000\n", "tpm = 100000000\n");
    std::fs::write(dir.join("panel.toml"), panel).unwrap();
}

/// The words as the sandbox runs them: `cargo run --release --` is the
/// built binary, and absolute folders the command names (`/rollouts`) are
/// made inside the sandbox.
fn as_run(line: &Line, dir: &Path) -> Vec<String> {
    let mut w = line.words.clone();
    if w.starts_with(&["cargo".into(), "run".into(), "--release".into(), "--".into()]) {
        w.drain(..4);
        w.insert(0, "redjury".into());
    }
    w.into_iter()
        .skip(1)
        .map(|a| match a.strip_prefix("/rollouts") {
            Some(rest) => format!("{}{rest}", dir.join("rollouts").display()),
            None => a,
        })
        .collect()
}

/// A command the sandbox runs: a `redjury` line from a code block, or an
/// inline one that names the example's folders.
fn runnable(line: &Line) -> bool {
    let redjury = line.words.first().is_some_and(|w| w == "redjury")
        || line.words.starts_with(&["cargo".into(), "run".into()]);
    let names_the_example = line
        .words
        .iter()
        .any(|w| ["results/", "rubrics", "scenarios/", "gold"].iter().any(|p| w.starts_with(p)));
    redjury && !is_synopsis(line) && (line.block || names_the_example)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_line_the_readme_and_docs_show_runs_as_written() {
    let lines: Vec<Line> = documents().iter().flat_map(|d| lines_of(d)).collect();
    assert!(lines.len() > 30, "found {} command lines", lines.len());
    let judges = Judges::start("strong").await;
    let dir = temp_dir("commands");
    sandbox(&dir, &judges);
    let mut helps = std::collections::BTreeMap::new();
    let mut ran = Vec::new();
    for line in &lines {
        match line.words.first().map(String::as_str) {
            Some("cargo") if line.words.get(1).is_none_or(|w| w != "run") => check_cargo(line),
            _ if runnable(line) => ran.push(run(line, &dir).await),
            Some("redjury") => check_synopsis(line, &mut helps),
            _ => {}
        }
    }
    assert!(ran.len() >= 6, "ran {ran:?}");
    assert!(dir.join("results/example/report.html").is_file(), "`report --html` wrote the report");
}

/// The PostgreSQL store the docs name: a test store of the sandbox's own
/// on the test server stands in for it.
const DOCUMENTED_STORE: &str = "postgres://redjury@db.internal/redjury";

/// Runs one command line in the sandbox; `serve` is started, asked what
/// the page beside it asks (a `curl` line), and stopped.
async fn run(line: &Line, dir: &Path) -> String {
    let mut words = as_run(line, dir);
    if words.iter().any(|w| w == DOCUMENTED_STORE) {
        let Some(store) = crate::common::postgres::store("docs") else {
            return format!("{} (skipped: no PostgreSQL server)", line.at());
        };
        for w in &mut words {
            if w == DOCUMENTED_STORE {
                *w = store.clone();
            }
        }
    }
    if words.first().is_some_and(|w| w == "serve") {
        return serve(line, words, dir).await;
    }
    let started = std::time::Instant::now();
    let (code, out, err) = redjury_at(dir, words, false).await;
    assert!(code == 0 || code == 3, "{}: exit {code}\n{out}{err}", line.at());
    eprintln!("{} took {:?}", line.at(), started.elapsed());
    line.at()
}

async fn serve(line: &Line, mut words: Vec<String>, dir: &Path) -> String {
    let rollout = dir.join("rollouts/17/contract.docx");
    std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
    std::fs::copy(root().join("gold/redlines/redline-s1-t2-g01a.docx"), &rollout).unwrap();
    words.remove(0);
    words.extend(["--bind".to_string(), "127.0.0.1:0".to_string()]);
    let mut served =
        Served::start(dir, &words, &[]).unwrap_or_else(|e| panic!("{}: {e:?}", line.at()));
    let port = served.url.rsplit(':').next().unwrap_or("").to_string();
    // The README's request, with the port the sandbox got.
    let body = format!(r#"{{"task": "redline-s1-t2-g01a", "path": "{}"}}"#, rollout.display());
    let out = Command::new("curl")
        .args(["-s", &format!("localhost:{port}/v1/score"), "-d", &body])
        .output()
        .expect("curl");
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}: {}", line.at(), String::from_utf8_lossy(&out.stdout)));
    assert!(reply["reward"].is_number(), "{}: {reply}", line.at());
    served.term();
    assert_eq!(served.wait(Duration::from_secs(60)), Some(0), "{}", served.stderr());
    line.at()
}

/// `rust-version` says what the locked dependencies need (it said 1.88
/// while rusqlite 0.43 and zip 9.8 need 1.89): no dependency in
/// Cargo.lock asks for a newer Rust than the package declares.
#[test]
fn the_rust_version_covers_the_locked_dependencies() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // The packages this machine builds: others (libredox, for Redox) are
    // never downloaded, and the test makes no network request.
    let rustc = Command::new("rustc").arg("-vV").output().expect("rustc -vV");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc names its host");
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(root())
        .output()
        .expect("cargo metadata");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let version = |v: &str| -> [u32; 3] {
        let mut parts = v.split('.').map(|p| p.parse().unwrap_or(0));
        [0; 3].map(|_| parts.next().unwrap_or(0))
    };
    let packages = meta["packages"].as_array().unwrap();
    let ours = packages.iter().find(|p| p["name"] == "redjury").unwrap();
    let declared = version(ours["rust_version"].as_str().unwrap());
    for p in packages {
        if let Some(needs) = p["rust_version"].as_str() {
            assert!(
                version(needs) <= declared,
                "{} {} needs Rust {needs}; Cargo.toml's rust-version says {}",
                p["name"],
                p["version"],
                ours["rust_version"]
            );
        }
    }
}
