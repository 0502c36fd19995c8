//! `redjury serve`: the reward service set up, bound and run.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::commands::{CommandError, Found, Judging, built};
use crate::pipeline::{Dispatch, JudgeMode, Scorer, ScorerConfig, load_tasks};
use crate::serve::{OnIncomplete, ServeEnd, ServeError, ServeOptions, Service, check_bind};
use crate::task::Task;

/// What `redjury serve` is asked.
#[derive(Debug, Clone)]
pub struct ServeRequest {
    /// The tasks folder.
    pub tasks: PathBuf,
    /// Who judges.
    pub judging: Judging,
    /// Where to listen.
    pub bind: SocketAddr,
    /// The results folder every answered row is appended to.
    pub out: Option<PathBuf>,
    /// Folders requests may name files in.
    pub allow_paths: Vec<PathBuf>,
    /// The environment variable holding the bearer token.
    pub token_env: String,
    /// Outputs accepted and not yet answered, at most.
    pub queue: usize,
    /// How long a request waits for its rows.
    pub deadline: Duration,
    /// The largest request body, in bytes.
    pub max_body: usize,
    /// The policy for incomplete rows.
    pub on_incomplete: OnIncomplete,
    /// How long shutdown waits for accepted work.
    pub grace: Duration,
    /// `results.jsonl` is sealed as `results.N.jsonl` past this many bytes.
    pub log_segment_bytes: u64,
    /// Where outputs are read (the binary: in bounded children, so that
    /// no posted file takes the service down).
    pub reader: crate::isolated::Reader,
}

/// The service checked and ready to bind.
pub struct PlannedService {
    found: Found,
    bind: SocketAddr,
    tasks: Vec<Task>,
    config: ScorerConfig,
    options: ServeOptions,
}

/// The service listening, not yet answering.
pub struct BoundService {
    service: Arc<Service>,
    listener: tokio::net::TcpListener,
}

impl PlannedService {
    /// Checks the setup: the panel, a token for a bind beyond loopback,
    /// the tasks. Every error is a refusal.
    pub fn plan(request: ServeRequest) -> Result<PlannedService, CommandError> {
        let out_for_cache = request.out.clone().unwrap_or_else(|| PathBuf::from("served"));
        let found = request.judging.resolve(&out_for_cache, Some(&request.tasks))?;
        let token = std::env::var(&request.token_env).ok().filter(|t| !t.is_empty());
        check_bind(request.bind, token.as_deref(), &request.token_env)
            .map_err(CommandError::refused)?;
        let tasks = load_tasks(&request.tasks).map_err(CommandError::refused)?;
        // The reward service answers while callers wait: never by batch.
        let config = ScorerConfig {
            panel: found.panel.clone(),
            templates: request.judging.templates()?,
            cache_path: found.cache.clone(),
            mode: JudgeMode::Live,
            dispatch: Dispatch::Live,
            reader: request.reader.clone(),
        };
        let options = ServeOptions {
            tasks_dir: request.tasks,
            allow_paths: request.allow_paths,
            token,
            queue: request.queue,
            deadline: request.deadline,
            max_body: request.max_body,
            on_incomplete: request.on_incomplete,
            grace: request.grace,
            out: request.out,
            prices: found.prices.clone(),
            log_segment_bytes: request.log_segment_bytes,
        };
        Ok(PlannedService { found, bind: request.bind, tasks, config, options })
    }

    /// The panel, prices and cache it uses.
    pub fn preamble(&self) -> String {
        self.found.describe()
    }

    /// Opens the cache, builds the judges and listens.
    pub async fn bind(self) -> Result<BoundService, CommandError> {
        let scorer = built(Scorer::new(self.config))?;
        let service = Service::new(scorer, self.tasks, self.options).map_err(|e| match e {
            ServeError::NoJudges { .. } => CommandError::refused(e),
            other => CommandError::failed(other),
        })?;
        let listener = tokio::net::TcpListener::bind(self.bind).await.map_err(|e| {
            CommandError::failed(e).context(format!("cannot listen on {}", self.bind))
        })?;
        Ok(BoundService { service, listener })
    }
}

impl BoundService {
    /// The address it listens on (a port chosen by the system for `:0`).
    pub fn local_addr(&self) -> Result<SocketAddr, CommandError> {
        self.listener.local_addr().map_err(CommandError::failed)
    }

    /// Answers until `shutdown` resolves, then waits up to the grace
    /// period for accepted work and writes the summary.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<ServeEnd, CommandError> {
        self.service.run(self.listener, shutdown).await.map_err(CommandError::failed)
    }
}
