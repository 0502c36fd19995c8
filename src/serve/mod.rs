//! The reward service (`redjury serve`): rewards over HTTP for RL trainers,
//! from one process that holds the panel's rate budget, the cache and the
//! de-duplication of identical calls for every worker.
//!
//! Owns: the routes, the bounded queue, per-request deadlines, bearer-token
//! checks, metrics, the results log and graceful shutdown. Scoring itself
//! is the one [`Scorer`]: this module never runs a stage of its own. Must
//! never answer an incomplete row with a number the caller did not choose,
//! never answer before the row is in the results log, never echo a
//! provider key, and never read a file outside `--allow-path`.

mod api;
mod metrics;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

pub use api::OnIncomplete;
use api::{ApiError, Work};

use crate::aggregate::Bootstrap;
use crate::aggregate::Prices;
use crate::pipeline::run::{Leftovers, summarize};
use crate::pipeline::{Scorer, Silent};
use crate::report::{self, PromptRecord, ResultsLog};
use crate::score::TaskResult;
use crate::task::Task;

/// The marker that says a folder is a reward service's results log.
const MARKER: &str = ".redjury-serve";

/// How the service is set up (everything but the scorer and the tasks).
pub struct ServeOptions {
    /// The folder inline tasks' relative paths start from (`--tasks`).
    pub tasks_dir: PathBuf,
    /// Folders a request may name files in (`--allow-path`).
    pub allow_paths: Vec<PathBuf>,
    /// The bearer token every request but /healthz and /readyz must carry.
    pub token: Option<String>,
    /// Outputs accepted and not yet answered, at most (`--queue`).
    pub queue: usize,
    /// How long a request waits for its rows (`--deadline`).
    pub deadline: Duration,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// The policy for incomplete rows when a request names none.
    pub on_incomplete: OnIncomplete,
    /// How long shutdown waits for accepted work.
    pub grace: Duration,
    /// The results folder every answered row is appended to.
    pub out: Option<PathBuf>,
    /// Prices for the summary written at shutdown.
    pub prices: Prices,
    /// `results.jsonl` is sealed as `results.N.jsonl` past this many bytes.
    pub log_segment_bytes: u64,
}

/// Why the service cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum ServeError {
    /// A non-loopback bind without a token would let anyone spend the keys.
    #[error(
        "refusing to listen on {addr} without a token: anyone who can reach it could spend the panel's API keys. Set {env} to a secret token (clients send it as `Authorization: Bearer …`), or bind to 127.0.0.1"
    )]
    TokenRequired { addr: SocketAddr, env: String },
    /// No judge can be called: the service would answer nothing.
    #[error(
        "no judge can be called (set {vars}): the reward service needs judges; for a cost estimate use `redjury score --dry-run`"
    )]
    NoJudges { vars: String },
    /// An `--allow-path` folder does not exist.
    #[error("--allow-path {path}: {source}")]
    AllowPath { path: PathBuf, source: std::io::Error },
    /// `--out` holds something else.
    #[error(
        "refusing to append to {path}: it holds a `redjury score` run or other files, not a reward service's results; choose a new folder"
    )]
    ForeignOut { path: PathBuf },
    /// A file of the service cannot be written or the socket cannot be served.
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    /// `--queue` is 0.
    #[error("--queue must be at least 1")]
    EmptyQueue,
}

/// Refuses a bind address other than loopback when no token is set.
pub(crate) fn check_bind(
    addr: SocketAddr,
    token: Option<&str>,
    env: &str,
) -> Result<(), ServeError> {
    if addr.ip().is_loopback() || token.is_some_and(|t| !t.is_empty()) {
        Ok(())
    } else {
        Err(ServeError::TokenRequired { addr, env: env.to_string() })
    }
}

/// The running service's state, shared by every request.
pub struct Service {
    scorer: Arc<Scorer>,
    resolver: api::Resolver,
    options: ServeOptions,
    queue: Arc<Semaphore>,
    metrics: metrics::Metrics,
    log: Option<ResultsLog>,
    /// Repeats counted by earlier sessions appending to the same folder.
    earlier_repeats: u64,
    closing: AtomicBool,
    /// Set when the grace period has run out: callers still waiting are
    /// answered 503 with `Retry-After` before the process exits.
    expired: tokio::sync::watch::Sender<bool>,
    /// A moving average of the time one job takes, for `Retry-After`.
    job_ms: AtomicU64,
}

/// How the service ended.
#[derive(Debug)]
pub struct ServeEnd {
    /// Outputs still being scored when the grace period ran out (their
    /// answers so far are in the cache; their rows were not answered).
    pub unfinished: usize,
    /// Judge answers received that neither the cache nor its journal could
    /// take (a full disk): lost when the process exits.
    pub unstored: usize,
    /// Judge answers kept only in the journal of a shared store that
    /// stayed unreachable: stored by the next process that opens the
    /// store from the same folder.
    pub journaled: usize,
    /// That journal.
    pub journal: std::path::PathBuf,
}

impl Service {
    /// Checks the setup and opens the results log.
    pub fn new(
        scorer: Scorer,
        tasks: Vec<Task>,
        options: ServeOptions,
    ) -> Result<Arc<Service>, ServeError> {
        if scorer.dry_run().is_some() {
            let vars: Vec<&str> = scorer.judges().iter().filter_map(|j| j.missing_key()).collect();
            return Err(ServeError::NoJudges { vars: vars.join(", ") });
        }
        if options.queue == 0 {
            return Err(ServeError::EmptyQueue);
        }
        let allowed = options
            .allow_paths
            .iter()
            .map(|p| {
                api::AllowedFolder::new(p)
                    .map_err(|source| ServeError::AllowPath { path: p.clone(), source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (log, earlier_repeats) = match options.out.as_deref() {
            Some(dir) => {
                let (log, earlier) = open_log(dir, options.log_segment_bytes)?;
                (Some(log), earlier)
            }
            None => (None, 0),
        };
        let tasks: BTreeMap<String, Arc<Task>> =
            tasks.into_iter().map(|t| (t.name.clone(), Arc::new(t))).collect();
        let resolver = api::Resolver { tasks, tasks_dir: options.tasks_dir.clone(), allowed };
        Ok(Arc::new(Service {
            scorer: Arc::new(scorer),
            resolver,
            queue: Arc::new(Semaphore::new(options.queue)),
            options,
            metrics: metrics::Metrics::default(),
            log,
            earlier_repeats,
            closing: AtomicBool::new(false),
            expired: tokio::sync::watch::Sender::new(false),
            job_ms: AtomicU64::new(1000),
        }))
    }

    /// The HTTP routes.
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/v1/score", post(score))
            .route("/v1/score/batch", post(score_batch))
            .route("/openrlhf", post(openrlhf))
            .route("/v1/tasks", get(tasks))
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(ready))
            .route("/metrics", get(metrics_text))
            .layer(axum::extract::DefaultBodyLimit::max(self.options.max_body))
            .layer(middleware::from_fn_with_state(self.clone(), guard))
            .with_state(self.clone())
    }

    /// Serves until `shutdown` resolves, then stops taking requests, waits
    /// up to the grace period for accepted work, and writes the summary.
    pub async fn run(
        self: Arc<Self>,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<ServeEnd, ServeError> {
        // The grace period counts from the stop signal, whatever happens
        // after it.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(None::<Instant>);
        let this = self.clone();
        let signal = async move {
            shutdown.await;
            this.closing.store(true, Ordering::SeqCst);
            let _ = stop_tx.send(Some(Instant::now()));
        };
        tokio::spawn(signal);
        let mut drained = stop_rx.clone();
        let mut server = tokio::spawn(
            axum::serve(listener, self.router())
                .with_graceful_shutdown(async move {
                    let _ = drained.wait_for(Option::is_some).await;
                })
                .into_future(),
        );
        let mut grace_rx = stop_rx.clone();
        let grace = self.options.grace;
        let deadline = async move {
            let stopped_at = match grace_rx.wait_for(Option::is_some).await {
                Ok(at) => at.unwrap_or_else(Instant::now),
                Err(_) => Instant::now(),
            };
            tokio::time::sleep_until((stopped_at + grace).into()).await;
        };
        let cut_off = tokio::select! {
            r = &mut server => {
                let served = r.map_err(|e| ServeError::Io { what: "serving".into(), source: std::io::Error::other(e) })?;
                served.map_err(|source| ServeError::Io { what: "serving".into(), source })?;
                None
            }
            _ = deadline => Some(self.expire(&mut server).await),
        };
        let unfinished = match cut_off {
            Some(unfinished) => unfinished,
            None => {
                let stopped_at = (*stop_rx.borrow()).unwrap_or_else(Instant::now);
                let left = grace.saturating_sub(stopped_at.elapsed());
                match self.drain(left).await {
                    0 => 0,
                    _ => self.expire(&mut server).await,
                }
            }
        };
        let left = self.scorer.settle_store().await;
        self.finish();
        Ok(ServeEnd {
            unfinished,
            unstored: left.held,
            journaled: left.journaled,
            journal: left.journal,
        })
    }

    /// Ends the grace period: counts the outputs still being scored, stops
    /// every judge (no attempt or retry starts after this; answers already
    /// received are in the cache), and answers callers still waiting 503
    /// with `Retry-After` rather than a dropped connection.
    async fn expire(&self, server: &mut tokio::task::JoinHandle<std::io::Result<()>>) -> usize {
        let unfinished = self.options.queue - self.queue.available_permits();
        // Set before the judges stop, so that work they cut short is not
        // logged as rows its callers were never answered with.
        self.expired.send_replace(true);
        for judge in self.scorer.judges() {
            judge.halt("the server's grace period ran out");
        }
        if !server.is_finished() {
            let _ = tokio::time::timeout(Duration::from_secs(2), &mut *server).await;
            server.abort();
        }
        unfinished
    }

    /// Waits up to `left` for accepted work; returns how many outputs are
    /// still unfinished.
    async fn drain(&self, left: Duration) -> usize {
        let all = self.options.queue as u32;
        match tokio::time::timeout(left, self.queue.acquire_many(all)).await {
            Ok(_) => 0,
            Err(_) => self.options.queue - self.queue.available_permits(),
        }
    }

    /// Flushes the cache and writes the results folder's summary.
    fn finish(&self) {
        if let Err(e) = self.scorer.cache().checkpoint() {
            tracing::warn!("{e}");
        }
        let Some(log) = &self.log else { return };
        match report::load_run(log.dir()) {
            Ok((rows, _)) => {
                let boot = Bootstrap::default();
                let mut summary = summarize(
                    &self.scorer,
                    &rows,
                    Leftovers::default(),
                    &self.options.prices,
                    boot,
                    None,
                );
                summary.repeated_requests = self.earlier_repeats + log.repeats();
                if let Err(e) = report::write_summary(log.dir(), &summary) {
                    tracing::error!("cannot write the summary in {}: {e}", log.dir().display());
                }
            }
            Err(e) => tracing::error!("cannot summarise {}: {e}", log.dir().display()),
        }
    }

    /// Accepts work into the queue, scores it in the background and waits
    /// for its rows up to the deadline. Work outlives a caller who stops
    /// waiting: its answers land in the cache and the results log, and the
    /// same request asked again is answered from them.
    async fn submit(self: &Arc<Self>, work: Vec<Work>) -> Result<Vec<TaskResult>, ApiError> {
        if self.closing.load(Ordering::SeqCst) {
            return Err(unavailable(
                "the server is shutting down; send the request to another replica or retry",
                5,
            ));
        }
        let n = work.len();
        if n > self.options.queue {
            return Err(ApiError {
                status: 413,
                message: format!(
                    "{n} outputs is more than the queue holds ({}); split the batch into requests of at most max_outputs",
                    self.options.queue
                ),
                retry_after: None,
                max_outputs: None,
            }
            .with_max_outputs(self.options.queue));
        }
        let Ok(permit) = self.queue.clone().try_acquire_many_owned(n as u32) else {
            self.metrics.queue_rejected();
            return Err(ApiError {
                status: 429,
                message: format!(
                    "the queue is full ({} outputs); retry after the delay",
                    self.options.queue
                ),
                retry_after: Some(self.retry_after()),
                max_outputs: None,
            });
        };
        let this = self.clone();
        let job = tokio::spawn(async move {
            let rows = this.process(work).await;
            drop(permit);
            rows
        });
        let mut expired = self.expired.subscribe();
        let waited = tokio::select! {
            r = tokio::time::timeout(self.options.deadline, job) => r,
            _ = expired.wait_for(|e| *e) => {
                return Err(unavailable(
                    "the server stopped before these rows were done (its grace period ran out); send the request to another replica or retry",
                    5,
                ));
            }
        };
        match waited {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(ApiError {
                status: 500,
                message: format!("scoring failed: {e}"),
                retry_after: None,
                max_outputs: None,
            }),
            Err(_) => {
                self.metrics.deadline_exceeded();
                Err(unavailable(
                    "the deadline passed while judges were answering; the work goes on: retry the same request to get its rows",
                    self.retry_after(),
                ))
            }
        }
    }

    /// Runs the pipeline on work and appends its rows to the results log.
    async fn process(&self, work: Vec<Work>) -> Vec<TaskResult> {
        let started = Instant::now();
        let documents: Vec<String> = work
            .iter()
            .map(|(_, source, _)| match source {
                crate::pipeline::OutputSource::Bytes(b) => crate::hash::sha256_hex_bytes(b),
                crate::pipeline::OutputSource::Path(p) => p.display().to_string(),
            })
            .collect();
        let prepared = self.scorer.prepare_all(work).await;
        let prompts: Vec<Option<PromptRecord>> = prepared
            .iter()
            .map(|p| p.prompt.as_ref().map(|q| PromptRecord::of(&p.row.task, &p.row.trial, q)))
            .collect();
        let rows = self.scorer.judge(prepared, &Silent).await;
        if *self.expired.borrow() {
            // Cut short by the end of the grace period: these rows were not
            // answered, and the same request sent again is scored afresh.
            return rows;
        }
        for ((row, prompt), document) in rows.iter().zip(&prompts).zip(&documents) {
            self.metrics.row(row.status);
            if let Some(log) = &self.log
                && let Err(e) = log.append(row, prompt.as_ref(), document)
            {
                tracing::error!("cannot append to {}: {e}", log.dir().display());
            }
        }
        let per_job = started.elapsed().as_millis() as u64;
        let old = self.job_ms.load(Ordering::Relaxed);
        self.job_ms.store((old * 7 + per_job) / 8, Ordering::Relaxed);
        rows
    }

    /// Seconds a refused caller should wait: about one job's time.
    fn retry_after(&self) -> u64 {
        self.job_ms.load(Ordering::Relaxed).div_ceil(1000).clamp(1, 60)
    }

    /// Whether enough judges can still answer to reach the quorum.
    fn ready(&self) -> Result<(), String> {
        if self.closing.load(Ordering::SeqCst) {
            return Err("shutting down".into());
        }
        let judges = self.scorer.judges();
        let live = judges.iter().filter(|j| j.can_call() && j.stopped().is_none()).count();
        if live >= self.scorer.quorum() {
            return Ok(());
        }
        let stopped: Vec<String> = judges
            .iter()
            .filter_map(|j| j.stopped().map(|why| format!("{}: {why}", j.config.name)))
            .collect();
        Err(format!(
            "{live} judges can answer, fewer than the quorum of {}; stopped: {}",
            self.scorer.quorum(),
            stopped.join("; ")
        ))
    }

    fn policy(&self, asked: Option<OnIncomplete>) -> OnIncomplete {
        asked.unwrap_or(self.options.on_incomplete)
    }

    /// Resolves requests on a blocking thread (they may read files).
    async fn resolve(
        self: &Arc<Self>,
        f: impl FnOnce(&api::Resolver) -> Result<Vec<Work>, ApiError> + Send + 'static,
    ) -> Result<Vec<Work>, ApiError> {
        let this = self.clone();
        tokio::task::spawn_blocking(move || f(&this.resolver)).await.unwrap_or_else(|e| {
            Err(ApiError {
                status: 500,
                message: format!("reading the request failed: {e}"),
                retry_after: None,
                max_outputs: None,
            })
        })
    }
}

/// Opens `--out` for appending, refusing a folder that is not the
/// service's own. The summary of an earlier session is removed: it is
/// written again at shutdown, and `redjury report` rebuilds it from the
/// rows meanwhile.
fn open_log(dir: &Path, segment_bytes: u64) -> Result<(ResultsLog, u64), ServeError> {
    let io = |what: String| move |source| ServeError::Io { what, source };
    if dir.is_dir() && !dir.join(MARKER).exists() {
        let mut entries =
            std::fs::read_dir(dir).map_err(io(format!("reading {}", dir.display())))?;
        if entries.next().is_some() {
            return Err(ServeError::ForeignOut { path: dir.to_path_buf() });
        }
    }
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    std::fs::write(dir.join(MARKER), "results appended by `redjury serve`\n")
        .map_err(io(format!("writing {}", dir.display())))?;
    // Repeats counted by earlier sessions carry on in the next summary.
    let earlier = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<report::Summary>(&t).ok())
        .map_or(0, |s| s.repeated_requests);
    for stale in ["summary.json", "summary.md"] {
        match std::fs::remove_file(dir.join(stale)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(ServeError::Io { what: format!("removing {stale}"), source: e });
            }
            _ => {}
        }
    }
    let log =
        ResultsLog::open(dir, segment_bytes).map_err(io(format!("opening {}", dir.display())))?;
    Ok((log, earlier))
}

fn unavailable(message: &str, retry_after: u64) -> ApiError {
    ApiError {
        status: 503,
        message: message.to_string(),
        retry_after: Some(retry_after),
        max_outputs: None,
    }
}

/// A JSON reply with an optional `Retry-After`.
fn reply(status: u16, body: Value, retry_after: Option<u64>) -> Response {
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(secs) = retry_after {
        resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": self.message });
        if let (Some(n), Value::Object(m)) = (self.max_outputs, &mut body) {
            m.insert("max_outputs".into(), json!(n));
        }
        reply(self.status, body, self.retry_after)
    }
}

/// The body, or a 4xx saying why it could not be read.
fn body(b: Result<Bytes, BytesRejection>, limit: usize) -> Result<Bytes, ApiError> {
    b.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError {
            status: 413,
            message: format!(
                "request body larger than {limit} bytes (--max-body-mb); send fewer outputs per request, or paths under --allow-path"
            ),
            retry_after: None,
            max_outputs: None,
        },
        s => ApiError { status: s.as_u16(), message: e.body_text(), retry_after: None, max_outputs: None },
    })
}

/// Rows under a policy, as the reply or the 503 that refuses them.
fn rows_reply(
    service: &Service,
    rows: &[TaskResult],
    policy: OnIncomplete,
    shape: impl FnOnce(Vec<Value>) -> Value,
) -> Response {
    match api::replies(rows, policy) {
        Ok(values) => reply(200, shape(values), None),
        Err(incomplete) => reply(
            503,
            json!({
                "error": "some rows could not be completed (the quorum was not met); no reward is given for them. Retry later, or send on_incomplete \"null\" or a number to get the others",
                "incomplete": incomplete,
            }),
            Some(30.max(service.retry_after())),
        ),
    }
}

async fn score(
    State(s): State<Arc<Service>>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let mut req: api::ScoreRequest = api::parse_body(&body(b, s.options.max_body)?)?;
    let policy = s.policy(req.policy()?);
    let work = s.resolve(move |r| r.resolve(req).map(|w| vec![w])).await?;
    let rows = s.submit(work).await?;
    Ok(rows_reply(&s, &rows, policy, |mut v| v.pop().unwrap_or(Value::Null)))
}

async fn score_batch(
    State(s): State<Arc<Service>>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: api::BatchRequest = api::parse_body(&body(b, s.options.max_body)?)?;
    let (items, asked) = req.split()?;
    let policy = s.policy(asked);
    let work = s
        .resolve(move |r| {
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| r.resolve(item).map_err(|e| prefix(e, i)))
                .collect()
        })
        .await?;
    let rows = s.submit(work).await?;
    Ok(rows_reply(&s, &rows, policy, |v| json!({ "results": v })))
}

fn prefix(mut e: ApiError, i: usize) -> ApiError {
    e.message = format!("items[{i}]: {}", e.message);
    e
}

/// OpenRLHF's remote reward model: `{"query", "prompts", "labels"}` in,
/// `{"rewards", "scores", "extra_logs"}` out, matched by position.
async fn openrlhf(
    State(s): State<Arc<Service>>,
    uri: axum::http::Uri,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let asked = uri
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|kv| kv.strip_prefix("on_incomplete="))
        .map(|v| v.parse::<OnIncomplete>().map_err(ApiError::bad))
        .transpose()?;
    let policy = s.policy(asked);
    let req: api::OpenRlhfRequest = api::parse_body(&body(b, s.options.max_body)?)?;
    let work = s.resolve(move |r| r.openrlhf(req)).await?;
    let rows = s.submit(work).await?;
    Ok(rows_reply(&s, &rows, policy, |values| {
        let rewards: Vec<Value> = values.iter().map(|v| v["reward"].clone()).collect();
        json!({
            "rewards": rewards,
            "scores": rewards,
            "extra_logs": api::extra_logs(&values),
        })
    }))
}

async fn tasks(State(s): State<Arc<Service>>) -> Response {
    let names: Vec<&String> = s.resolver.tasks.keys().collect();
    reply(200, json!({ "tasks": names }), None)
}

async fn ready(State(s): State<Arc<Service>>) -> Response {
    match s.ready() {
        Ok(()) => reply(
            200,
            json!({
                "ready": true,
                "max_outputs": s.options.queue,
                "max_body_bytes": s.options.max_body,
            }),
            None,
        ),
        Err(why) => reply(503, json!({ "ready": false, "reason": why }), Some(5)),
    }
}

async fn metrics_text(State(s): State<Arc<Service>>) -> Response {
    let gauges = metrics::Gauges {
        queue_depth: s.options.queue - s.queue.available_permits(),
        queue_capacity: s.options.queue,
        judges: s.scorer.judges(),
        ready: s.ready().is_ok(),
    };
    let mut resp = Response::new(Body::from(s.metrics.render(&gauges)));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4"));
    resp
}

/// Checks the bearer token (except on the health probes) and counts every
/// request by route, status and time taken.
async fn guard(State(s): State<Arc<Service>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = metrics::route_label(req.uri().path());
    let open = matches!(route, "/healthz" | "/readyz");
    let resp = match &s.options.token {
        Some(token) if !open && !bearer_matches(req.headers(), token) => {
            let mut r = ApiError {
                status: 401,
                message: "missing or wrong bearer token: send `Authorization: Bearer <token>`"
                    .into(),
                retry_after: None,
                max_outputs: None,
            }
            .into_response();
            r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
        _ => next.run(req).await,
    };
    s.metrics.request(route, resp.status().as_u16(), started.elapsed());
    resp
}

/// Compares the token in constant time, so its bytes cannot be guessed
/// one at a time from how long a refusal takes.
fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(sent) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    let (a, b) = (sent.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_may_go_without_a_token() {
        let local: SocketAddr = "127.0.0.1:8080".parse().expect("addr");
        let v6: SocketAddr = "[::1]:8080".parse().expect("addr");
        let any: SocketAddr = "0.0.0.0:8080".parse().expect("addr");
        assert!(check_bind(local, None, "T").is_ok());
        assert!(check_bind(v6, None, "T").is_ok());
        assert!(matches!(check_bind(any, None, "T"), Err(ServeError::TokenRequired { .. })));
        assert!(check_bind(any, Some(""), "T").is_err(), "an empty token is no token");
        assert!(check_bind(any, Some("s3cret"), "T").is_ok());
    }

    #[test]
    fn the_token_must_match_whole() {
        let mut h = HeaderMap::new();
        assert!(!bearer_matches(&h, "abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer ab"));
        assert!(!bearer_matches(&h, "abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert!(bearer_matches(&h, "abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert!(!bearer_matches(&h, "abc"));
    }

    #[test]
    fn a_folder_of_something_else_is_not_appended_to() {
        let dir = std::env::temp_dir().join(format!("redjury-serve-out-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("summary.json"), "{}").expect("write");
        assert!(matches!(open_log(&dir, 1 << 20), Err(ServeError::ForeignOut { .. })));
        let own = dir.join("served");
        open_log(&own, 1 << 20).expect("a new folder is fine");
        std::fs::write(own.join("summary.json"), "{}").expect("write");
        open_log(&own, 1 << 20).expect("its own folder is appended to");
        assert!(!own.join("summary.json").exists(), "the stale summary is removed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
