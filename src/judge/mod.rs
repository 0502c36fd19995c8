//! Judges: one LLM behind one provider, called under its limits, with
//! retries, structured verdicts and a cache.
//!
//! Owns: the life of one call — cache lookup, pacing, the HTTP exchange,
//! retry policy (backon: exponential backoff with jitter, honouring
//! `retry-after-ms` / `Retry-After` / Gemini's `retryDelay`), turning the
//! reply into votes, and storing it. Must never lose an answer it paid for
//! (each is committed before the call returns), never turn a failure into a
//! FAIL (failures are abstentions with their reason), and never let an API
//! key reach a log, an error, the cache or the results.

pub mod config;
pub mod limiter;
pub mod provider;
pub mod verdicts;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use serde::Serialize;

use crate::cache::{Cache, CallKey, StoredResponse};
use config::JudgeConfig;
use limiter::Limiter;
use provider::{Reply, Usage};
use verdicts::JudgeVote;

use crate::prompt::Prompt;

/// Running totals for one judge, handed to the results.
#[derive(Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub cache_hits: AtomicU64,
    pub retries: AtomicU64,
    pub failures: AtomicU64,
    pub input_tokens: AtomicU64,
    pub output_tokens: AtomicU64,
    pub cached_tokens: AtomicU64,
}

/// A copy of [`Counters`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CounterSnapshot {
    pub requests: u64,
    pub cache_hits: u64,
    pub retries: u64,
    pub failures: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
}

impl Counters {
    pub fn snapshot(&self) -> CounterSnapshot {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CounterSnapshot {
            requests: l(&self.requests),
            cache_hits: l(&self.cache_hits),
            retries: l(&self.retries),
            failures: l(&self.failures),
            input_tokens: l(&self.input_tokens),
            output_tokens: l(&self.output_tokens),
            cached_tokens: l(&self.cached_tokens),
        }
    }
    fn add_usage(&self, u: &Usage) {
        self.input_tokens.fetch_add(u.input, Ordering::Relaxed);
        self.output_tokens.fetch_add(u.output, Ordering::Relaxed);
        self.cached_tokens.fetch_add(u.cached, Ordering::Relaxed);
    }
}

/// The result of one (prompt, judge, repeat) call.
#[derive(Debug, Clone)]
pub struct CallResult {
    /// A vote or an abstention for every rubric of the prompt.
    pub votes: BTreeMap<String, JudgeVote>,
    pub usage: Usage,
    pub from_cache: bool,
    pub attempts: u32,
    /// Set when the call itself failed (every vote is then an abstention).
    pub failure: Option<String>,
}

enum AttemptError {
    Retryable {
        message: String,
        retry_after: Option<Duration>,
    },
    /// This call cannot succeed (e.g. 400 for this prompt, 413).
    Fatal {
        message: String,
    },
    /// No call to this judge can succeed (401, 403, 404: key, access,
    /// model or base_url): traffic to it stops for the run.
    JudgeDown {
        message: String,
    },
}

impl AttemptError {
    fn message(&self) -> &str {
        match self {
            AttemptError::Retryable { message, .. } | AttemptError::Fatal { message } | AttemptError::JudgeDown { message } => message,
        }
    }
}

/// One configured judge, ready to call.
pub struct Judge {
    pub config: JudgeConfig,
    /// The API key. Never printed: `Judge` has no Debug impl on purpose.
    key: Option<String>,
    http: reqwest::Client,
    limiter: Limiter,
    pub counters: Counters,
    /// Set after a non-retryable error: no more traffic to this judge.
    disabled: Mutex<Option<String>>,
}

impl Judge {
    /// Builds a judge; the key is read from the environment variable the
    /// config names (absent or empty = no key).
    pub fn from_env(config: JudgeConfig) -> Result<Judge, String> {
        let key = std::env::var(&config.api_key_env).ok().filter(|k| !k.trim().is_empty());
        Judge::new(config, key)
    }

    pub fn new(config: JudgeConfig, key: Option<String>) -> Result<Judge, String> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs))
            .connect_timeout(Duration::from_secs(config.timeout_secs.min(10)))
            .build()
            .map_err(|e| format!("judge '{}': cannot build an HTTP client: {e}", config.name))?;
        let limiter = Limiter::new(config.rpm, config.tpm, config.max_concurrency);
        Ok(Judge { config, key, http, limiter, counters: Counters::default(), disabled: Mutex::new(None) })
    }

    pub fn has_key(&self) -> bool {
        self.key.is_some()
    }

    fn call_key<'a>(&'a self, prompt: &'a Prompt, repeat: u32, params: &'a str) -> CallKey<'a> {
        CallKey {
            provider: self.config.provider.as_str(),
            model: &self.config.model,
            params,
            template_version: &prompt.template_version,
            prompt_hash: &prompt.hash,
            repeat,
        }
    }

    /// Whether this call is already answered in the cache.
    pub fn is_cached(&self, prompt: &Prompt, repeat: u32, cache: &Cache) -> bool {
        let params = self.config.call_params();
        matches!(cache.get_response(&self.call_key(prompt, repeat, &params)), Ok(Some(_)))
    }

    /// Asks this judge about every rubric of `prompt`.
    pub async fn call(&self, prompt: &Prompt, repeat: u32, cache: &Cache) -> CallResult {
        let params = self.config.call_params();
        let key = self.call_key(prompt, repeat, &params);
        match cache.get_response(&key) {
            Ok(Some(stored)) => {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                return votes_from_stored(&stored, prompt, true);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("{e}; calling the judge instead"),
        }
        if let Some(reason) = self.disabled.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return abstain_all(prompt, format!("judge stopped earlier in this run: {reason}"), 0);
        }
        let Some(api_key) = &self.key else {
            return abstain_all(prompt, format!("no API key: set {}", self.config.api_key_env), 0);
        };

        let attempts = AtomicU32::new(0);
        let started = Instant::now();
        let estimate = prompt.estimated_tokens() + u64::from(self.config.max_output_tokens);
        let attempt = || async {
            if attempts.fetch_add(1, Ordering::Relaxed) > 0 {
                self.counters.retries.fetch_add(1, Ordering::Relaxed);
            }
            let _permit = self.limiter.acquire(estimate).await;
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            let reply = self.exchange(api_key, prompt).await?;
            match reply {
                Reply::Text { text, usage } => {
                    self.counters.add_usage(&usage);
                    match verdicts::parse(&text, &prompt.rubric_ids) {
                        Ok(_) => Ok(StoredResponse { outcome: "text".into(), text, usage, latency_ms: 0, attempts: 0 }),
                        Err(message) => Err(AttemptError::Retryable { message, retry_after: None }),
                    }
                }
                Reply::Declined { reason, usage } => {
                    self.counters.add_usage(&usage);
                    Ok(StoredResponse { outcome: "declined".into(), text: reason, usage, latency_ms: 0, attempts: 0 })
                }
            }
        };
        let cap = Duration::from_secs(self.config.retry_max_secs);
        let policy = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(self.config.retry_base_ms))
            .with_max_delay(cap)
            .with_max_times(self.config.max_attempts.saturating_sub(1) as usize)
            .with_jitter();
        let result = attempt
            .retry(policy)
            .when(|e| matches!(e, AttemptError::Retryable { .. }))
            .adjust(|e, backoff| {
                // Stop when the policy says stop; otherwise the server's
                // own delay, when it gave one, wins (capped).
                backoff.map(|d| match e {
                    AttemptError::Retryable { retry_after: Some(server), .. } => (*server).min(cap),
                    _ => d,
                })
            })
            .notify(|e, delay| {
                tracing::debug!(judge = %self.config.name, "retrying in {delay:?}: {}", e.message());
            })
            .await;
        let attempts = attempts.load(Ordering::Relaxed);
        match result {
            Ok(mut stored) => {
                stored.latency_ms = started.elapsed().as_millis() as u64;
                stored.attempts = attempts;
                if let Err(e) = cache.put_response(&key, &stored) {
                    tracing::error!("could not store judge '{}''s answer: {e}", self.config.name);
                }
                let mut out = votes_from_stored(&stored, prompt, false);
                out.attempts = attempts;
                out
            }
            Err(AttemptError::Fatal { message }) => {
                self.counters.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("{message}");
                abstain_all(prompt, message, attempts)
            }
            Err(AttemptError::JudgeDown { message }) => {
                self.counters.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!("{message}; no more calls go to judge '{}' in this run", self.config.name);
                let mut disabled = self.disabled.lock().unwrap_or_else(|p| p.into_inner());
                disabled.get_or_insert(message.clone());
                abstain_all(prompt, message, attempts)
            }
            Err(AttemptError::Retryable { message, .. }) => {
                self.counters.failures.fetch_add(1, Ordering::Relaxed);
                abstain_all(prompt, format!("judge '{}' failed after {attempts} attempt(s): {message}", self.config.name), attempts)
            }
        }
    }

    /// One HTTP request and the classification of its outcome.
    async fn exchange(&self, api_key: &str, prompt: &Prompt) -> Result<Reply, AttemptError> {
        let req = provider::build(&self.config, api_key, prompt);
        let mut builder = self.http.post(&req.url).json(&req.body);
        for (name, value) in &req.headers {
            builder = builder.header(*name, value);
        }
        let name = &self.config.name;
        let response = builder.send().await.map_err(|e| transport_error(name, e, self.config.timeout_secs))?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await.map_err(|e| transport_error(name, e, self.config.timeout_secs))?;
        if status.is_success() {
            return provider::parse(self.config.provider, &body)
                .map_err(|message| AttemptError::Retryable { message: format!("judge '{name}': {message}"), retry_after: None });
        }
        let code = status.as_u16();
        let header = |h: &str| headers.get(h).and_then(|v| v.to_str().ok()).map(str::trim);
        let retry_after = header("retry-after-ms")
            .and_then(|v| v.parse::<f64>().ok())
            .map(|ms| ms / 1000.0)
            .or_else(|| header("retry-after").and_then(|v| v.parse::<f64>().ok()))
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .or_else(|| header("retry-after").and_then(provider::http_date_delay))
            .or_else(|| provider::retry_delay_in_body(&body));
        let message = format!("judge '{name}' ({}): HTTP {code}: {}", self.config.provider.as_str(), provider::error_message(&body));
        let retryable = match header("x-should-retry") {
            Some("true") => true,
            Some("false") => false,
            _ => matches!(code, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529) || code >= 500,
        };
        if retryable {
            Err(AttemptError::Retryable { message, retry_after })
        } else if matches!(code, 401 | 403 | 404) {
            Err(AttemptError::JudgeDown { message })
        } else {
            Err(AttemptError::Fatal { message })
        }
    }
}

fn transport_error(judge: &str, e: reqwest::Error, timeout: u64) -> AttemptError {
    let message = if e.is_timeout() {
        format!("judge '{judge}': no answer within {timeout} s")
    } else {
        // without_url: the URL holds no secret, but keep errors short.
        format!("judge '{judge}': connection error: {}", e.without_url())
    };
    AttemptError::Retryable { message, retry_after: None }
}

fn abstain_all(prompt: &Prompt, reason: String, attempts: u32) -> CallResult {
    let votes = prompt.rubric_ids.iter().map(|id| (id.clone(), JudgeVote::Abstain { reason: reason.clone() })).collect();
    CallResult { votes, usage: Usage::default(), from_cache: false, attempts, failure: Some(reason) }
}

fn votes_from_stored(stored: &StoredResponse, prompt: &Prompt, from_cache: bool) -> CallResult {
    let votes = if stored.outcome == "declined" {
        prompt.rubric_ids.iter().map(|id| (id.clone(), JudgeVote::Abstain { reason: stored.text.clone() })).collect()
    } else {
        match verdicts::parse(&stored.text, &prompt.rubric_ids) {
            Ok(v) => v,
            // Only parseable replies are stored; a template change that
            // renamed rubrics would land here.
            Err(reason) => prompt.rubric_ids.iter().map(|id| (id.clone(), JudgeVote::Abstain { reason: reason.clone() })).collect(),
        }
    };
    CallResult { votes, usage: stored.usage, from_cache, attempts: stored.attempts, failure: None }
}
