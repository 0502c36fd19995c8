//! `summary.json`: the figures of a run, what was dropped and why, and
//! what each judge cost.
//!
//! Owns: the summary's contract (fields are only ever added). Must never present a figure over fewer rows than the run
//! had without saying so (the counts and problem lists travel with it).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::aggregate::{self, Bootstrap, Counts, Figures};
use crate::judge::CounterSnapshot;
use crate::score::{Status, TaskResult};

/// What a dry run expects a judge to cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Calls not yet in the cache.
    pub calls: u64,
    /// Calls already in the cache.
    pub cached_calls: u64,
    /// Estimated prompt tokens.
    pub input_tokens: u64,
    /// Input tokens in prompt prefixes shared with an earlier call.
    pub shared_prefix_tokens: u64,
    /// Upper bound: every call uses its whole output budget.
    pub max_output_tokens: u64,
    /// The upper bound in USD, when the model has a price.
    pub max_cost_usd: Option<f64>,
}

/// One judge's part in a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgeSummary {
    /// The provider's name.
    pub provider: String,
    /// The model id.
    pub model: String,
    /// The environment variable the key is read from (never the key);
    /// empty when the server needs no key.
    #[serde(default)]
    pub api_key_env: String,
    /// Whether the judge could be called (a key, or none needed).
    pub has_key: bool,
    /// Why traffic to the judge stopped during the run, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    #[serde(flatten)]
    /// Requests, cache hits, retries, failures and tokens.
    pub counters: CounterSnapshot,
    /// Share of input tokens the provider served from its prompt cache.
    pub cached_share: Option<f64>,
    /// `None` when prices.toml has no price for the model.
    pub cost: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// What a dry run expects (dry runs only).
    pub estimate: Option<Estimate>,
    /// The rate limits the provider reported and the pace the judge ended
    /// at (when it sent any request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_limits: Option<crate::judge::limiter::ObservedLimits>,
    /// What the calls vote mode "decided" did not make would have cost
    /// (USD, estimated from what this run billed: see `decided_skips`,
    /// `decided_skipped_tokens`, `decided_skipped_rubrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_usd: Option<f64>,
}

/// Figures over each task's best trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BestAtK {
    /// The most trials of any task.
    pub k: usize,
    /// `overall` over each task's best trial.
    pub overall: Option<f64>,
    /// `turn_weighted` over each task's best trial.
    pub turn_weighted: Option<f64>,
}

/// An output file that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unusable {
    /// The file.
    pub path: String,
    /// Why it cannot be scored.
    pub reason: String,
}

/// Rows that did not get a reward from their rubrics, grouped by reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Problems {
    /// reason → rows ("task trial N").
    pub incomplete: BTreeMap<String, Vec<String>>,
    /// Gate failures by reason.
    pub gate_failed: BTreeMap<String, Vec<String>>,
    /// Rows whose reward a required item zeroed.
    #[serde(default)]
    pub required_unmet: BTreeMap<String, Vec<String>>,
    /// Rows no judge was called for (a dry run, or no judge has a key).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
}

impl Problems {
    fn of(rows: &[TaskResult]) -> Problems {
        let mut p = Problems::default();
        for r in rows {
            let id = if r.trial == "1" {
                r.task.clone()
            } else {
                format!("{} trial {}", r.task, r.trial)
            };
            let why = r.reason.clone().unwrap_or_default();
            match r.status {
                Status::Incomplete => p.incomplete.entry(why).or_default().push(id),
                Status::GateFailed => {
                    p.gate_failed.entry(r.gate.reason.clone()).or_default().push(id)
                }
                Status::Scored if r.reason.is_some() => {
                    p.required_unmet.entry(why).or_default().push(id)
                }
                Status::Pending => p.pending.push(id),
                Status::Scored => {}
            }
        }
        p
    }
}

/// How the headline's reference CI was drawn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReferenceCi {
    /// The evaluated model's name (`--model`), whose bytes seed the draws
    /// as the reference seeds them; `None` = `seed` was given directly.
    pub model: Option<String>,
    pub seed: u64,
    pub resamples: usize,
}

/// summary.json.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// "redjury.summary".
    pub format: String,
    /// The format's version.
    pub version: u32,
    /// Whether no judge was called.
    pub dry_run: bool,
    /// Rows by status.
    pub counts: Counts,
    #[serde(flatten)]
    /// The figures.
    pub figures: Figures,
    /// The reference's 95% CI of the headline: the (scenario, turn) cells
    /// resampled (see `reference_ci`).
    pub ci95: Option<[f64; 2]>,
    #[serde(default)]
    /// How `ci95` was drawn.
    pub ci95_reference: Option<ReferenceCi>,
    /// redjury's 95% CI over input groups (settings in `bootstrap`).
    #[serde(default)]
    pub ci95_groups: Option<[f64; 2]>,
    /// Every breakdown's 95% interval (input groups resampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95_breakdowns: Option<aggregate::breakdowns::BreakdownCis>,
    /// The group bootstrap's settings.
    pub bootstrap: Option<Bootstrap>,
    /// Figures over each task's best trial.
    pub best_at_k: BestAtK,
    /// Each judge's part.
    pub judges: BTreeMap<String, JudgeSummary>,
    /// The panel's quorum.
    pub quorum: usize,
    /// The prompt templates' version.
    pub template_version: String,
    /// Tasks with no output file.
    pub missing: Vec<String>,
    /// Output files that match no task.
    pub unmatched_outputs: Vec<String>,
    /// Files named after a task that could not be used.
    #[serde(default)]
    pub unusable_outputs: Vec<Unusable>,
    #[serde(default)]
    /// Rows left out of the figures or zeroed, by reason.
    pub problems: Problems,
    /// What the run itself has to say besides the figures: what happened
    /// to the cache (opened read-only, its file deleted or replaced while
    /// open), a summary rebuilt because it no longer matched its rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Requests the reward service answered with a row it had already
    /// logged for the same output (a trainer asking again): answered and
    /// counted here, not written again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub repeated_requests: u64,
    /// Which part of a sharded run this folder holds (`score --shard`);
    /// `redjury merge` puts the parts back together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The leaderboard's docx-shape sections: surgicalness and the turn-1
    /// verbosity trap, the run's row (under the model's name, else
    /// "run") beside the expert redlines' (`aggregate::shape`).
    #[serde(default, skip_serializing_if = "aggregate::shape::DocxShape::is_empty")]
    pub docx_shape: aggregate::shape::DocxShape,
    /// The reference's L0–L4 severity of every rubric record in the
    /// figures (`aggregate::severity`); it never changes a reward.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<aggregate::severity::Severity>,
    /// Judge rubrics decided by one vote (`aggregate::pivotal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pivotal: Option<aggregate::pivotal::Pivotal>,
}

/// One part of a run split over several processes: part `index` (from 0)
/// of `of`, as `score --shard K/N` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// This part, from 0.
    pub index: u32,
    /// How many parts.
    pub of: u32,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || {
            format!(
                "--shard {s:?}: give K/N with 0 <= K < N, e.g. 0/4 (a Kubernetes indexed Job's completion index as K)"
            )
        };
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, of): (u32, u32) =
            (k.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if of == 0 || index >= of {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Summary {
    /// Figures, counts and problems of a run's rows (judges are added by
    /// the caller). `model` names the evaluated model (it seeds the
    /// reference's CI).
    pub fn build(
        rows: &[TaskResult],
        missing: Vec<String>,
        unmatched: Vec<String>,
        boot: Bootstrap,
        model: Option<&str>,
    ) -> Summary {
        let reference = ReferenceCi {
            model: model.map(str::to_string),
            seed: model.map(aggregate::model_seed).unwrap_or(boot.seed),
            resamples: boot.resamples,
        };
        let counted = rows.iter().any(|r| r.counts());
        let figures = aggregate::figures(rows);
        let best = aggregate::best_of_trials(rows);
        let mut trials: BTreeMap<&str, usize> = BTreeMap::new();
        for r in rows {
            *trials.entry(&r.task).or_default() += 1;
        }
        let best_figures = aggregate::figures(&best);
        Summary {
            format: "redjury.summary".into(),
            version: 1,
            dry_run: false,
            counts: aggregate::counts(rows, missing.len()),
            ci95: counted.then(|| {
                aggregate::reference_ci(
                    rows,
                    Bootstrap { seed: reference.seed, resamples: reference.resamples },
                )
            }),
            ci95_reference: Some(reference),
            ci95_groups: aggregate::bootstrap_ci(rows, boot),
            ci95_breakdowns: aggregate::breakdowns::breakdown_cis(rows, boot),
            bootstrap: Some(boot),
            best_at_k: BestAtK {
                k: trials.values().copied().max().unwrap_or(0),
                overall: best_figures.overall,
                turn_weighted: best_figures.turn_weighted,
            },
            figures,
            judges: BTreeMap::new(),
            quorum: 0,
            template_version: String::new(),
            missing,
            unmatched_outputs: unmatched,
            unusable_outputs: Vec::new(),
            problems: Problems::of(rows),
            notes: Vec::new(),
            repeated_requests: 0,
            shard: None,
            docx_shape: aggregate::shape::docx_shape(rows, model.unwrap_or("run")),
            severity: aggregate::severity::severity(rows),
            pivotal: aggregate::pivotal::pivotal(rows),
        }
    }

    /// Rows counted in the figures.
    pub fn counted(&self) -> usize {
        self.counts.scored + self.counts.gate_failed
    }

    /// Whether anything was left out of the figures or could not be used.
    pub fn has_problems(&self) -> bool {
        let c = &self.counts;
        c.incomplete + c.pending + c.gate_failed + c.missing_outputs > 0
            || !self.unmatched_outputs.is_empty()
            || !self.unusable_outputs.is_empty()
    }
}
