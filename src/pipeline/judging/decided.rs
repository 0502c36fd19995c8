//! `[vote] mode = "decided"`: the judges asked in order, each only about
//! the rubrics whose verdict is still open.
//!
//! Owns: which judge is asked about which rubric, and the record of who
//! was not asked and why. The first wave is the fewest judges whose
//! agreement could decide (a majority of the panel, and at least the
//! quorum); each later judge is asked, with a prompt narrowed to them,
//! about the rubrics no set of votes still to come could settle the same
//! way. Must never settle a rubric that a later vote (a PASS, a FAIL or an
//! abstention) could still change, or take below the quorum: the verdicts
//! are those every judge would give (`all` mode), whatever they answer.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::{Panel, Progress, combine_repeats, record_vote};
use crate::cache::Cache;
use crate::judge::CallResult;
use crate::judge::batch::Unanswered;
use crate::panel::{self, first_wave, settled};
use crate::pipeline::prepare::Prepared;
use crate::prompt::Prompt;
use crate::score::{RubricKind, TaskResult};
use crate::verdict::Verdict;

/// What one item's calls so far say: per judge, its calls.
type Calls = BTreeMap<(usize, usize), Vec<CallResult>>;

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
    let judges = panel.judges;
    let first = first_wave(judges.len(), panel.quorum);
    let mut calls: Calls = BTreeMap::new();
    // (item, judge) → the rubrics that judge was asked about.
    let mut asked: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
    for ji in 0..judges.len() {
        let mut wave: Vec<(usize, Arc<Prompt>)> = Vec::new();
        for (ii, prompt) in prompts.iter().enumerate() {
            let Some(prompt) = prompt else { continue };
            if ji < first {
                wave.push((ii, prompt.clone()));
                asked.insert((ii, ji), prompt.rubric_ids.clone());
                continue;
            }
            let open = open_rubrics(prompt, &calls, ii, ji, judges.len() - ji, panel.quorum);
            let judge = &judges[ji];
            let repeats = u64::from(judge.config.repeats);
            if open.len() == prompt.rubric_ids.len() {
                wave.push((ii, prompt.clone()));
            } else if let Some(narrow) = prompt.narrowed(&open) {
                let saved = prompt.estimated_tokens().saturating_sub(narrow.estimated_tokens());
                judge.counters.decided_skipped_tokens.fetch_add(saved * repeats, Ordering::Relaxed);
                wave.push((ii, Arc::new(narrow)));
            } else {
                // Every rubric is settled: this judge is not asked.
                judge.counters.decided_skips.fetch_add(repeats, Ordering::Relaxed);
                judge
                    .counters
                    .decided_skipped_tokens
                    .fetch_add(prompt.estimated_tokens() * repeats, Ordering::Relaxed);
                continue;
            }
            asked.insert((ii, ji), open);
        }
        let planned: u64 = u64::from(judges[ji].config.repeats) * wave.len() as u64;
        progress.planned(planned, 0);
        for (ii, result) in super::ask(ji, &judges[ji], wave, cache, progress, skipped).await {
            calls.entry((ii, ji)).or_default().push(result);
        }
    }
    items
        .into_iter()
        .enumerate()
        .map(|(ii, item)| {
            let mut row = item.row;
            if prompts[ii].is_some() {
                vote(&mut row, panel, ii, &calls, &asked);
            }
            row.settle_judged();
            row
        })
        .collect()
}

/// The rubrics of `prompt` whose outcome the judge `ji` and the
/// `remaining` judges (it included) could still change.
fn open_rubrics(
    prompt: &Prompt,
    calls: &Calls,
    ii: usize,
    ji: usize,
    remaining: usize,
    quorum: usize,
) -> Vec<String> {
    prompt
        .rubric_ids
        .iter()
        .filter(|id| {
            let votes: Vec<Option<Verdict>> = (0..ji)
                .filter_map(|j| calls.get(&(ii, j)))
                .map(|c| combine_repeats(c, id).0)
                .collect();
            !settled(&votes, remaining, quorum)
        })
        .cloned()
        .collect()
}

/// Each judge rubric's votes (of the judges asked about it), who was not
/// asked and why, and the panel's verdict.
fn vote(
    row: &mut TaskResult,
    panel: &Panel<'_>,
    ii: usize,
    calls: &Calls,
    asked: &BTreeMap<(usize, usize), Vec<String>>,
) {
    for rubric in row.rubrics.iter_mut().filter(|r| r.kind == RubricKind::Llm) {
        let mut votes = Vec::new();
        let mut voters = 0;
        for (ji, judge) in panel.judges.iter().enumerate() {
            let name = &judge.config.name;
            let was_asked = asked.get(&(ii, ji)).is_some_and(|ids| ids.contains(&rubric.id));
            if !was_asked {
                rubric.not_asked.insert(
                    name.clone(),
                    format!("the verdict was settled by the {voters} judges before it"),
                );
                continue;
            }
            voters += 1;
            let own = calls.get(&(ii, ji)).map(Vec::as_slice).unwrap_or(&[]);
            votes.push(record_vote(rubric, name, own));
        }
        rubric.verdict = panel::decide(&votes, panel.quorum);
    }
}
