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

use super::{Asked, Panel, Progress, combine_repeats, finish, record_vote, start};
use crate::cache::Cache;
use crate::judge::batch::Unanswered;
use crate::judge::{CallResult, Judge};
use crate::panel::{self, first_wave, settled};
use crate::pipeline::prepare::Prepared;
use crate::prompt::Prompt;
use crate::score::{RubricKind, TaskResult};
use crate::verdict::Verdict;

/// What one item's calls so far say: per judge, its calls.
pub(super) type Calls = BTreeMap<(usize, usize), Vec<CallResult>>;

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
    // The first wave at once: what one of them answers changes nothing
    // they are asked (one after the other, decided mode took 2.5x the wall
    // time of mode all).
    let mut set = Asked::new();
    for (ji, judge) in judges.iter().enumerate().take(first) {
        let wave: Vec<(usize, Arc<Prompt>)> =
            prompts.iter().enumerate().filter_map(|(ii, p)| Some((ii, p.clone()?))).collect();
        for (ii, prompt) in &wave {
            asked.insert((*ii, ji), prompt.rubric_ids.clone());
        }
        progress.planned(u64::from(judge.config.repeats) * wave.len() as u64, 0);
        for (ii, result) in start(ji, judge, wave, cache, progress, skipped, &mut set).await {
            calls.entry((ii, ji)).or_default().push(result);
        }
    }
    for (ii, ji, result) in finish(set, progress).await {
        calls.entry((ii, ji)).or_default().push(result);
    }
    for (ji, judge) in judges.iter().enumerate().skip(first) {
        let mut known = cached_in_full(judge, &prompts, cache, progress).await;
        let mut wave: Vec<(usize, Arc<Prompt>)> = Vec::new();
        for (ii, prompt) in prompts.iter().enumerate() {
            let Some(prompt) = prompt else { continue };
            if let Some(answers) = known.remove(&ii) {
                // Its full answer is cached (a run in mode all made it):
                // free, and the vote mode all would count.
                asked.insert((ii, ji), prompt.rubric_ids.clone());
                calls.entry((ii, ji)).or_default().extend(answers);
                continue;
            }
            let open = open_rubrics(prompt, &calls, ii, ji, judges.len() - ji, panel.quorum);
            if let Some(sent) = narrowed_for(judge, prompt, &open) {
                wave.push((ii, sent));
                asked.insert((ii, ji), open);
            }
        }
        let planned: u64 = u64::from(judge.config.repeats) * wave.len() as u64;
        progress.planned(planned, 0);
        for (ii, result) in super::ask(ji, judge, wave, cache, progress, skipped).await {
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

/// What a later judge is sent about an item whose `open` rubrics are
/// still open: the whole prompt, one narrowed to them, or nothing when
/// every rubric is settled. Its counters record what was left out.
pub(super) fn narrowed_for(
    judge: &Judge,
    prompt: &Arc<Prompt>,
    open: &[String],
) -> Option<Arc<Prompt>> {
    if open.len() == prompt.rubric_ids.len() {
        return Some(prompt.clone());
    }
    let repeats = u64::from(judge.config.repeats);
    let left_out = prompt.rubric_ids.len().saturating_sub(open.len()) as u64 * repeats;
    let c = &judge.counters;
    c.decided_skipped_rubrics.fetch_add(left_out, Ordering::Relaxed);
    let Some(narrow) = prompt.narrowed(open) else {
        // Every rubric is settled: this judge is not asked.
        c.decided_skips.fetch_add(repeats, Ordering::Relaxed);
        c.decided_skipped_tokens.fetch_add(prompt.estimated_tokens() * repeats, Ordering::Relaxed);
        return None;
    };
    let saved = prompt.estimated_tokens().saturating_sub(narrow.estimated_tokens());
    c.decided_skipped_tokens.fetch_add(saved * repeats, Ordering::Relaxed);
    Some(Arc::new(narrow))
}

/// The items whose full prompt this judge has answered in the cache, every
/// repeat of it: per item, those answers. A hit that is not used (some
/// repeats only) is not counted as one.
async fn cached_in_full(
    judge: &Judge,
    prompts: &[Option<Arc<Prompt>>],
    cache: &Arc<Cache>,
    progress: &dyn Progress,
) -> BTreeMap<usize, Vec<CallResult>> {
    let repeats = judge.config.repeats;
    let mut owners = Vec::new();
    let mut calls = Vec::new();
    for (ii, prompt) in prompts.iter().enumerate() {
        let Some(prompt) = prompt else { continue };
        for repeat in 0..repeats {
            owners.push(ii);
            calls.push((prompt.clone(), repeat));
        }
    }
    let mut found: BTreeMap<usize, Vec<Option<CallResult>>> = BTreeMap::new();
    for (ii, hit) in owners.into_iter().zip(judge.cached_many(&calls, cache).await) {
        found.entry(ii).or_default().push(hit);
    }
    let mut full = BTreeMap::new();
    for (ii, hits) in found {
        let n = hits.len() as u64;
        let used: Vec<CallResult> = hits.into_iter().flatten().collect();
        if used.len() as u64 == n {
            progress.planned(n, 0);
            (0..n).for_each(|_| progress.finished(true));
            full.insert(ii, used);
        } else {
            judge.counters.cache_hits.fetch_sub(used.len() as u64, Ordering::Relaxed);
        }
    }
    full
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
