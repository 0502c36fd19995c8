//! The reward service's wire format: what a request may say, how it
//! becomes a task, an output and a trial, and how rows become replies
//! under the `on_incomplete` policy. The fields are documented in
//! docs/serve.md.
//!
//! Owns: request validation (every problem is a 4xx naming the field) and
//! the policy. Must never read a path outside the allowed folders, and
//! never turn a row without a reward into a number the caller did not
//! choose.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::pipeline::OutputSource;
use crate::score::{Status, TaskResult};
use crate::task::{self, Task};

/// What to answer for a row that could not be completed (quorum not met,
/// a judge stopped). A gate failure is never incomplete: it is a real 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OnIncomplete {
    /// Fail the request with 503 and `Retry-After` (the default).
    Error,
    /// Answer `null` for that row's reward.
    Null,
    /// Answer this reward, chosen by the caller, for that row.
    Value(f64),
}

impl FromStr for OnIncomplete {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "error" => Ok(OnIncomplete::Error),
            "null" => Ok(OnIncomplete::Null),
            other => match other.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(OnIncomplete::Value(v)),
                _ => Err(format!(
                    "on_incomplete must be \"error\", \"null\" or a finite number, not {other:?}"
                )),
            },
        }
    }
}

/// A policy as sent in JSON: a string ("error", "null", "0.0") or a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum PolicyField {
    Number(f64),
    Text(String),
}

impl PolicyField {
    fn parse(self) -> Result<OnIncomplete, ApiError> {
        match self {
            PolicyField::Number(v) if v.is_finite() => Ok(OnIncomplete::Value(v)),
            PolicyField::Number(v) => {
                Err(ApiError::bad(format!("on_incomplete {v} is not finite")))
            }
            PolicyField::Text(t) => t.parse().map_err(ApiError::bad),
        }
    }
}

/// One output to score, as `POST /v1/score` takes it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ScoreRequest {
    task: String,
    #[serde(default)]
    task_spec: Option<Value>,
    #[serde(default)]
    docx_base64: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    trial: Option<String>,
    #[serde(default)]
    input_base64: Option<String>,
    #[serde(default)]
    input_path: Option<String>,
    #[serde(default)]
    on_incomplete: Option<PolicyField>,
}

/// Many outputs, as `POST /v1/score/batch` takes them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BatchRequest {
    items: Vec<ScoreRequest>,
    #[serde(default)]
    on_incomplete: Option<PolicyField>,
}

/// OpenRLHF's remote reward-model request. Other keys (forks add
/// `metas`, `datasources`) are ignored; the lists are matched by position.
#[derive(Deserialize)]
pub(super) struct OpenRlhfRequest {
    query: Vec<Value>,
    #[serde(default)]
    labels: Option<Vec<Value>>,
}

/// What an OpenRLHF label names: the task and the rollout's .docx.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Label {
    task: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    docx_base64: Option<String>,
    #[serde(default)]
    trial: Option<String>,
}

/// A request refused, with the status and the message the caller reads.
#[derive(Debug)]
pub(super) struct ApiError {
    pub status: u16,
    pub message: String,
    pub retry_after: Option<u64>,
    /// For a batch larger than the queue: the most outputs one request
    /// may carry (clients split by it).
    pub max_outputs: Option<usize>,
}

impl ApiError {
    pub(super) fn bad(message: impl Into<String>) -> ApiError {
        ApiError { status: 400, message: message.into(), retry_after: None, max_outputs: None }
    }

    fn with_status(status: u16, message: impl Into<String>) -> ApiError {
        ApiError { status, message: message.into(), retry_after: None, max_outputs: None }
    }

    pub(super) fn with_max_outputs(mut self, n: usize) -> ApiError {
        self.max_outputs = Some(n);
        self
    }

    /// The same error about item `i` of a list.
    fn at(mut self, field: &str, i: usize) -> ApiError {
        self.message = format!("{field}[{i}]: {}", self.message);
        self
    }
}

/// Parses a JSON body, naming what is wrong with it.
pub(super) fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad(format!("invalid request body: {e}")))
}

/// One output ready for the pipeline.
pub(super) type Work = (Arc<Task>, OutputSource, String);

/// What requests are resolved against: the loaded tasks and the folders
/// the service may read.
pub(super) struct Resolver {
    pub tasks: std::collections::BTreeMap<String, Arc<Task>>,
    pub tasks_dir: PathBuf,
    /// Folders paths may point into (`--allow-path`).
    pub allowed: Vec<AllowedFolder>,
}

impl ScoreRequest {
    /// The policy this request asks for, if it names one.
    pub(super) fn policy(&mut self) -> Result<Option<OnIncomplete>, ApiError> {
        self.on_incomplete.take().map(PolicyField::parse).transpose()
    }
}

impl BatchRequest {
    /// The items and the policy the batch asks for.
    pub(super) fn split(self) -> Result<(Vec<ScoreRequest>, Option<OnIncomplete>), ApiError> {
        if self.items.is_empty() {
            return Err(ApiError::bad("items is empty: send at least one output"));
        }
        let policy = self.on_incomplete.map(PolicyField::parse).transpose()?;
        Ok((self.items, policy))
    }
}

impl Resolver {
    /// Turns a request into work: the task (loaded or inline), the output's
    /// bytes and the trial. Reads files, so it runs on a blocking thread.
    pub(super) fn resolve(&self, req: ScoreRequest) -> Result<Work, ApiError> {
        if req.on_incomplete.is_some() {
            return Err(ApiError::bad("on_incomplete belongs to the batch, not to an item"));
        }
        let mut task = self.task(&req.task, req.task_spec)?;
        if let Some(bytes) = self.input(req.input_base64, req.input_path)? {
            let mut owned = (*task).clone();
            task::attach_input(&mut owned, bytes).map_err(|e| ApiError::bad(e.to_string()))?;
            task = Arc::new(owned);
        }
        let bytes = self.output(req.docx_base64, req.path)?;
        let trial = trial(req.trial, &bytes)?;
        Ok((task, OutputSource::Bytes(bytes), trial))
    }

    /// Resolves the OpenRLHF request's labels into work, one per query.
    pub(super) fn openrlhf(&self, req: OpenRlhfRequest) -> Result<Vec<Work>, ApiError> {
        let labels = req.labels.unwrap_or_default();
        if labels.len() != req.query.len() {
            return Err(ApiError::bad(format!(
                "labels has {} entries for {} queries: start OpenRLHF with --data.label_key (0.10 and later; --label_key before) naming a column that holds redjury labels (docs/serve.md)",
                labels.len(),
                req.query.len()
            )));
        }
        let mut work = Vec::with_capacity(labels.len());
        for (i, label) in labels.into_iter().enumerate() {
            let label: Label = match label {
                Value::String(s) => serde_json::from_str(&s),
                other => serde_json::from_value(other),
            }
            .map_err(|e| {
                ApiError::bad(format!(
                    "not a redjury label ({e}); a label is a JSON object {{\"task\": NAME, \"path\": FILE}} or with \"docx_base64\" instead of \"path\""
                ))
                .at("labels", i)
            })?;
            let item = ScoreRequest {
                task: label.task,
                task_spec: None,
                docx_base64: label.docx_base64,
                path: label.path,
                trial: label.trial,
                input_base64: None,
                input_path: None,
                on_incomplete: None,
            };
            work.push(self.resolve(item).map_err(|e| e.at("labels", i))?);
        }
        Ok(work)
    }

    fn task(&self, name: &str, spec: Option<Value>) -> Result<Arc<Task>, ApiError> {
        let Some(spec) = spec else {
            return self.tasks.get(name).cloned().ok_or_else(|| {
                ApiError::with_status(
                    404,
                    format!(
                        "unknown task {name:?}: this server has {} tasks from {} (GET /v1/tasks lists them), or send the task itself as task_spec",
                        self.tasks.len(),
                        self.tasks_dir.display()
                    ),
                )
            });
        };
        task::check_plain_name("task", name).map_err(ApiError::bad)?;
        for path in task_paths(&spec) {
            self.allowed_path(&self.tasks_dir.join(path))?;
        }
        task::task_from_json(spec, name, &self.tasks_dir)
            .map(Arc::new)
            .map_err(|e| ApiError::bad(format!("task_spec: {e}")))
    }

    fn input(
        &self,
        b64: Option<String>,
        path: Option<String>,
    ) -> Result<Option<Vec<u8>>, ApiError> {
        match (b64, path) {
            (Some(_), Some(_)) => Err(ApiError::bad("send input_base64 or input_path, not both")),
            (Some(b), None) => decode(&b, "input_base64").map(Some),
            (None, Some(p)) => self.read(&p, "input_path").map(Some),
            (None, None) => Ok(None),
        }
    }

    fn output(&self, b64: Option<String>, path: Option<String>) -> Result<Vec<u8>, ApiError> {
        match (b64, path) {
            (Some(_), Some(_)) => Err(ApiError::bad("send docx_base64 or path, not both")),
            (Some(b), None) => decode(&b, "docx_base64"),
            (None, Some(p)) => self.read(&p, "path"),
            (None, None) => Err(ApiError::bad("no document: send docx_base64 or path")),
        }
    }

    /// Reads a file a request names, if it is under an allowed folder.
    fn read(&self, path: &str, field: &str) -> Result<Vec<u8>, ApiError> {
        let p = Path::new(path);
        if !p.is_absolute() {
            return Err(ApiError::bad(format!("{field} must be an absolute path, not {path:?}")));
        }
        let canonical = self.allowed_path(p)?;
        crate::docx::read_file(&canonical, &crate::docx::Limits::default())
            .map_err(|e| ApiError::bad(format!("{field}: {e}")))
    }

    /// The canonical form of `p` if it lies under an allowed folder. A
    /// path outside them gets the same answer (403) whether or not it
    /// exists: it is judged by its text first (`..` resolved lexically),
    /// and the file system is touched only for a path inside; a symlink
    /// inside that leads out, or leads nowhere, is outside too.
    fn allowed_path(&self, p: &Path) -> Result<PathBuf, ApiError> {
        if self.allowed.is_empty() {
            return Err(ApiError::with_status(
                403,
                "this server reads no files: send the document as base64, or start the server with --allow-path DIR",
            ));
        }
        let outside = || {
            ApiError::with_status(
                403,
                format!(
                    "{} is outside the folders this server may read (--allow-path)",
                    p.display()
                ),
            )
        };
        let lexical = lexically_absolute(p).ok_or_else(outside)?;
        if !self.allowed.iter().any(|a| a.holds(&lexical)) {
            return Err(outside());
        }
        match lexical.canonicalize() {
            Ok(c) if self.allowed.iter().any(|a| c.starts_with(&a.canonical)) => Ok(c),
            Ok(_) => Err(outside()),
            Err(e) => {
                let is_link = lexical.symlink_metadata().is_ok_and(|m| m.is_symlink());
                let nearest = lexical.ancestors().find_map(|a| a.canonicalize().ok());
                let inside = nearest
                    .is_some_and(|n| self.allowed.iter().any(|a| n.starts_with(&a.canonical)));
                if is_link || !inside {
                    Err(outside())
                } else {
                    Err(ApiError::bad(format!("cannot read {}: {e}", p.display())))
                }
            }
        }
    }
}

/// A folder requests may name files in, as given (made absolute, `..`
/// resolved by its text) and as the file system resolves it.
#[derive(Debug, Clone)]
pub(super) struct AllowedFolder {
    given: PathBuf,
    canonical: PathBuf,
}

impl AllowedFolder {
    /// The folder `--allow-path` names; it must exist.
    pub(super) fn new(path: &Path) -> std::io::Result<AllowedFolder> {
        let canonical = path.canonicalize()?;
        let given = lexically_absolute(path).unwrap_or_else(|| canonical.clone());
        Ok(AllowedFolder { given, canonical })
    }

    /// Whether a lexically absolute path lies in it, by its text.
    fn holds(&self, lexical: &Path) -> bool {
        lexical.starts_with(&self.given) || lexical.starts_with(&self.canonical)
    }
}

/// `p` made absolute (against the current directory) with `.` and `..`
/// resolved by the text alone, never by the file system; `None` when `..`
/// would climb above the root.
fn lexically_absolute(p: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let absolute = std::path::absolute(p).ok()?;
    let mut out = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => out.push(c),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    Some(out)
}

/// The paths an inline task names: its input, its output template, its
/// expert redline and its checks' gold files.
fn task_paths(spec: &Value) -> Vec<String> {
    let mut out: Vec<String> = ["input", "output_template", "expert"]
        .iter()
        .filter_map(|key| spec.get(*key).and_then(Value::as_str).map(str::to_string))
        .collect();
    let rubrics = spec.get("rubrics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    for r in rubrics {
        if let Some(gold) = r.pointer("/check/gold_docx").and_then(Value::as_str) {
            out.push(gold.to_string());
        }
    }
    out
}

fn decode(b64: &str, field: &str) -> Result<Vec<u8>, ApiError> {
    base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| ApiError::bad(format!("{field} is not base64: {e}")))
}

/// The trial id: the caller's, or one derived from the document's bytes,
/// so a retried request lands on the same trial and a new rollout on a
/// new one.
fn trial(given: Option<String>, bytes: &[u8]) -> Result<String, ApiError> {
    match given {
        Some(t) => crate::task::check_plain_name("trial", &t).map(|()| t).map_err(ApiError::bad),
        None => Ok(format!("sha-{}", &crate::hash::sha256_hex_bytes(bytes)[..16])),
    }
}

/// A row's reward under `policy`, or `None` when the policy is to fail.
fn reward_under(row: &TaskResult, policy: OnIncomplete) -> Option<(Option<f64>, &'static str)> {
    match (row.status, policy) {
        (Status::Scored, _) => Some((row.reward, "judges")),
        (Status::GateFailed, _) => Some((Some(0.0), "gate")),
        (Status::Incomplete | Status::Pending, OnIncomplete::Error) => None,
        (Status::Incomplete | Status::Pending, OnIncomplete::Null) => Some((None, "on_incomplete")),
        (Status::Incomplete | Status::Pending, OnIncomplete::Value(v)) => {
            Some((Some(v), "on_incomplete"))
        }
    }
}

/// Rows as replies: each row as in results.jsonl, with `reward` as the
/// policy makes it and `reward_from` saying where it came from, less the
/// edit shapes (`edits`, `expert`: the summary's docx figures read them;
/// a trainer has no use for them, and the expert's would go out on every
/// reply). `Err` lists the rows the policy refuses to answer for.
pub(super) fn replies(rows: &[TaskResult], policy: OnIncomplete) -> Result<Vec<Value>, Value> {
    let mut out = Vec::with_capacity(rows.len());
    let mut refused = Vec::new();
    for row in rows {
        match reward_under(row, policy) {
            Some((reward, from)) => {
                let mut v = serde_json::to_value(row).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.remove("edits");
                    m.remove("expert");
                    m.insert("reward".into(), json!(reward));
                    m.insert("reward_from".into(), json!(from));
                }
                out.push(v);
            }
            None => refused.push(json!({
                "task": row.task,
                "trial": row.trial,
                "status": row.status,
                "reason": row.reason,
            })),
        }
    }
    if refused.is_empty() { Ok(out) } else { Err(Value::Array(refused)) }
}

/// The reference's rubric categories and the key each has in a trainer's
/// logs (a category outside them counts as `other`). The Python adapters
/// (`clients/python/redjury_client.py`, `CATEGORIES`) use the same keys.
const LOGGED_CATEGORIES: [(&str, &str); 5] = [
    ("Commercial Context", "commercial_context"),
    ("Counterparty Acceptance Prediction", "counterparty_acceptance"),
    ("Deal-closing Orientation", "deal_closing"),
    ("Legal correctness", "legal_correctness"),
    ("Negotiation Quality", "negotiation_quality"),
];

/// OpenRLHF's `extra_logs` for reply rows: numbers only, the same keys for
/// every row — the gate and incomplete flags, the penalty weight found,
/// the positive rubrics by verdict, and per category the weight earned and
/// possible (their batch means give the earned share). The same numbers as
/// the Python adapters' `extra_info`, each key prefixed `redjury_`.
pub(crate) fn extra_logs(rows: &[Value]) -> Value {
    let categories = LOGGED_CATEGORIES.iter().map(|(_, k)| *k).chain(["other"]);
    let mut keys: Vec<String> = [
        "gate_passed",
        "incomplete",
        "penalty",
        "rubrics_passed",
        "rubrics_failed",
        "rubrics_undecided",
    ]
    .map(String::from)
    .to_vec();
    for c in categories {
        keys.push(format!("earned_{c}"));
        keys.push(format!("possible_{c}"));
    }
    let per_row: Vec<BTreeMap<String, f64>> = rows.iter().map(row_numbers).collect();
    let logs: serde_json::Map<String, Value> = keys
        .iter()
        .map(|k| {
            let column: Vec<f64> =
                per_row.iter().map(|r| r.get(k).copied().unwrap_or(0.0)).collect();
            (format!("redjury_{k}"), json!(column))
        })
        .collect();
    Value::Object(logs)
}

fn row_numbers(row: &Value) -> BTreeMap<String, f64> {
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    let mut n = BTreeMap::new();
    n.insert("gate_passed".into(), flag(row["gate"]["passed"] == Value::Bool(true)));
    let incomplete = row["reward_from"] == "on_incomplete" || row["status"] == "incomplete";
    n.insert("incomplete".into(), flag(incomplete));
    n.insert("penalty".into(), row["penalty"].as_f64().unwrap_or(0.0));
    for rubric in row["rubrics"].as_array().into_iter().flatten() {
        let weight = rubric["weight"].as_f64().unwrap_or(0.0);
        if weight <= 0.0 {
            continue;
        }
        let verdict = rubric["verdict"].as_str();
        let count = match verdict {
            Some("PASS") => "rubrics_passed",
            Some("FAIL") => "rubrics_failed",
            _ => "rubrics_undecided",
        };
        *n.entry(count.into()).or_insert(0.0) += 1.0;
        let category = rubric["category"].as_str().unwrap_or("");
        let key =
            LOGGED_CATEGORIES.iter().find(|(c, _)| *c == category).map_or("other", |(_, k)| k);
        *n.entry(format!("possible_{key}")).or_insert(0.0) += weight;
        if verdict == Some("PASS") {
            *n.entry(format!("earned_{key}")).or_insert(0.0) += weight;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::gate::GateResult;

    fn row(status: Status, reward: Option<f64>) -> TaskResult {
        let task = Task::named("t", task::Side::A, "A", vec![]);
        let mut r = crate::pipeline::skeleton(&task, "1", GateResult::failed("x"));
        r.status = status;
        r.reward = reward;
        r
    }

    #[test]
    fn an_incomplete_row_is_never_a_silent_zero() {
        let rows = [row(Status::Scored, Some(0.5)), row(Status::Incomplete, None)];
        assert!(replies(&rows, OnIncomplete::Error).is_err());
        let null = replies(&rows, OnIncomplete::Null).expect("answered");
        assert_eq!(null[1]["reward"], Value::Null);
        assert_eq!(null[1]["reward_from"], "on_incomplete");
        let chosen = replies(&rows, OnIncomplete::Value(-1.0)).expect("answered");
        assert_eq!(chosen[1]["reward"], -1.0);
        assert_eq!(chosen[0]["reward"], 0.5);
        assert_eq!(chosen[0]["reward_from"], "judges");
    }

    #[test]
    fn a_gate_failure_is_a_real_zero_whatever_the_policy() {
        let rows = [row(Status::GateFailed, Some(0.0))];
        let r = replies(&rows, OnIncomplete::Error).expect("answered");
        assert_eq!(r[0]["reward"], 0.0);
        assert_eq!(r[0]["reward_from"], "gate");
    }

    #[test]
    fn policies_parse_from_text_and_refuse_the_rest() {
        assert_eq!("error".parse(), Ok(OnIncomplete::Error));
        assert_eq!("null".parse(), Ok(OnIncomplete::Null));
        assert_eq!("0.25".parse(), Ok(OnIncomplete::Value(0.25)));
        assert!("NaN".parse::<OnIncomplete>().is_err());
        assert!("zero".parse::<OnIncomplete>().is_err());
    }

    #[test]
    fn default_trials_follow_the_document() {
        let a = trial(None, b"one").expect("trial");
        assert_eq!(a, trial(None, b"one").expect("trial"));
        assert_ne!(a, trial(None, b"two").expect("trial"));
        assert!(trial(Some("a\nb".into()), b"").is_err());
    }
}
