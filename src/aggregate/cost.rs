//! What judges cost: the price table (prices.toml) and the arithmetic from
//! billed tokens to USD.
//!
//! Owns: reading prices and every cost figure (live, batch, cached
//! input). Must never guess a price: a model without one has no cost
//! (`None`), never 0.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::judge::CounterSnapshot;

/// Prices in USD per million tokens, from prices.toml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default)]
    /// Per model id.
    pub models: BTreeMap<String, Price>,
}

/// One model's prices (USD per million tokens).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Prompt tokens.
    pub input: f64,
    /// Prompt tokens read from the provider's prompt cache.
    pub cached_input: f64,
    /// Prompt tokens written to the provider's prompt cache (Anthropic:
    /// 1.25 × input); `input` when absent.
    #[serde(default)]
    pub cache_write: Option<f64>,
    /// Output tokens.
    pub output: f64,
    /// Batch API prices, when the provider sells them.
    #[serde(default)]
    pub batch_input: Option<f64>,
    #[serde(default)]
    /// Batch API output tokens.
    pub batch_output: Option<f64>,
    /// Where the figures come from and when they were checked.
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    /// When the figures were last checked.
    pub checked: Option<String>,
}

/// Tokens billed, split by rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Billed {
    /// All prompt tokens (cached and cache-written included).
    pub input: u64,
    /// Of which read from the prompt cache.
    pub cached: u64,
    /// Of which written to the prompt cache.
    pub cache_write: u64,
    /// Output tokens.
    pub output: u64,
    /// Prompt tokens billed at the batch rate (cached ones included).
    pub batch_input: u64,
    /// Of which read from the prompt cache.
    pub batch_cached: u64,
    /// Output tokens billed at the batch rate.
    pub batch_output: u64,
}

impl Billed {
    /// A judge's totals, live and batch.
    pub fn of(c: &CounterSnapshot) -> Billed {
        Billed {
            input: c.input_tokens,
            cached: c.cached_tokens,
            cache_write: c.cache_write_tokens,
            output: c.output_tokens,
            batch_input: c.batch_input_tokens,
            batch_cached: c.batch_cached_tokens,
            batch_output: c.batch_output_tokens,
        }
    }
}

/// What "decided" voting did not send would have cost this judge: the
/// calls not made and the rubrics left out of narrowed prompts. Priced
/// from what the provider billed for what was asked in this run — prompt
/// tokens per estimated prompt token (the 4-characters estimate set
/// against the provider's tokenizer), output tokens per rubric asked (in
/// answers to whole, not narrowed, prompts where there are any), the
/// share of prompt tokens read from its prompt cache — from this judge's
/// live calls, or, when it made none, from the whole panel's (`panel`:
/// every judge's counters added); with no billed call anywhere, the
/// estimate as it is and no output. `None` when nothing was saved or the
/// model has no price.
pub(crate) fn saved_by_deciding(
    prices: &Prices,
    model: &str,
    c: &CounterSnapshot,
    panel: &CounterSnapshot,
) -> Option<f64> {
    if c.decided_skips == 0 && c.decided_skipped_tokens == 0 {
        return None;
    }
    let yardstick = if c.billed_estimate > 0 { c } else { panel };
    let ratio = |num: u64, den: u64| if den > 0 { num as f64 / den as f64 } else { 0.0 };
    let per_estimate = if yardstick.billed_estimate > 0 {
        ratio(yardstick.input_tokens, yardstick.billed_estimate)
    } else {
        1.0
    };
    let input = (c.decided_skipped_tokens as f64 * per_estimate).round() as u64;
    let cached = (input as f64 * ratio(yardstick.cached_tokens, yardstick.input_tokens)) as u64;
    // Output per rubric from answers to whole prompts: a narrowed reply's
    // fixed part (the wrapper around its verdicts) spread over its few
    // rubrics would overprice every rubric left out (by 12% on the bench).
    let whole = [c, panel].into_iter().find(|x| x.whole_rubrics > 0);
    let per_rubric = match whole {
        Some(w) => ratio(w.whole_output_tokens, w.whole_rubrics),
        None => ratio(yardstick.output_tokens, yardstick.billed_rubrics),
    };
    let output = (c.decided_skipped_rubrics as f64 * per_rubric).round() as u64;
    prices.cost(model, Billed { input, cached, output, ..Billed::default() })
}

/// Why a price table cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("price table {path}: {message}")]
pub struct PriceError {
    /// The price table.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl Prices {
    /// Reads a price table.
    pub fn load(path: &Path) -> Result<Prices, PriceError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PriceError { path: path.display().to_string(), message: e.to_string() })?;
        Prices::parse(&text, &path.display().to_string())
    }

    /// Reads a price table given as text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Prices, PriceError> {
        toml::from_str(text).map_err(|e| PriceError {
            path: path.to_string(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// Cost of billed tokens; `None` when the model has no price. Batch
    /// tokens use the batch rates (the live ones when the table has none);
    /// cached batch input gets the batch discount on the cached rate.
    pub fn cost(&self, model: &str, b: Billed) -> Option<f64> {
        let p = self.models.get(model)?;
        let plain = b.input.saturating_sub(b.cached).saturating_sub(b.cache_write) as f64;
        let write = p.cache_write.unwrap_or(p.input);
        let live = plain * p.input
            + b.cached as f64 * p.cached_input
            + b.cache_write as f64 * write
            + b.output as f64 * p.output;
        let batch_in = p.batch_input.unwrap_or(p.input);
        let discount = if p.input > 0.0 { batch_in / p.input } else { 1.0 };
        let batch = b.batch_input.saturating_sub(b.batch_cached) as f64 * batch_in
            + b.batch_cached as f64 * p.cached_input * discount
            + b.batch_output as f64 * p.batch_output.unwrap_or(p.output);
        Some((live + batch) / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_cache_writes_are_priced_at_their_rate() {
        let prices = Prices::parse(
            "[models.haiku]\ninput = 1.0\ncached_input = 0.1\ncache_write = 1.25\noutput = 5.0\n[models.plain]\ninput = 1.0\ncached_input = 0.1\noutput = 5.0\n",
            "test",
        )
        .unwrap_or_default();
        // 1M prompt tokens: 200k read from cache, 300k written, 500k plain; 100k out.
        let b = Billed {
            input: 1_000_000,
            cached: 200_000,
            cache_write: 300_000,
            output: 100_000,
            ..Default::default()
        };
        let cost = prices.cost("haiku", b).unwrap_or(f64::NAN);
        assert!((cost - (0.5 + 0.02 + 0.375 + 0.5)).abs() < 1e-9, "{cost}");
        // Without a cache_write rate, writes cost plain input.
        let plain = prices.cost("plain", b).unwrap_or(f64::NAN);
        assert!((plain - (0.5 + 0.02 + 0.3 + 0.5)).abs() < 1e-9, "{plain}");
        assert_eq!(prices.cost("unknown", b), None);
    }

    #[test]
    fn batch_tokens_are_priced_at_the_batch_rates() {
        let prices = Prices::parse(
            "[models.m]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\nbatch_input = 0.5\nbatch_output = 2.0\n[models.nobatch]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n",
            "test",
        )
        .unwrap_or_default();
        // 1M batch prompt tokens (100k of them cached), 100k batch output.
        let b = Billed {
            batch_input: 1_000_000,
            batch_cached: 100_000,
            batch_output: 100_000,
            ..Default::default()
        };
        let cost = prices.cost("m", b).unwrap_or(f64::NAN);
        assert!((cost - (0.45 + 0.005 + 0.2)).abs() < 1e-9, "{cost}");
        let live =
            Billed { input: 1_000_000, cached: 100_000, output: 100_000, ..Default::default() };
        let full = prices.cost("m", live).unwrap_or(f64::NAN);
        assert!((full - 2.0 * cost).abs() < 1e-9, "half price: {full} vs {cost}");
        let fallback = prices.cost("nobatch", b).unwrap_or(f64::NAN);
        assert!((fallback - full).abs() < 1e-9, "no batch rate: the live one");
    }
}
