//! What a dry run expects each judge to cost.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::cache::Cache;
use crate::judge::Judge;
use crate::prompt::Prompt;
use crate::report::Estimate;

/// Estimates accumulated over a run.
#[derive(Default)]
pub(super) struct Estimates {
    pub per_judge: BTreeMap<String, Estimate>,
    /// Prompt prefixes seen, per judge: shareable input.
    prefixes: HashSet<String>,
    /// Calls counted already (identical calls go out once).
    calls: HashSet<String>,
}

impl Estimates {
    pub(super) fn add(&mut self, judges: &[Arc<Judge>], p: &Prompt, cache: &Cache) {
        for j in judges {
            let e = self.per_judge.entry(j.config.name.clone()).or_default();
            for repeat in 0..j.config.repeats {
                if !self.calls.insert(j.call_key(p, repeat).digest()) {
                    continue;
                }
                if j.is_cached(p, repeat, cache) {
                    e.cached_calls += 1;
                    continue;
                }
                e.calls += 1;
                e.input_tokens += p.estimated_tokens();
                if !self.prefixes.insert(format!(
                    "{}\u{1f}{}",
                    j.config.name,
                    crate::hash::sha256_hex(&p.user_prefix)
                )) {
                    e.shared_prefix_tokens += p.estimated_prefix_tokens();
                }
                e.max_output_tokens += u64::from(j.config.max_output_tokens);
            }
        }
    }
}
