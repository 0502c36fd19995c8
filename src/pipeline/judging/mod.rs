//! The judging half of scoring: one call per distinct judge × prompt ×
//! repeat, votes per rubric, the panel's verdict, and the row settled.
//!
//! Owns: the fan-out of judge calls for a set of prepared outputs and how
//! their answers become votes. Must never count a missing answer as a FAIL:
//! a judge that did not answer abstains with the reason.

use std::collections::BTreeMap;
use std::sync::Arc;

mod decided;
mod escalate;

use super::prepare::Prepared;
use crate::cache::Cache;
use crate::judge::batch::{self, BatchProgress, BatchReport, Leftover, Unanswered};
use crate::judge::config::VoteMode;
use crate::judge::verdicts::JudgeVote;
use crate::judge::{CallResult, Judge};
use crate::panel;
use crate::prompt::Prompt;
use crate::score::{RubricKind, TaskResult};
use crate::verdict::Verdict;

/// Something to tell as calls finish (the command line's progress bar).
pub trait Progress: Send + Sync {
    /// `n` more judge calls are planned, `cached` of them already answered.
    fn planned(&self, n: u64, cached: u64);
    /// One call finished.
    fn finished(&self, from_cache: bool);
    /// A judge's batches moved on.
    fn batch(&self, _judge: &str, _report: &BatchReport) {}
}

/// How calls not in the cache are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatch {
    /// One request per call, as they are ready.
    Live,
    /// Through each provider's batch API (half price, within 24 hours).
    Batch(BatchFallback),
}

/// What becomes of a call its batch did not answer (errored, expired,
/// cancelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchFallback {
    /// It is sent live.
    Live,
    /// Its judge abstains with the reason (the row may end incomplete).
    Incomplete,
}

struct Told<'a>(&'a dyn Progress);

impl BatchProgress for Told<'_> {
    fn batch(&self, judge: &str, report: &BatchReport) {
        self.0.batch(judge, report);
    }
}

/// Submits, for each judge, the calls of `items` not in the cache as
/// batches (one plan per judge, in panel order).
pub(super) async fn submit<'j>(
    items: &[Prepared],
    judges: &'j [Arc<Judge>],
    cache: &Arc<Cache>,
) -> Vec<batch::Plan<'j>> {
    let mut plans = Vec::with_capacity(judges.len());
    for judge in judges {
        let mut calls: Vec<(Prompt, u32)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for prompt in items.iter().filter_map(|i| i.prompt.as_ref()) {
            for repeat in 0..judge.config.repeats {
                if seen.insert((prompt.hash.clone(), repeat)) {
                    calls.push((prompt.clone(), repeat));
                }
            }
        }
        plans.push(judge.submit_batches(calls, cache).await);
    }
    plans
}

/// What the batches of a run left.
#[derive(Debug, Default)]
pub struct BatchesLeft {
    /// Per judge (in panel order), the calls not to send live: they
    /// abstain with their reason.
    pub skipped: Vec<Unanswered>,
    /// Per judge (in panel order), the calls no batch answered that go
    /// live, and their estimated prompt tokens.
    pub live: Vec<(usize, u64)>,
}

/// Waits for every plan's batches; per judge (in panel order), the calls
/// they left: as `fallback` says, sent live or left to abstain. A call the
/// provider may still answer ([`Leftover::Pending`]) is never sent live.
pub(super) async fn wait(
    mut plans: Vec<batch::Plan<'_>>,
    judges: &[Arc<Judge>],
    cache: &Arc<Cache>,
    progress: &dyn Progress,
    fallback: BatchFallback,
) -> BatchesLeft {
    batch::wait(&mut plans, cache, &Told(progress)).await;
    let mut left = BatchesLeft {
        skipped: vec![Unanswered::new(); judges.len()],
        live: vec![(0, 0); judges.len()],
    };
    for plan in plans {
        let Some(ji) = judges.iter().position(|j| j.config.name == plan.judge_name()) else {
            continue;
        };
        let tokens = plan.unanswered_tokens();
        for (digest, leftover) in plan.unanswered() {
            match (&leftover, fallback) {
                (Leftover::Unanswered(_), BatchFallback::Live) => left.live[ji].0 += 1,
                _ => {
                    left.skipped[ji].insert(digest, leftover);
                }
            }
        }
        if fallback == BatchFallback::Live {
            left.live[ji].1 = tokens;
        }
    }
    left
}

/// No progress to tell.
pub struct Silent;

impl Progress for Silent {
    fn planned(&self, _: u64, _: u64) {}
    fn finished(&self, _: bool) {}
}

/// The panel's judges and how they vote.
pub(super) struct Panel<'a> {
    pub judges: &'a [Arc<Judge>],
    pub quorum: usize,
    pub mode: VoteMode,
}

/// Asks the panel about every prompt of `items` (every judge, or in
/// `decided` mode only those whose votes can still change a verdict),
/// then votes and settles each row. Identical calls share one request (the
/// judge de-duplicates). A call in `skipped` (per judge, in panel order)
/// is not made: its judge abstains with the reason.
pub(super) async fn judge(
    items: Vec<Prepared>,
    panel: &Panel<'_>,
    cache: &Arc<Cache>,
    progress: &dyn Progress,
    skipped: &[Unanswered],
) -> Vec<TaskResult> {
    match panel.mode {
        VoteMode::All => {
            judge_all(items, panel.judges, panel.quorum, cache, progress, skipped).await
        }
        VoteMode::Decided => decided::judge(items, panel, cache, progress, skipped).await,
        VoteMode::Escalate => escalate::judge(items, panel, cache, progress, skipped).await,
    }
}

/// Every judge on every prompt (`[vote] mode = "all"`).
async fn judge_all(
    items: Vec<Prepared>,
    judges: &[Arc<Judge>],
    quorum: usize,
    cache: &Arc<Cache>,
    progress: &dyn Progress,
    skipped: &[Unanswered],
) -> Vec<TaskResult> {
    let mut items = items;
    // Shared, not copied: a prompt carries the whole document view.
    let prompts: Vec<Option<Arc<Prompt>>> =
        items.iter_mut().map(|i| i.prompt.take().map(Arc::new)).collect();
    let asked = prompts.iter().filter(|p| p.is_some()).count() as u64;
    progress.planned(judges.iter().map(|j| u64::from(j.config.repeats) * asked).sum(), 0);
    let mut set = tokio::task::JoinSet::new();
    let mut results: BTreeMap<(usize, usize), Vec<CallResult>> = BTreeMap::new();
    for (ji, judge) in judges.iter().enumerate() {
        let wave: Vec<(usize, Arc<Prompt>)> =
            prompts.iter().enumerate().filter_map(|(ii, p)| Some((ii, p.clone()?))).collect();
        for (ii, result) in start(ji, judge, wave, cache, progress, skipped, &mut set).await {
            results.entry((ii, ji)).or_default().push(result);
        }
    }
    for (ii, ji, result) in finish(set, progress).await {
        results.entry((ii, ji)).or_default().push(result);
    }
    items
        .into_iter()
        .enumerate()
        .map(|(ii, item)| {
            let mut row = item.row;
            if prompts[ii].is_some() {
                vote(&mut row, judges, quorum, |ji| {
                    results.get(&(ii, ji)).map(Vec::as_slice).unwrap_or(&[])
                });
            }
            row.settle_judged();
            row
        })
        .collect()
}

/// A judge call's task: its item, its judge and what it answered.
type Asked = tokio::task::JoinSet<(usize, usize, CallResult)>;

/// Starts judge `ji`'s calls on each (item, prompt) of `wave` (every
/// repeat): those a batch left to abstain and those in the cache are
/// answered at once (returned), the others are spawned into `set`.
async fn start(
    ji: usize,
    judge: &Arc<Judge>,
    wave: Vec<(usize, Arc<Prompt>)>,
    cache: &Arc<Cache>,
    progress: &dyn Progress,
    skipped: &[Unanswered],
    set: &mut Asked,
) -> Vec<(usize, CallResult)> {
    let mut now = Vec::new();
    let mut calls = Vec::new();
    for (ii, prompt) in wave {
        for repeat in 0..judge.config.repeats {
            let digest = judge.call_key(&prompt, repeat).digest();
            if let Some(why) = skipped.get(ji).and_then(|s| s.get(&digest)) {
                now.push((ii, judge.unanswered(&prompt, why.reason().to_string())));
                progress.finished(false);
                continue;
            }
            calls.push((ii, (prompt.clone(), repeat)));
        }
    }
    let (owners, calls): (Vec<usize>, Vec<(Arc<Prompt>, u32)>) = calls.into_iter().unzip();
    let hits = judge.cached_many(&calls, cache).await;
    for ((ii, (prompt, repeat)), hit) in owners.into_iter().zip(calls).zip(hits) {
        if let Some(result) = hit {
            progress.finished(true);
            now.push((ii, result));
            continue;
        }
        let (judge, cache) = (judge.clone(), cache.clone());
        set.spawn(async move { (ii, ji, judge.call(&prompt, repeat, &cache).await) });
    }
    now
}

/// Waits for every spawned call.
async fn finish(mut set: Asked, progress: &dyn Progress) -> Vec<(usize, usize, CallResult)> {
    let mut out = Vec::new();
    while let Some(joined) = set.join_next().await {
        // A call's task only ends by returning: judge calls never panic on
        // what a server sends. Should one, its votes stay abstentions.
        let Ok((ii, ji, result)) = joined else { continue };
        progress.finished(result.from_cache);
        out.push((ii, ji, result));
    }
    out
}

/// One judge's calls on `wave`, all answered: (item, answer) for each.
pub(super) async fn ask(
    ji: usize,
    judge: &Arc<Judge>,
    wave: Vec<(usize, Arc<Prompt>)>,
    cache: &Arc<Cache>,
    progress: &dyn Progress,
    skipped: &[Unanswered],
) -> Vec<(usize, CallResult)> {
    let mut set = Asked::new();
    let mut out = start(ji, judge, wave, cache, progress, skipped, &mut set).await;
    out.extend(finish(set, progress).await.into_iter().map(|(ii, _, r)| (ii, r)));
    out
}

/// Fills each judge rubric's votes and the panel's verdict.
fn vote<'a>(
    row: &mut TaskResult,
    judges: &[Arc<Judge>],
    quorum: usize,
    calls_of: impl Fn(usize) -> &'a [CallResult],
) {
    for rubric in row.rubrics.iter_mut().filter(|r| r.kind == RubricKind::Llm) {
        let mut votes = Vec::with_capacity(judges.len());
        for (ji, judge) in judges.iter().enumerate() {
            votes.push(record_vote(rubric, &judge.config.name, calls_of(ji)));
        }
        rubric.verdict = panel::decide(&votes, quorum);
    }
}

/// One judge's vote on a rubric from its calls, written into the rubric
/// with its justification or why it abstained.
pub(super) fn record_vote(
    rubric: &mut crate::score::RubricResult,
    name: &str,
    calls: &[CallResult],
) -> Option<Verdict> {
    let (vote, justification, abstention) = combine_repeats(calls, &rubric.id);
    rubric.votes.insert(name.to_string(), vote);
    if let Some(v) = vote
        && calls.len() > 1
    {
        rubric.confidence.insert(name.to_string(), confidence(calls, &rubric.id, v));
    }
    if let Some(j) = justification {
        rubric.justifications.insert(name.to_string(), j);
    }
    if let Some(a) = abstention {
        rubric.abstentions.insert(name.to_string(), a);
    }
    vote
}

/// The share of a judge's calls on a rubric that gave its vote `vote` (an
/// abstaining call counts against it).
pub(super) fn confidence(calls: &[CallResult], rubric: &str, vote: Verdict) -> f64 {
    let agreeing = calls
        .iter()
        .filter(|c| {
            matches!(c.votes.get(rubric), Some(JudgeVote::Verdict { verdict, .. }) if *verdict == vote)
        })
        .count();
    agreeing as f64 / calls.len().max(1) as f64
}

/// One judge's vote on one rubric from its repeats: the strict majority of
/// its valid answers (ties FAIL, as for the panel), `None` if none.
pub(super) fn combine_repeats(
    calls: &[CallResult],
    rubric: &str,
) -> (Option<Verdict>, Option<String>, Option<String>) {
    let mut verdicts = Vec::new();
    let mut justification = None;
    let mut abstention = calls.is_empty().then(|| "no answer was received".to_string());
    for call in calls {
        match call.votes.get(rubric) {
            Some(JudgeVote::Verdict { verdict, justification: j }) => {
                verdicts.push(Some(*verdict));
                justification.get_or_insert_with(|| j.clone());
            }
            Some(JudgeVote::Abstain { reason }) => {
                abstention.get_or_insert_with(|| reason.clone());
            }
            None => {
                abstention.get_or_insert_with(|| "not asked".to_string());
            }
        }
    }
    let vote = panel::decide(&verdicts, 1);
    (vote, justification, if vote.is_none() { abstention } else { None })
}
