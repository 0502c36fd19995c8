//! `redjury merge`: the results folders of a sharded run (`score --shard
//! K/N`) joined into the folder one process scoring everything writes.
//!
//! Owns: checking that the parts belong together (every part once, the
//! same templates, bootstrap, tasks and outputs), the rows in the order a
//! single run writes them, and the summary built from them by the same
//! function (`Summary::build`) with each judge's counters summed and its
//! cost computed again from the sums. Must never join parts of different
//! runs, and never count a row twice.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::folder::{self, Staging};
use super::run::{RunEnd, RunError, RunReport};
use crate::aggregate::{Billed, Prices};
use crate::judge::CounterSnapshot;
use crate::report::{self, JudgeSummary, PromptRecord, Shard, Summary};
use crate::score::TaskResult;

/// One part's folder, read back.
struct Part {
    dir: PathBuf,
    shard: Shard,
    rows: Vec<TaskResult>,
    summary: Summary,
    prompts: Vec<PromptRecord>,
}

/// Joins the parts in `dirs` into `out`; `prices` recomputes each judge's
/// cost from the summed counters.
pub(crate) fn merge(dirs: &[PathBuf], out: &Path, prices: &Prices) -> Result<RunReport, RunError> {
    let inputs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let target = folder::check(out, &inputs)?;
    let parts = dirs.iter().map(|d| read_part(d)).collect::<Result<Vec<_>, _>>()?;
    let first = check_parts(&parts)?;
    let mut rows: Vec<TaskResult> = Vec::new();
    let mut prompts: Vec<PromptRecord> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for part in &parts {
        for row in &part.rows {
            if !seen.insert((row.task.clone(), row.trial.clone())) {
                return Err(refusal(
                    &part.dir,
                    format!(
                        "row {} trial {} is in two parts: these folders are not the parts of one run",
                        row.task, row.trial
                    ),
                ));
            }
        }
        rows.extend(part.rows.iter().cloned());
        prompts.extend(part.prompts.iter().cloned());
    }
    // The order a single run writes: its outputs sorted by task and trial.
    rows.sort_by(|a, b| (&a.task, &a.trial).cmp(&(&b.task, &b.trial)));
    prompts.sort_by(|a, b| (&a.task, &a.trial).cmp(&(&b.task, &b.trial)));
    let summary = joined_summary(&parts, first, &rows, prices);
    let staging = Staging::start(target)?;
    report::write_run(&staging.dir, &rows, &summary, &prompts)
        .map_err(|source| RunError::Write { path: staging.dir.clone(), source })?;
    for part in &parts {
        super::run::copy_views(&part.dir, &staging.dir)?;
    }
    staging.swap()?;
    let end = RunEnd::of(&summary);
    Ok(RunReport { summary, end, out_dir: out.to_path_buf() })
}

fn refusal(dir: &Path, message: String) -> RunError {
    RunError::Report(report::ReportError::Read { path: dir.to_path_buf(), message })
}

fn read_part(dir: &Path) -> Result<Part, RunError> {
    let (rows, summary) = report::load_run(dir)?;
    let prompts = report::load_prompts(dir)?;
    let shard = summary.shard.ok_or_else(|| {
        refusal(dir, "is not a part of a sharded run (its summary names no shard: score it with --shard K/N)".into())
    })?;
    Ok(Part { dir: dir.to_path_buf(), shard, rows, summary, prompts })
}

/// Every part of the run once, all scored alike; the part whose settings
/// the joined folder takes.
fn check_parts(parts: &[Part]) -> Result<&Part, RunError> {
    let Some(first) = parts.first() else {
        return Err(RunError::Report(report::ReportError::Read {
            path: PathBuf::from("."),
            message: "name the parts' folders to merge".into(),
        }));
    };
    let of = first.shard.of;
    let mut have: BTreeMap<u32, &Path> = BTreeMap::new();
    for part in parts {
        if part.shard.of != of {
            return Err(refusal(
                &part.dir,
                format!(
                    "is part {} of {}, {} part {} of {of}: these are not parts of one run",
                    part.shard.index,
                    part.shard.of,
                    first.dir.display(),
                    first.shard.index
                ),
            ));
        }
        if let Some(other) = have.insert(part.shard.index, &part.dir) {
            return Err(refusal(
                &part.dir,
                format!(
                    "is part {} of {of}, and so is {}: give each part once",
                    part.shard.index,
                    other.display()
                ),
            ));
        }
        let (a, b) = (&first.summary, &part.summary);
        let same = a.template_version == b.template_version
            && a.quorum == b.quorum
            && a.dry_run == b.dry_run
            && a.bootstrap == b.bootstrap
            && a.ci95_reference.as_ref().map(|r| &r.model)
                == b.ci95_reference.as_ref().map(|r| &r.model)
            && a.missing == b.missing
            && a.unmatched_outputs == b.unmatched_outputs
            && a.unusable_outputs == b.unusable_outputs;
        if !same {
            return Err(refusal(
                &part.dir,
                format!(
                    "was scored otherwise than {} (templates, quorum, bootstrap, model, dry run, or the tasks and outputs it saw differ): these are not parts of one run",
                    first.dir.display()
                ),
            ));
        }
    }
    let missing: Vec<String> =
        (0..of).filter(|i| !have.contains_key(i)).map(|i| format!("{i}/{of}")).collect();
    if !missing.is_empty() {
        return Err(refusal(
            &first.dir,
            format!(
                "the parts {} are missing: merge needs every part of the run",
                missing.join(", ")
            ),
        ));
    }
    Ok(first)
}

/// The summary a single run writes, from the joined rows and the parts'
/// judges summed.
fn joined_summary(parts: &[Part], first: &Part, rows: &[TaskResult], prices: &Prices) -> Summary {
    let s = &first.summary;
    let boot = s.bootstrap.unwrap_or_default();
    let model = s.ci95_reference.as_ref().and_then(|r| r.model.clone());
    let mut summary = Summary::build(
        rows,
        s.missing.clone(),
        s.unmatched_outputs.clone(),
        boot,
        model.as_deref(),
    );
    summary.unusable_outputs = s.unusable_outputs.clone();
    summary.dry_run = s.dry_run;
    summary.quorum = s.quorum;
    summary.template_version = s.template_version.clone();
    for part in parts {
        for note in &part.summary.notes {
            if !summary.notes.contains(note) {
                summary.notes.push(note.clone());
            }
        }
    }
    for part in parts {
        for (name, j) in &part.summary.judges {
            match summary.judges.get_mut(name) {
                None => {
                    summary.judges.insert(name.clone(), j.clone());
                }
                Some(sum) => add_judge(sum, j),
            }
        }
    }
    let mut panel = CounterSnapshot::default();
    for j in summary.judges.values() {
        panel += j.counters;
    }
    for j in summary.judges.values_mut() {
        let c = j.counters;
        j.cached_share =
            (c.input_tokens > 0).then(|| c.cached_tokens as f64 / c.input_tokens as f64);
        j.cost = prices.cost(&j.model, Billed::of(&c));
        j.saved_usd = crate::aggregate::saved_by_deciding(prices, &j.model, &c, &panel);
    }
    summary
}

/// One part's judge added into the sum: counters and dry-run estimates
/// add; a stop or the limits observed are the first part's that has one
/// (each process paces on its own).
fn add_judge(sum: &mut JudgeSummary, j: &JudgeSummary) {
    sum.counters += j.counters;
    sum.has_key &= j.has_key;
    if sum.stopped.is_none() {
        sum.stopped = j.stopped.clone();
    }
    if sum.observed_limits.is_none() {
        sum.observed_limits = j.observed_limits;
    }
    sum.estimate = match (sum.estimate.take(), &j.estimate) {
        (Some(mut a), Some(b)) => {
            a.calls += b.calls;
            a.cached_calls += b.cached_calls;
            a.input_tokens += b.input_tokens;
            a.shared_prefix_tokens += b.shared_prefix_tokens;
            a.max_output_tokens += b.max_output_tokens;
            a.max_cost_usd = a.max_cost_usd.zip(b.max_cost_usd).map(|(x, y)| x + y);
            Some(a)
        }
        (a, b) => a.or_else(|| b.clone()),
    };
}
