//! `[vote] mode = "escalate"`: the judges asked in order, each rubric
//! taking the verdict of the first judge sure enough of it.
//!
//! Owns: who is asked about which rubric in a cascade, when a judge's vote
//! is trusted (its repeats agree at least as much as its `threshold`), and
//! the record of why a rubric is left without a verdict. Must never give a
//! verdict no judge was sure enough of: such a rubric abstains and the row
//! is incomplete, never a silent PASS or FAIL. The thresholds, and so the
//! stated agreement with gold, come from `calibrate --target-agreement`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::decided::{Calls, narrowed_for};
use super::{Panel, Progress, confidence, record_vote};
use crate::cache::Cache;
use crate::judge::batch::Unanswered;
use crate::pipeline::prepare::Prepared;
use crate::prompt::Prompt;
use crate::score::{RubricKind, TaskResult};
use crate::verdict::Verdict;

/// Per (item, rubric): the judge whose vote settled it and that vote.
type Settled = BTreeMap<(usize, String), (usize, Verdict)>;

pub(super) async fn judge(
    items: Vec<Prepared>,
    panel: &Panel<'_>,
    cache: &Arc<Cache>,
    progress: &dyn Progress,
    skipped: &[Unanswered],
) -> Vec<TaskResult> {
    let mut items = items;
    let prompts: Vec<Option<Arc<Prompt>>> =
        items.iter_mut().map(|i| i.prompt.take().map(Arc::new)).collect();
    let mut calls: Calls = BTreeMap::new();
    let mut asked: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
    let mut settled: Settled = BTreeMap::new();
    for (ji, judge) in panel.judges.iter().enumerate() {
        let mut wave: Vec<(usize, Arc<Prompt>)> = Vec::new();
        for (ii, prompt) in prompts.iter().enumerate() {
            let Some(prompt) = prompt else { continue };
            let open: Vec<String> = prompt
                .rubric_ids
                .iter()
                .filter(|id| !settled.contains_key(&(ii, (*id).clone())))
                .cloned()
                .collect();
            if let Some(sent) = narrowed_for(judge, prompt, &open) {
                wave.push((ii, sent));
                asked.insert((ii, ji), open);
            }
        }
        progress.planned(u64::from(judge.config.repeats) * wave.len() as u64, 0);
        for (ii, result) in super::ask(ji, judge, wave, cache, progress, skipped).await {
            calls.entry((ii, ji)).or_default().push(result);
        }
        // A threshold above 1 is never met: a judge without one (a panel
        // built in code) is asked but never trusted.
        let threshold = judge.config.threshold.unwrap_or(f64::INFINITY);
        for ((ii, j), ids) in asked.iter().filter(|((_, j), _)| *j == ji) {
            let own = calls.get(&(*ii, *j)).map(Vec::as_slice).unwrap_or(&[]);
            for id in ids {
                if let Some(v) = super::combine_repeats(own, id).0
                    && confidence(own, id, v) >= threshold
                {
                    settled.insert((*ii, id.clone()), (ji, v));
                }
            }
        }
    }
    items
        .into_iter()
        .enumerate()
        .map(|(ii, item)| {
            let mut row = item.row;
            if prompts[ii].is_some() {
                vote(&mut row, panel, ii, &calls, &asked, &settled);
            }
            row.settle_judged();
            row
        })
        .collect()
}

/// Each rubric's verdict: the vote of the judge that settled it, or none,
/// with each asked judge's reason for not settling it.
fn vote(
    row: &mut TaskResult,
    panel: &Panel<'_>,
    ii: usize,
    calls: &Calls,
    asked: &BTreeMap<(usize, usize), Vec<String>>,
    settled: &Settled,
) {
    for rubric in row.rubrics.iter_mut().filter(|r| r.kind == RubricKind::Llm) {
        let by = settled.get(&(ii, rubric.id.clone())).copied();
        for (ji, judge) in panel.judges.iter().enumerate() {
            let name = &judge.config.name;
            if !asked.get(&(ii, ji)).is_some_and(|ids| ids.contains(&rubric.id)) {
                // Not asked: an earlier judge settled it.
                let settler = by.and_then(|(j, _)| panel.judges.get(j));
                let who = settler.map_or("an earlier judge", |j| j.config.name.as_str());
                rubric.not_asked.insert(name.clone(), format!("the verdict was settled by {who}"));
                continue;
            }
            let own = calls.get(&(ii, ji)).map(Vec::as_slice).unwrap_or(&[]);
            let vote = record_vote(rubric, name, own);
            if let (Some(v), None) = (vote, by.filter(|(j, _)| *j == ji)) {
                let c = confidence(own, &rubric.id, v);
                let t = judge.config.threshold.map_or("none".to_string(), |t| format!("{t:.2}"));
                rubric.abstentions.insert(
                    name.clone(),
                    format!("not sure enough: {c:.2} of its calls agree, its threshold is {t}"),
                );
            }
        }
        rubric.verdict = by.map(|(_, v)| v);
    }
}
