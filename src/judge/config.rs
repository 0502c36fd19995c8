//! The panel file (TOML): judges, their limits, and the vote quorum.
//!
//! Owns: parsing and validating panel files, with errors that name the
//! line. Must never read an API key's value into anything that is printed.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// Which wire format a judge speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions, and every OpenAI-compatible server (vLLM,
    /// Ollama, gateways) through `base_url`.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini generateContent.
    Gemini,
}

impl Provider {
    /// The name used in panel files and cache keys.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }
    fn default_base_url(self) -> &'static str {
        match self {
            Provider::Openai => "https://api.openai.com/v1",
            Provider::Anthropic => "https://api.anthropic.com",
            Provider::Gemini => "https://generativelanguage.googleapis.com",
        }
    }
    /// Calls and bytes per batch, a little under the documented limits
    /// (OpenAI: 50,000 requests and 200 MB per input file; Anthropic:
    /// 100,000 requests and 256 MB; Gemini: inline requests under 20 MB).
    fn batch_limits(self) -> (u64, u64) {
        match self {
            Provider::Openai => (50_000, 190 << 20),
            Provider::Anthropic => (100_000, 240 << 20),
            Provider::Gemini => (50_000, 19 << 20),
        }
    }
    fn default_key_env(self) -> &'static str {
        match self {
            Provider::Openai => "OPENAI_API_KEY",
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Gemini => "GEMINI_API_KEY",
        }
    }
}

/// The `anthropic-version` the current official SDK sends.
pub(crate) const ANTHROPIC_VERSION: &str = "2026-10-21";

/// Which request field carries the output-token budget (OpenAI format).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputTokensField {
    /// `max_completion_tokens`, as the current API and SDK send it.
    #[default]
    MaxCompletionTokens,
    /// `max_tokens`, for OpenAI-compatible servers that only know it.
    MaxTokens,
}

/// How a reply is constrained to the verdict format (OpenAI format).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// `response_format: json_schema` with `strict: true`.
    #[default]
    JsonSchema,
    /// `response_format: json_object`: any JSON object.
    JsonObject,
    /// No `response_format`: the prompt alone asks for JSON.
    None,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PanelFile {
    #[serde(default)]
    vote: VoteFile,
    #[serde(default, rename = "judge")]
    judges: Vec<JudgeFile>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct VoteFile {
    quorum: Option<Spanned<i64>>,
    #[serde(default)]
    mode: VoteMode,
    order: Option<JudgeOrder>,
    /// What the escalate thresholds were fitted for (written by calibrate).
    target_agreement: Option<Spanned<f64>>,
    risk: Option<Spanned<f64>>,
}

/// How a panel asks its judges (`[vote] mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VoteMode {
    /// Every judge is asked about every rubric (the reference's way).
    #[default]
    All,
    /// Judges are asked in order, and a rubric stops being asked about
    /// once no vote still to come can change its verdict (or take it
    /// below the quorum): the same verdicts, fewer calls.
    Decided,
    /// Judges are asked in order, and a rubric takes the verdict of the
    /// first judge whose repeats agree on it at least as much as that
    /// judge's `threshold`; one no judge is that sure of abstains (the row
    /// is incomplete). The thresholds come from `calibrate
    /// --target-agreement A --risk R`: the verdicts agree with gold on at
    /// least A of the rubrics decided, with probability at least 1 − R.
    Escalate,
}

/// The order `decided` mode asks judges in (`[vote] order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeOrder {
    /// The panel file's order.
    Panel,
    /// Cheapest first, by the price table (a judge without a price last).
    Cheapest,
}

/// `rpm` / `tpm` as written: a number, or "auto".
#[derive(Deserialize)]
#[serde(untagged)]
enum RateField {
    Number(i64),
    Text(String),
}

/// A rate limit of a judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// This many a minute, paced evenly.
    PerMinute(u32),
    /// Learned from the provider's rate-limit headers.
    Auto,
}

impl Rate {
    /// The configured figure, when there is one.
    pub fn per_minute(self) -> Option<u32> {
        match self {
            Rate::PerMinute(n) => Some(n),
            Rate::Auto => None,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JudgeFile {
    name: Spanned<String>,
    provider: Provider,
    model: String,
    base_url: Option<String>,
    /// `""` = the server needs no key (a local server).
    api_key_env: Option<String>,
    /// Absent = "auto" where the provider sends rate-limit headers.
    rpm: Option<Spanned<RateField>>,
    tpm: Option<Spanned<RateField>>,
    max_concurrency: Spanned<i64>,
    timeout_secs: Spanned<i64>,
    max_attempts: Spanned<i64>,
    temperature: Option<Spanned<f64>>,
    max_output_tokens: Option<Spanned<i64>>,
    /// Independent calls per task (repeat index enters the cache key).
    repeats: Option<Spanned<i64>>,
    /// First backoff delay; later ones double, with jitter.
    retry_base_ms: Option<Spanned<i64>>,
    /// Longest backoff delay and longest honoured Retry-After.
    retry_max_secs: Option<Spanned<i64>>,
    anthropic_version: Option<Spanned<String>>,
    output_tokens_field: Option<OutputTokensField>,
    structured_output: Option<StructuredOutput>,
    max_reply_bytes: Option<Spanned<i64>>,
    /// How often a batch is polled (milliseconds).
    batch_poll_ms: Option<Spanned<i64>>,
    /// Calls per submitted batch, at most (default: the provider's limit).
    batch_max_requests: Option<Spanned<i64>>,
    /// Bytes per submitted batch, at most (default: under the provider's limit).
    batch_max_bytes: Option<Spanned<i64>>,
    /// Mode "escalate": the confidence at which its verdict is trusted.
    threshold: Option<Spanned<f64>>,
}

/// One judge's settings.
#[derive(Debug, Clone, Serialize)]
pub struct JudgeConfig {
    /// The name results and summaries use.
    pub name: String,
    /// Which wire format it speaks.
    pub provider: Provider,
    /// The model id the provider expects.
    pub model: String,
    /// Without a trailing slash.
    pub base_url: String,
    /// The environment variable holding the key; `None` when the server
    /// needs no key.
    pub api_key_env: Option<String>,
    /// Requests per minute, paced evenly (at most; the provider's headers
    /// may slow it down), or learned from the headers.
    pub rpm: Rate,
    /// Tokens per minute (prompt estimate + output budget), or learned.
    pub tpm: Rate,
    /// Calls in flight at once.
    pub max_concurrency: u32,
    /// Seconds a request may take.
    pub timeout_secs: u64,
    /// Attempts per call, retries included.
    pub max_attempts: u32,
    /// Sampling temperature; `None` = the provider's default.
    pub temperature: Option<f64>,
    /// Output-token budget per call.
    pub max_output_tokens: u32,
    /// Independent calls per prompt; the judge's vote is their majority.
    pub repeats: u32,
    /// First backoff delay, in milliseconds.
    pub retry_base_ms: u64,
    /// Longest backoff delay (and longest honoured server delay), in seconds.
    pub retry_max_secs: u64,
    /// The `anthropic-version` header.
    pub anthropic_version: String,
    /// Which request field carries the output budget (OpenAI format).
    pub output_tokens_field: OutputTokensField,
    /// How replies are constrained to the verdict format (OpenAI format).
    pub structured_output: StructuredOutput,
    /// A longer reply is a failed attempt (never read whole into memory).
    pub max_reply_bytes: u64,
    /// How often a submitted batch is polled, in milliseconds.
    pub batch_poll_ms: u64,
    /// Calls per submitted batch, at most.
    pub batch_max_requests: u64,
    /// Bytes per submitted batch, at most.
    pub batch_max_bytes: u64,
    /// Vote mode "escalate": the share of its repeats that must agree on a
    /// rubric for its verdict there to be trusted (fitted by `calibrate
    /// --target-agreement`); `None` outside that mode.
    pub threshold: Option<f64>,
}

/// Defaults of the optional settings.
const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 4096;
const DEFAULT_RETRY_BASE_MS: u64 = 1000;
const DEFAULT_RETRY_MAX_SECS: u64 = 60;
const DEFAULT_MAX_REPLY_BYTES: u64 = 4 << 20;
const DEFAULT_BATCH_POLL_MS: u64 = 30_000;

impl JudgeConfig {
    /// A judge with the provider's defaults and modest limits (60 rpm,
    /// 100,000 tpm, 4 at once, 60 s timeout, 4 attempts): a starting point
    /// for code that builds panels without a file.
    pub fn new(name: &str, provider: Provider, model: &str) -> JudgeConfig {
        JudgeConfig {
            name: name.to_string(),
            provider,
            model: model.to_string(),
            base_url: provider.default_base_url().to_string(),
            api_key_env: Some(provider.default_key_env().to_string()),
            rpm: Rate::PerMinute(60),
            tpm: Rate::PerMinute(100_000),
            max_concurrency: 4,
            timeout_secs: 60,
            max_attempts: 4,
            temperature: None,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS as u32,
            repeats: 1,
            retry_base_ms: DEFAULT_RETRY_BASE_MS,
            retry_max_secs: DEFAULT_RETRY_MAX_SECS,
            anthropic_version: ANTHROPIC_VERSION.to_string(),
            output_tokens_field: OutputTokensField::default(),
            structured_output: StructuredOutput::default(),
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            batch_poll_ms: DEFAULT_BATCH_POLL_MS,
            batch_max_requests: provider.batch_limits().0,
            batch_max_bytes: provider.batch_limits().1,
            threshold: None,
        }
    }

    /// The call parameters that change an answer; they enter the cache key.
    /// (Limits, timeouts, retry settings and the judge's name do not.)
    pub fn call_params(&self) -> String {
        let temperature =
            self.temperature.map(|t| format!("{t}")).unwrap_or_else(|| "default".into());
        let version = if self.provider == Provider::Anthropic {
            self.anthropic_version.as_str()
        } else {
            "-"
        };
        // base_url too: two OpenAI-compatible servers may serve different
        // models under one name.
        let mut params = format!(
            "temperature={temperature};max_output_tokens={};version={version};base_url={}",
            self.max_output_tokens, self.base_url
        );
        // Non-default request shapes only: existing cache keys stay valid.
        if self.output_tokens_field != OutputTokensField::default() {
            params.push_str(";output_tokens_field=max_tokens");
        }
        match self.structured_output {
            StructuredOutput::JsonSchema => {}
            StructuredOutput::JsonObject => params.push_str(";structured_output=json_object"),
            StructuredOutput::None => params.push_str(";structured_output=none"),
        }
        params
    }
}

/// A panel: judges and the quorum.
#[derive(Debug, Clone, Serialize)]
pub struct PanelConfig {
    /// The judges, in panel order.
    pub judges: Vec<JudgeConfig>,
    /// Valid votes a rubric needs for a verdict.
    pub quorum: usize,
    /// How the judges are asked.
    #[serde(default)]
    pub mode: VoteMode,
    /// The order `decided` mode asks them in, as written; unwritten, the
    /// cheapest first when the price table prices every judge, else the
    /// panel's.
    #[serde(default)]
    pub order: Option<JudgeOrder>,
    /// Mode "escalate": what its thresholds were fitted for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guarantee: Option<Guarantee>,
}

/// What a cascade's thresholds promise: the verdicts it gives agree with
/// gold on at least `target_agreement` of the rubrics it decides, with
/// probability at least 1 − `risk` (over the draw of the calibration set).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Guarantee {
    /// The least share of decided verdicts agreeing with gold.
    pub target_agreement: f64,
    /// The chance the calibration set was unlucky enough to miss it.
    pub risk: f64,
}

/// Why a panel file cannot be used. The variants' fields are the parts of
/// their message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[allow(missing_docs)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("cannot read panel file {path}: {source}")]
    Io { path: String, source: std::io::Error },
    /// The file is not a valid panel; the message names the line.
    #[error("panel file {path}: {message}")]
    Invalid { path: String, message: String },
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Errors located in one panel file.
struct Locator<'a> {
    text: &'a str,
    path: &'a str,
}

impl Locator<'_> {
    fn invalid(&self, message: String) -> ConfigError {
        ConfigError::Invalid { path: self.path.to_string(), message }
    }
    fn at(&self, span: std::ops::Range<usize>, message: String) -> ConfigError {
        self.invalid(format!("line {}: {message}", line_of(self.text, span.start)))
    }
    /// An integer setting within `lo..=hi`.
    fn int(
        &self,
        v: &Spanned<i64>,
        field: &str,
        judge: &str,
        lo: i64,
        hi: i64,
    ) -> Result<u64, ConfigError> {
        let n = *v.get_ref();
        if n < lo || n > hi {
            return Err(self.at(
                v.span(),
                format!("judge '{judge}': {field} must be between {lo} and {hi}, got {n}"),
            ));
        }
        Ok(n as u64)
    }
    /// A rate: a number in 1..=hi, or "auto" for a provider that sends
    /// rate-limit headers.
    /// `rpm` / `tpm`, or "auto" when left out: a starting point the
    /// provider's headers correct. Gemini sends no headers, so there the
    /// figure must be given.
    fn optional_rate(
        &self,
        v: &Option<Spanned<RateField>>,
        field: &str,
        judge: &Spanned<String>,
        provider: Provider,
        hi: i64,
    ) -> Result<Rate, ConfigError> {
        match v {
            Some(v) => self.rate(v, field, judge.get_ref(), provider, hi),
            None if provider != Provider::Gemini => Ok(Rate::Auto),
            None => Err(self.at(
                judge.span(),
                format!(
                    "judge '{}': give {field}: Gemini sends no rate-limit headers to learn it from (your quota is in Google AI Studio)",
                    judge.get_ref()
                ),
            )),
        }
    }

    fn rate(
        &self,
        v: &Spanned<RateField>,
        field: &str,
        judge: &str,
        provider: Provider,
        hi: i64,
    ) -> Result<Rate, ConfigError> {
        match v.get_ref() {
            RateField::Number(n) => {
                let spanned = Spanned::new(v.span(), *n);
                Ok(Rate::PerMinute(self.int(&spanned, field, judge, 1, hi)? as u32))
            }
            RateField::Text(t) if t.trim() == "auto" && provider != Provider::Gemini => Ok(Rate::Auto),
            RateField::Text(t) if t.trim() == "auto" => Err(self.at(
                v.span(),
                format!(
                    "judge '{judge}': {field} = \"auto\" needs rate-limit headers, which Gemini does not send; give a number"
                ),
            )),
            RateField::Text(t) => Err(self.at(
                v.span(),
                format!("judge '{judge}': {field} must be a number or \"auto\", got {t:?}"),
            )),
        }
    }

    fn opt(
        &self,
        v: &Option<Spanned<i64>>,
        field: &str,
        judge: &str,
        range: (i64, i64),
        default: u64,
    ) -> Result<u64, ConfigError> {
        match v {
            Some(v) => self.int(v, field, judge, range.0, range.1),
            None => Ok(default),
        }
    }
}

impl PanelConfig {
    /// Reads and validates a panel file.
    pub fn load(path: &Path) -> Result<PanelConfig, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ConfigError::Io { path: path.display().to_string(), source })?;
        PanelConfig::parse(&text, &path.display().to_string())
    }

    /// Validates a panel given as text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<PanelConfig, ConfigError> {
        let loc = Locator { text, path };
        // toml's messages already say "TOML parse error at line N, column M".
        let file: PanelFile =
            toml::from_str(text).map_err(|e| loc.invalid(e.to_string().trim_end().to_string()))?;
        if file.judges.is_empty() {
            return Err(loc.invalid("no [[judge]] tables: a panel needs at least one judge".into()));
        }
        let mut judges: Vec<JudgeConfig> = Vec::new();
        for j in &file.judges {
            let judge = judge(&loc, j)?;
            if judges.iter().any(|o| o.name == judge.name) {
                return Err(loc.at(j.name.span(), format!("two judges are named '{}'", judge.name)));
            }
            judges.push(judge);
        }
        let quorum = match &file.vote.quorum {
            Some(q) => {
                let n = *q.get_ref();
                if n < 1 || n as usize > judges.len() {
                    let msg = format!(
                        "quorum must be between 1 and the number of judges ({}), got {n}",
                        judges.len()
                    );
                    return Err(loc.at(q.span(), msg));
                }
                n as usize
            }
            None => 2.min(judges.len()),
        };
        let guarantee = guarantee(&loc, &file.vote, &judges)?;
        Ok(PanelConfig { judges, quorum, mode: file.vote.mode, order: file.vote.order, guarantee })
    }
}

/// The escalate settings checked together: every judge of an escalating
/// panel has a threshold (a judge that is never trusted only costs), none
/// of another panel has one, and the guarantee is given whole or not at all.
fn guarantee(
    loc: &Locator<'_>,
    vote: &VoteFile,
    judges: &[JudgeConfig],
) -> Result<Option<Guarantee>, ConfigError> {
    let escalate = vote.mode == VoteMode::Escalate;
    if let Some(j) = judges.iter().find(|j| j.threshold.is_some() != escalate) {
        let msg = if escalate {
            format!(
                "judge '{}': vote mode \"escalate\" needs a threshold for every judge (redjury calibrate --target-agreement A --risk R writes them)",
                j.name
            )
        } else {
            format!("judge '{}': a threshold applies to vote mode \"escalate\" only", j.name)
        };
        return Err(loc.invalid(msg));
    }
    let share = |v: &Spanned<f64>, field: &str, lo: f64, hi: f64| {
        let x = *v.get_ref();
        if x.is_finite() && x > lo && x < hi {
            Ok(x)
        } else {
            Err(loc.at(v.span(), format!("{field} must be above {lo} and below {hi}, got {x}")))
        }
    };
    match (&vote.target_agreement, &vote.risk) {
        (None, None) => Ok(None),
        (Some(a), Some(r)) if escalate => Ok(Some(Guarantee {
            target_agreement: share(a, "target_agreement", 0.5, 1.0)?,
            risk: share(r, "risk", 0.0, 1.0)?,
        })),
        (Some(v), _) | (_, Some(v)) => Err(loc.at(
            v.span(),
            "target_agreement and risk go together, in vote mode \"escalate\" only".into(),
        )),
    }
}

/// Validates one `[[judge]]` table.
fn judge(loc: &Locator<'_>, j: &JudgeFile) -> Result<JudgeConfig, ConfigError> {
    let name = j.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(loc.at(j.name.span(), "judge name is empty".into()));
    }
    let n = name.as_str();
    let anthropic_version = anthropic_version(loc, j, n)?;
    let temperature = temperature(loc, j, n, &anthropic_version)?;
    let base_url = base_url(loc, j, n)?;
    if j.provider != Provider::Openai
        && (j.output_tokens_field.is_some() || j.structured_output.is_some())
    {
        let msg = format!(
            "judge '{n}': output_tokens_field and structured_output apply to provider \"openai\" only"
        );
        return Err(loc.at(j.name.span(), msg));
    }
    let api_key_env = match j.api_key_env.as_deref().map(str::trim) {
        Some("") => None,
        Some(env) => Some(env.to_string()),
        None => Some(j.provider.default_key_env().to_string()),
    };
    Ok(JudgeConfig {
        name: name.clone(),
        provider: j.provider,
        model: j.model.clone(),
        base_url,
        api_key_env,
        rpm: loc.optional_rate(&j.rpm, "rpm", &j.name, j.provider, 1_000_000)?,
        tpm: loc.optional_rate(&j.tpm, "tpm", &j.name, j.provider, 1_000_000_000)?,
        max_concurrency: loc.int(&j.max_concurrency, "max_concurrency", n, 1, 1024)? as u32,
        timeout_secs: loc.int(&j.timeout_secs, "timeout_secs", n, 1, 3600)?,
        max_attempts: loc.int(&j.max_attempts, "max_attempts", n, 1, 20)? as u32,
        temperature,
        max_output_tokens: loc.opt(
            &j.max_output_tokens,
            "max_output_tokens",
            n,
            (1, 1_000_000),
            DEFAULT_MAX_OUTPUT_TOKENS,
        )? as u32,
        repeats: loc.opt(&j.repeats, "repeats", n, (1, 100), 1)? as u32,
        retry_base_ms: loc.opt(
            &j.retry_base_ms,
            "retry_base_ms",
            n,
            (1, 60_000),
            DEFAULT_RETRY_BASE_MS,
        )?,
        retry_max_secs: loc.opt(
            &j.retry_max_secs,
            "retry_max_secs",
            n,
            (1, 3600),
            DEFAULT_RETRY_MAX_SECS,
        )?,
        anthropic_version,
        output_tokens_field: j.output_tokens_field.unwrap_or_default(),
        structured_output: j.structured_output.unwrap_or_default(),
        threshold: match &j.threshold {
            Some(t) if (0.0..=1.0).contains(t.get_ref()) => Some(*t.get_ref()),
            Some(t) => {
                let msg =
                    format!("judge '{n}': threshold must be between 0 and 1, got {}", t.get_ref());
                return Err(loc.at(t.span(), msg));
            }
            None => None,
        },
        max_reply_bytes: loc.opt(
            &j.max_reply_bytes,
            "max_reply_bytes",
            n,
            (1024, 1 << 30),
            DEFAULT_MAX_REPLY_BYTES,
        )?,
        batch_poll_ms: loc.opt(
            &j.batch_poll_ms,
            "batch_poll_ms",
            n,
            (10, 3_600_000),
            DEFAULT_BATCH_POLL_MS,
        )?,
        batch_max_requests: loc.opt(
            &j.batch_max_requests,
            "batch_max_requests",
            n,
            (1, j.provider.batch_limits().0 as i64),
            j.provider.batch_limits().0,
        )?,
        batch_max_bytes: loc.opt(
            &j.batch_max_bytes,
            "batch_max_bytes",
            n,
            (1024, j.provider.batch_limits().1 as i64),
            j.provider.batch_limits().1,
        )?,
    })
}

/// `temperature`: 0 to 2, and only where the Anthropic version still
/// takes one.
fn temperature(
    loc: &Locator<'_>,
    j: &JudgeFile,
    n: &str,
    anthropic_version: &str,
) -> Result<Option<f64>, ConfigError> {
    let Some(t) = &j.temperature else { return Ok(None) };
    if !(0.0..=2.0).contains(t.get_ref()) {
        return Err(loc.at(
            t.span(),
            format!("judge '{n}': temperature must be within 0..2, got {}", t.get_ref()),
        ));
    }
    if j.provider == Provider::Anthropic && anthropic_version >= "2026-10-21" {
        let msg = format!(
            "judge '{n}': anthropic-version {anthropic_version} does not accept temperature; remove it, or pin anthropic_version = \"2023-06-01\" with a model that still takes it"
        );
        return Err(loc.at(t.span(), msg));
    }
    Ok(Some(*t.get_ref()))
}

/// `base_url`: the provider's own when absent; http or https.
fn base_url(loc: &Locator<'_>, j: &JudgeFile, n: &str) -> Result<String, ConfigError> {
    let base_url = j.base_url.clone().unwrap_or_else(|| j.provider.default_base_url().to_string());
    let base_url = base_url.trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(loc.at(
            j.name.span(),
            format!("judge '{n}': base_url must start with http:// or https://, got {base_url:?}"),
        ));
    }
    Ok(base_url)
}

/// `anthropic_version`: a date, YYYY-MM-DD, as the API names its versions.
fn anthropic_version(loc: &Locator<'_>, j: &JudgeFile, judge: &str) -> Result<String, ConfigError> {
    let Some(v) = &j.anthropic_version else { return Ok(ANTHROPIC_VERSION.to_string()) };
    let s = v.get_ref().trim();
    let b = s.as_bytes();
    let is_date = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter().enumerate().all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && (1..=12).contains(&s[5..7].parse::<u32>().unwrap_or(0))
        && (1..=31).contains(&s[8..10].parse::<u32>().unwrap_or(0));
    if !is_date {
        let msg = format!(
            "judge '{judge}': anthropic_version must be a date like \"{ANTHROPIC_VERSION}\", got {s:?}"
        );
        return Err(loc.at(v.span(), msg));
    }
    Ok(s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"
[[judge]]
name = "j"
provider = "openai"
model = "m"
rpm = 60
tpm = 100000
max_concurrency = 2
timeout_secs = 30
max_attempts = 3
"#;

    #[test]
    fn the_shipped_panel_loads() {
        let p = PanelConfig::load(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/panel.toml")))
            .expect("panel.toml loads");
        let providers: Vec<_> = p.judges.iter().map(|j| j.provider).collect();
        assert_eq!(providers, [Provider::Openai, Provider::Anthropic, Provider::Gemini]);
        assert_eq!(p.quorum, 2);
    }

    /// An escalating panel states its thresholds and guarantee whole: a
    /// judge without a threshold would only cost, one outside the mode
    /// would be ignored, half a guarantee is no promise.
    #[test]
    fn escalate_panels_are_checked_whole() {
        let err = |vote: &str, judge: &str| {
            let text = format!("[vote]\n{vote}\n{}", ONE.replace("max_attempts = 3", judge));
            PanelConfig::parse(&text, "p.toml").err().map(|e| e.to_string())
        };
        let ok = "mode = \"escalate\"\ntarget_agreement = 0.9\nrisk = 0.1";
        assert_eq!(err(ok, "max_attempts = 3\nthreshold = 0.8"), None);
        let p = PanelConfig::parse(
            &format!(
                "[vote]\n{ok}\n{}",
                ONE.replace("max_attempts = 3", "max_attempts = 3\nthreshold = 0.8")
            ),
            "p.toml",
        )
        .expect("loads");
        assert_eq!(p.judges[0].threshold, Some(0.8));
        assert_eq!(p.guarantee, Some(Guarantee { target_agreement: 0.9, risk: 0.1 }));
        let no_threshold = err(ok, "max_attempts = 3").unwrap_or_default();
        assert!(no_threshold.contains("needs a threshold for every judge"), "{no_threshold}");
        let outside =
            err("mode = \"decided\"", "max_attempts = 3\nthreshold = 0.8").unwrap_or_default();
        assert!(outside.contains("applies to vote mode \"escalate\" only"), "{outside}");
        let half = err("mode = \"escalate\"\nrisk = 0.1", "max_attempts = 3\nthreshold = 0.8");
        assert!(half.unwrap_or_default().contains("go together"));
        let high = err(ok, "max_attempts = 3\nthreshold = 1.5").unwrap_or_default();
        assert!(high.contains("threshold must be between 0 and 1"), "{high}");
    }

    #[test]
    fn defaults() {
        let p = PanelConfig::parse(ONE, "p.toml").expect("loads");
        let j = &p.judges[0];
        assert_eq!(j.base_url, "https://api.openai.com/v1");
        assert_eq!(j.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!((j.repeats, j.max_output_tokens), (1, 4096));
        assert_eq!(
            (j.output_tokens_field, j.structured_output),
            (OutputTokensField::MaxCompletionTokens, StructuredOutput::JsonSchema)
        );
        assert_eq!(p.quorum, 1);
        let keyless = PanelConfig::parse(
            &ONE.replace("model = \"m\"", "model = \"m\"\napi_key_env = \"\""),
            "p.toml",
        )
        .expect("loads");
        assert_eq!(keyless.judges[0].api_key_env, None, "an empty api_key_env means no key");
    }

    #[test]
    fn rates_are_numbers_or_auto_where_headers_come() {
        let auto =
            ONE.replace("rpm = 60", "rpm = \"auto\"").replace("tpm = 100000", "tpm = \"auto\"");
        let p = PanelConfig::parse(&auto, "p.toml").expect("loads");
        assert_eq!((p.judges[0].rpm, p.judges[0].tpm), (Rate::Auto, Rate::Auto));
        let gemini = auto.replace("provider = \"openai\"", "provider = \"gemini\"");
        let e = error(&gemini);
        assert!(e.contains("line 6") && e.contains("Gemini does not send"), "{e}");
        let e = error(&ONE.replace("rpm = 60", "rpm = \"fast\""));
        assert!(e.contains("rpm must be a number or \"auto\", got \"fast\""), "{e}");
        // Left out: "auto" where headers come, an error naming the judge for Gemini.
        let unset = ONE.replace("rpm = 60\n", "").replace("tpm = 100000\n", "");
        let p = PanelConfig::parse(&unset, "p.toml").expect("loads");
        assert_eq!((p.judges[0].rpm, p.judges[0].tpm), (Rate::Auto, Rate::Auto));
        let e = error(&unset.replace("provider = \"openai\"", "provider = \"gemini\""));
        assert!(e.contains("judge 'j': give rpm: Gemini sends no rate-limit headers"), "{e}");
    }

    fn error(text: &str) -> String {
        PanelConfig::parse(text, "p.toml").err().map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_line() {
        let e = error(&format!("{ONE}colour = \"red\"\n"));
        assert!(e.contains("line 11") && e.contains("unknown field `colour`"), "{e}");
        assert_eq!(
            error(&ONE.replace("rpm = 60", "rpm = 0")),
            "panel file p.toml: line 6: judge 'j': rpm must be between 1 and 1000000, got 0"
        );
        let e = error(&ONE.replace("provider = \"openai\"", "provider = \"mistral\""));
        assert!(e.contains("line 4") && e.contains("unknown variant `mistral`"), "{e}");
        let e = error(&format!("{ONE}\n[vote]\nquorum = 3\n"));
        assert!(
            e.contains("line 13")
                && e.contains("quorum must be between 1 and the number of judges (1)"),
            "{e}"
        );
        let anthropic = ONE
            .replace("\"openai\"", "\"anthropic\"")
            .replace("max_attempts = 3", "max_attempts = 3\ntemperature = 0.0");
        let e = error(&anthropic);
        assert!(e.contains("line 11") && e.contains("does not accept temperature"), "{e}");
    }

    #[test]
    fn values_out_of_any_sane_range_are_errors() {
        let e = error(&ONE.replace("max_attempts = 3", "max_attempts = 1000000"));
        assert_eq!(
            e,
            "panel file p.toml: line 10: judge 'j': max_attempts must be between 1 and 20, got 1000000"
        );
        let anthropic = ONE.replace("\"openai\"", "\"anthropic\"");
        let e = error(&format!("{anthropic}anthropic_version = \"latest\"\n"));
        assert!(e.contains("line 11") && e.contains("anthropic_version must be a date"), "{e}");
        let e = error(&format!("{anthropic}anthropic_version = \"2023-13-01\"\n"));
        assert!(e.contains("must be a date"), "{e}");
        assert!(error(&format!("{anthropic}anthropic_version = \"2023-06-01\"\n")).is_empty());
        let e = error(&format!("{anthropic}structured_output = \"json_object\"\n"));
        assert!(e.contains("apply to provider \"openai\" only"), "{e}");
        let e = error(&ONE.replace("timeout_secs = 30", "timeout_secs = 0"));
        assert!(e.contains("timeout_secs must be between 1 and 3600"), "{e}");
    }
}
