//! The binary end to end against mock judges: panels pointing at them,
//! stand-in judges answering from the gold verdicts, and readers of a
//! results folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;

use super::mock::*;

pub use super::{Scratch, root, temp_dir};

/// Gold verdicts: task → output kind (gold, strong, weak) → rubric → verdict.
pub fn gold_verdicts() -> BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root().join("gold/verdicts")).expect("gold/verdicts").flatten() {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(entry.path()).expect("read"))
            .expect("json");
        let task = v["task_id"].as_str().expect("task_id").to_string();
        let mut kinds = BTreeMap::new();
        for (kind, rubrics) in v["outputs"].as_object().expect("outputs") {
            let m = rubrics
                .as_object()
                .expect("rubrics")
                .iter()
                .map(|(id, r)| (id.clone(), r["verdict"].as_str().expect("verdict").to_string()))
                .collect();
            kinds.insert(kind.clone(), m);
        }
        out.insert(task, kinds);
    }
    out
}

/// A mock judge that answers as the attorney did for `kind` outputs: it
/// finds the task in the view's title and looks its verdicts up.
pub fn stand_in(provider: &'static str, kind: &'static str) -> Handler {
    stand_in_flipping(provider, kind, |_, _| false)
}

/// A stand-in judge that gives the opposite of the attorney's verdict on
/// the (task, rubric) pairs `flip` picks: planted disagreement, the same
/// on every call whatever else the prompt asks.
pub fn stand_in_flipping(
    provider: &'static str,
    kind: &'static str,
    flip: fn(&str, &str) -> bool,
) -> Handler {
    let verdicts = Arc::new(gold_verdicts());
    Arc::new(move |req: &Recorded, _| {
        let body = req.body.replace("\\n", "\n");
        // The task's name heads the view ("# Annotated redline: <task>" or "# <task>").
        let doc = body.split("BEGIN DOCUMENT ").nth(2).unwrap_or("");
        let task = doc
            .split("redline-")
            .nth(1)
            .map(|s| {
                format!(
                    "redline-{}",
                    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                        .next()
                        .unwrap_or("")
                )
            })
            .unwrap_or_default();
        let table = verdicts.get(&task).and_then(|k| k.get(kind)).cloned().unwrap_or_default();
        let ids = req.rubric_ids();
        let text = verdicts_json(&ids, &|id| {
            let pass = table.get(id).map(String::as_str) == Some("PASS");
            if pass != flip(&task, id) { "PASS" } else { "FAIL" }
        });
        ok(success_body(provider, &text))
    })
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A stand-in's `flip` for claude: it departs from the attorney on 1 in 12
/// (task, rubric) pairs.
pub fn claude_flips(task: &str, rubric: &str) -> bool {
    fnv(&format!("{task}/{rubric}/claude")).is_multiple_of(12)
}

/// Gemini's: a different 1 in 12.
pub fn gemini_flips(task: &str, rubric: &str) -> bool {
    fnv(&format!("{task}/{rubric}/gemini")).is_multiple_of(12)
}

/// `score` of the gold redlines with `panel` into `dir/out`, its cache
/// `dir/cache`, priced by `dir/prices.toml`.
pub async fn score_priced(
    dir: &Path,
    panel: &Path,
    out: &str,
    cache: &str,
) -> (i32, String, String) {
    let mut a = score_args("gold/redlines", panel, &dir.join(out), &dir.join(cache));
    a.extend(args(&["--prices", &dir.join("prices.toml").display().to_string()]));
    redjury(a, true).await
}

pub struct Judges {
    pub openai: MockServer,
    pub anthropic: MockServer,
    pub gemini: MockServer,
}

impl Judges {
    pub async fn start(kind: &'static str) -> Judges {
        Judges {
            openai: MockServer::start(stand_in("openai", kind)).await,
            anthropic: MockServer::start(stand_in("anthropic", kind)).await,
            gemini: MockServer::start(stand_in("gemini", kind)).await,
        }
    }

    /// Judges answering through `handlers` (openai, anthropic, gemini).
    pub async fn with(handlers: [Handler; 3]) -> Judges {
        let [o, a, g] = handlers;
        Judges {
            openai: MockServer::start(o).await,
            anthropic: MockServer::start(a).await,
            gemini: MockServer::start(g).await,
        }
    }

    /// `panel`, with `vote` (lines of `[vote]`) after the quorum.
    pub fn panel_voting(&self, dir: &Path, gemini_model: &str, vote: &str) -> PathBuf {
        let panel = self.panel(dir, gemini_model);
        let text = std::fs::read_to_string(&panel).expect("read panel");
        let text = text.replace("[vote]\nquorum = 2", &format!("[vote]\nquorum = 2\n{vote}"));
        std::fs::write(&panel, text).expect("write panel");
        panel
    }

    pub fn panel(&self, dir: &Path, gemini_model: &str) -> PathBuf {
        let judge = |name: &str, provider: &str, url: String, model: &str, env: &str| {
            format!(
                "[[judge]]\nname = \"{name}\"\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{url}\"\napi_key_env = \"{env}\"\nrpm = 6000\ntpm = 10000000\nmax_concurrency = 8\ntimeout_secs = 10\nmax_attempts = 3\nretry_base_ms = 10\n\n"
            )
        };
        let text = format!(
            "[vote]\nquorum = 2\n\n{}{}{}",
            judge(
                "gpt",
                "openai",
                format!("{}/v1", self.openai.url()),
                "gpt-test",
                "E2E_OPENAI_KEY"
            ),
            judge("claude", "anthropic", self.anthropic.url(), "claude-test", "E2E_ANTHROPIC_KEY"),
            judge("gemini", "gemini", self.gemini.url(), gemini_model, "E2E_GEMINI_KEY"),
        );
        let path = dir.join(format!("panel-{gemini_model}.toml"));
        std::fs::write(&path, text).expect("write panel");
        path
    }

    pub fn counts(&self) -> [usize; 3] {
        [
            self.openai.requests().len(),
            self.anthropic.requests().len(),
            self.gemini.requests().len(),
        ]
    }
}

pub async fn redjury(args: Vec<String>, keys: bool) -> (i32, String, String) {
    redjury_at(&root(), args, keys).await
}

/// Runs the binary in `dir`; `keys` sets the three E2E key variables.
pub async fn redjury_at(dir: &Path, args: Vec<String>, keys: bool) -> (i32, String, String) {
    let keys: &[&str] =
        if keys { &["E2E_OPENAI_KEY", "E2E_ANTHROPIC_KEY", "E2E_GEMINI_KEY"] } else { &[] };
    redjury_with(dir, args, keys).await
}

/// Runs the binary in `dir` with a key in each of `keys` (the other E2E
/// key variables unset).
pub async fn redjury_with(dir: &Path, args: Vec<String>, keys: &[&str]) -> (i32, String, String) {
    let dir = dir.to_path_buf();
    let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_redjury"));
        cmd.args(&args).current_dir(&dir).env_remove("RUST_LOG");
        for k in ["E2E_OPENAI_KEY", "E2E_ANTHROPIC_KEY", "E2E_GEMINI_KEY"] {
            if keys.iter().any(|x| x == k) {
                cmd.env(k, "sk-e2e-secret");
            } else {
                cmd.env_remove(k);
            }
        }
        let out = cmd.output().expect("run redjury");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    })
    .await
    .expect("join")
}

/// Strings for a command line.
pub fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

pub fn score_args(outputs: &str, panel: &Path, out: &Path, cache: &Path) -> Vec<String> {
    [
        "score",
        "--tasks",
        "rubrics",
        "--outputs",
        outputs,
        "--panel",
        &panel.display().to_string(),
        "--out",
        &out.display().to_string(),
        "--cache",
        &cache.display().to_string(),
        "--quiet",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

pub fn summary(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"))
        .expect("json")
}

pub fn results(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("results.jsonl"))
        .expect("results.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// A dry run (no key, no judge called) of the example's tasks over
/// `outputs`, into `dir/run`; its cache is `dir/c.sqlite`.
pub async fn dry_run(outputs: &str, dir: &Path) -> PathBuf {
    let run = dir.join("run");
    let a = args(&[
        "score",
        "--tasks",
        "rubrics",
        "--outputs",
        outputs,
        "--out",
        &run.display().to_string(),
        "--cache",
        &dir.join("c.sqlite").display().to_string(),
        "--dry-run",
        "--quiet",
    ]);
    let (code, out, err) = redjury(a, false).await;
    assert_eq!(code, 0, "{out}{err}");
    run
}
