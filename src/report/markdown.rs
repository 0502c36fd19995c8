//! Markdown: `summary.md`, the comparison of two runs, judge agreement.
//! Formats figures computed elsewhere; computes nothing itself.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::summary::Summary;
use crate::aggregate::agreement::Agreement;
use crate::aggregate::compare::Comparison;

fn fmt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into())
}

fn table(
    out: &mut String,
    title: &str,
    key: &str,
    m: &BTreeMap<String, f64>,
    cis: Option<&BTreeMap<String, [f64; 2]>>,
) {
    if m.is_empty() {
        return;
    }
    let _ = write!(out, "\n### {title}\n\n| {key} | reward | 95% CI (groups) |\n|---|---|---|\n");
    for (k, v) in m {
        let ci = cis
            .and_then(|c| c.get(k))
            .map(|[a, b]| format!("[{a:.4}, {b:.4}]"))
            .unwrap_or_else(|| "—".into());
        let _ = writeln!(out, "| {k} | {v:.4} | {ci} |");
    }
}

/// "1 result" / "2 results".
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The banner over a run whose figures do not cover everything.
pub(crate) fn banner(s: &Summary) -> Option<String> {
    if !s.has_problems() {
        return None;
    }
    let c = &s.counts;
    let mut parts = Vec::new();
    for (n, what) in [
        (c.incomplete, "incomplete"),
        (c.pending, "pending (no judge called)"),
        (c.gate_failed, "gate-failed (scored 0)"),
        (c.missing_outputs, "task(s) without an output"),
        (s.unmatched_outputs.len(), "output(s) matching no task"),
        (s.unusable_outputs.len(), "output(s) that could not be used"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    Some(format!(
        "**Headline over {} of {}.** {}.",
        s.counted(),
        plural(c.results, "result", "results"),
        parts.join(", ")
    ))
}

/// summary.md: the summary as readable tables.
pub(crate) fn summary(s: &Summary) -> String {
    let mut out = String::from("# redjury run summary\n\n");
    if let Some(b) = banner(s) {
        let _ = writeln!(out, "> {b} See \"What the figures leave out\" below.\n");
    }
    if s.dry_run {
        out.push_str("**Dry run**: no judge was called; judge rubrics are pending. Rewards below cover only rows that needed no judge (gate failures, and tasks made only of checks).\n\n");
    }
    let c = &s.counts;
    let _ = writeln!(
        out,
        "| results | scored | gate failed | incomplete | pending | missing outputs |\n|---|---|---|---|---|---|\n| {} | {} | {} | {} | {} | {} |",
        c.results, c.scored, c.gate_failed, c.incomplete, c.pending, c.missing_outputs
    );
    figures(&mut out, s);
    judges(&mut out, s);
    problems(&mut out, s);
    notes(&mut out, s);
    out
}

fn figures(out: &mut String, s: &Summary) {
    let interval = |ci: Option<[f64; 2]>| {
        ci.map(|[a, b]| format!("[{a:.4}, {b:.4}]")).unwrap_or_else(|| "—".into())
    };
    let reference = match &s.ci95_reference {
        Some(r) => match &r.model {
            Some(m) => format!(
                " (reference method: cells resampled, {} draws, seed of model \"{m}\" = {})",
                r.resamples, r.seed
            ),
            None => format!(
                " (reference method: cells resampled, {} draws, seed {}; pass --model for the reference's seed)",
                r.resamples, r.seed
            ),
        },
        None => String::new(),
    };
    let groups = s
        .bootstrap
        .map(|b| format!(" (input groups resampled, seed {}, {} draws)", b.seed, b.resamples))
        .unwrap_or_default();
    let _ = write!(
        out,
        "\n| figure | value |\n|---|---|\n| turn-weighted (headline) | {} |\n| 95% CI{reference} | {} |\n| 95% CI{groups} | {} |\n| overall (mean over input groups) | {} |\n| mean per task | {} |\n",
        fmt(s.figures.turn_weighted),
        interval(s.ci95),
        interval(s.ci95_groups),
        fmt(s.figures.overall),
        fmt(s.figures.mean_per_task),
    );
    if s.best_at_k.k > 0 {
        let _ = writeln!(
            out,
            "| best@{} turn-weighted | {} |",
            s.best_at_k.k,
            fmt(s.best_at_k.turn_weighted)
        );
    }
    let cis = s.ci95_breakdowns.as_ref();
    let f = &s.figures;
    table(out, "By turn (mean over input groups)", "turn", &f.by_turn, cis.map(|c| &c.by_turn));
    table(out, "By side (turn-weighted)", "side", &f.by_side, cis.map(|c| &c.by_side));
    let scenario = cis.map(|c| &c.by_scenario);
    table(out, "By scenario (turn-weighted)", "scenario", &f.by_scenario, scenario);
    let cells = cis.map(|c| &c.by_scenario_turn);
    table(out, "By (scenario, turn) cell", "cell", &f.by_scenario_turn, cells);
    table(
        out,
        "By category (pooled; penalties correct when not triggered)",
        "category",
        &f.by_category,
        cis.map(|c| &c.by_category),
    );
    docx_shape(out, s);
    severity(out, s);
    pivotal(out, s);
}

/// Judge rubrics one more ballot could flip.
fn pivotal(out: &mut String, s: &Summary) {
    let Some(p) = &s.pivotal else { return };
    let _ = writeln!(
        out,
        "\n### Pivotal votes (PASS and FAIL votes one apart)\n\n{} of {} judge rubrics pivotal ({}), holding {} of the positive weight; if every pivotal verdict flipped, a row's reward would move by {} on average over {} judged rows, at most {}.",
        p.n_pivotal,
        p.n_rubrics,
        p.fraction_pivotal,
        p.pivotal_weight_share,
        p.mean_swing,
        p.n_rows,
        p.max_swing
    );
    if !p.largest.is_empty() {
        out.push_str("\n| task | trial | pivotal / rubrics | swing | pivotal rubrics |\n|---|---|---|---|---|\n");
        for r in &p.largest {
            let _ = writeln!(
                out,
                "| {} | {} | {} / {} | {} | {} |",
                r.task,
                r.trial,
                r.n_pivotal,
                r.n_rubrics,
                r.swing,
                r.rubrics.join(", ")
            );
        }
    }
}

/// The reference's severity scale over the rubric records.
fn severity(out: &mut String, s: &Summary) {
    let Some(x) = &s.severity else { return };
    out.push_str("\n### Severity of rubric failures (L0 met … L4 critical; never changes a reward)\n\n| level | records | share |\n|---|---|---|\n");
    for (level, n) in &x.levels {
        let share = x.share.get(level).copied().unwrap_or_default();
        let _ = writeln!(out, "| {level} | {n} | {share} |");
    }
    let _ = writeln!(
        out,
        "\nMean level {} (of failures {}); {} of {} failures at L3 or above ({}).",
        x.mean_severity,
        x.mean_fail_severity,
        x.high_severity_failures.count,
        x.n_failures,
        x.high_severity_failures.share_of_failures
    );
}

/// Surgicalness and the turn-1 verbosity trap, the run's row beside the
/// expert's.
fn docx_shape(out: &mut String, s: &Summary) {
    let shape = &s.docx_shape;
    if shape.is_empty() {
        return;
    }
    out.push_str("\n### Surgicalness (tracked-change events under 30% of their paragraph's unchanged text are inline)\n\n| actor | inline | block | inline share | surgicalness | documents |\n|---|---|---|---|---|---|\n");
    for (actor, x) in &shape.surgicalness {
        let _ = writeln!(
            out,
            "| {actor} | {} | {} | {} | {} | {} |",
            x.n_inline, x.n_block, x.inline_share, x.surgicalness_score, x.n_tasks
        );
    }
    if shape.verbosity_turn1.is_empty() {
        return;
    }
    out.push_str("\n### Verbosity trap (turn 1)\n\n| actor | redlines per task | edits per touched paragraph | average edit length (chars) | overlap with the expert | documents |\n|---|---|---|---|---|---|\n");
    for (actor, v) in &shape.verbosity_turn1 {
        let overlap = match (v.overlap_rate, v.n_tasks_with_overlap) {
            (Some(r), Some(n)) => format!("{r} (over {n} tasks)"),
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "| {actor} | {} | {} | {} | {overlap} | {} |",
            v.redlines_per_task, v.edits_per_touched_para, v.avg_edit_length, v.n_tasks
        );
    }
}

fn judges(out: &mut String, s: &Summary) {
    if s.judges.is_empty() {
        return;
    }
    out.push_str("\n### Judges\n\n| judge | model | key | requests | cache hits | retries | failures | 429s | input tokens | cached share | output tokens | cost (USD, estimate) |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (name, j) in &s.judges {
        let k = &j.counters;
        let key = match (j.has_key, j.api_key_env.is_empty()) {
            (true, true) => "none needed".to_string(),
            (true, false) => "yes".into(),
            (false, _) => format!("no ({} unset)", j.api_key_env),
        };
        let _ = writeln!(
            out,
            "| {name} | {} | {key} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            j.model,
            k.requests,
            k.cache_hits,
            k.retries,
            k.failures,
            k.rate_limited,
            k.input_tokens,
            j.cached_share.map(|x| format!("{:.0}%", x * 100.0)).unwrap_or_else(|| "—".into()),
            k.output_tokens,
            j.cost.map(|x| format!("{x:.4}")).unwrap_or_else(|| "no price".into())
        );
    }
    for (name, j) in &s.judges {
        let k = &j.counters;
        if k.batch_calls > 0 {
            let _ = writeln!(
                out,
                "\n{name}: {} calls answered by batch ({} input tokens, {} of them cached, and {} output tokens at the batch rate; included in the cost above)",
                k.batch_calls, k.batch_input_tokens, k.batch_cached_tokens, k.batch_output_tokens
            );
        }
    }
    for (name, j) in &s.judges {
        let Some(o) = &j.observed_limits else { continue };
        let reported: Vec<String> = [
            (o.requests_per_minute, "requests"),
            (o.tokens_per_minute, "tokens"),
            (o.input_tokens_per_minute, "input tokens"),
            (o.output_tokens_per_minute, "output tokens"),
        ]
        .iter()
        .filter_map(|(v, what)| v.map(|n| format!("{n} {what}")))
        .collect();
        let reported = if reported.is_empty() {
            "no limits reported".to_string()
        } else {
            format!("limits reported: {} a minute", reported.join(", "))
        };
        let _ = writeln!(
            out,
            "\n{name}: {reported}; paced at {:.0} requests a minute at the end{}",
            o.paced_rpm,
            match o.slowdowns {
                0 => String::new(),
                n => format!(", slowed down {n} times by 429s"),
            }
        );
    }
    for (name, j) in &s.judges {
        let k = &j.counters;
        if k.decided_skips > 0 || k.decided_skipped_tokens > 0 {
            let _ = writeln!(
                out,
                "\n{name}: vote mode \"decided\" left out {} (their verdicts were settled before its turn) and ~{} prompt tokens in all; saved {}",
                plural(k.decided_skips as usize, "call", "calls"),
                k.decided_skipped_tokens,
                j.saved_usd
                    .map(|x| format!("~${x:.2}"))
                    .unwrap_or_else(|| "an unknown amount (no price)".into())
            );
        }
    }
    for (name, j) in &s.judges {
        if let Some(why) = &j.stopped {
            let _ = writeln!(out, "\n**{name} was stopped during the run:** {why}");
        }
    }
    if s.judges.values().any(|j| j.estimate.is_some()) {
        out.push_str("\n### Estimates (calls not in the cache)\n\n| judge | calls | already cached | input tokens | of which shared prefixes | output tokens (max) | cost (USD, max estimate) |\n|---|---|---|---|---|---|---|\n");
        for (name, j) in &s.judges {
            if let Some(e) = &j.estimate {
                let _ = writeln!(
                    out,
                    "| {name} | {} | {} | {} | {} | {} | {} |",
                    e.calls,
                    e.cached_calls,
                    e.input_tokens,
                    e.shared_prefix_tokens,
                    e.max_output_tokens,
                    e.max_cost_usd.map(|x| format!("{x:.2}")).unwrap_or_else(|| "no price".into())
                );
            }
        }
    }
}

fn listed(out: &mut String, title: &str, groups: &BTreeMap<String, Vec<String>>) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n#### {title}\n");
    for (reason, rows) in groups {
        let _ = writeln!(
            out,
            "- {} — {reason}\n  {}",
            plural(rows.len(), "row", "rows"),
            rows.join(", ")
        );
    }
}

fn problems(out: &mut String, s: &Summary) {
    if !s.has_problems() {
        return;
    }
    out.push_str("\n### What the figures leave out\n");
    listed(out, "Incomplete (no reward; never counted as 0)", &s.problems.incomplete);
    listed(out, "Gate failures (reward 0, counted)", &s.problems.gate_failed);
    listed(out, "Required items not met (reward 0, counted)", &s.problems.required_unmet);
    if !s.problems.pending.is_empty() {
        let _ = write!(
            out,
            "\n#### Pending: no judge was called (a dry run, or no judge has a key) ({})\n\n{}\n",
            s.problems.pending.len(),
            s.problems.pending.join(", ")
        );
    }
    if !s.missing.is_empty() {
        let _ = write!(
            out,
            "\n#### Tasks without an output ({})\n\n{}\n",
            s.missing.len(),
            s.missing.join(", ")
        );
    }
    if !s.unmatched_outputs.is_empty() {
        let _ = write!(
            out,
            "\n#### Output files matching no task ({})\n\n{}\n",
            s.unmatched_outputs.len(),
            s.unmatched_outputs.join(", ")
        );
    }
    if !s.unusable_outputs.is_empty() {
        let _ = writeln!(
            out,
            "\n#### Output files that could not be used ({})\n",
            s.unusable_outputs.len()
        );
        for u in &s.unusable_outputs {
            let _ = writeln!(out, "- {}: {}", u.path, u.reason);
        }
    }
}

/// What the run has to say besides the figures.
fn notes(out: &mut String, s: &Summary) {
    if s.notes.is_empty() && s.repeated_requests == 0 {
        return;
    }
    out.push_str("\n### Notes\n\n");
    for note in &s.notes {
        let _ = writeln!(out, "- {note}");
    }
    if s.repeated_requests > 0 {
        let _ = writeln!(
            out,
            "- {} answered with a row already logged for the same output (counted, not logged again)",
            plural(s.repeated_requests as usize, "request", "requests")
        );
    }
}

/// What a run says when it ends: what happened, the headline, what it
/// leaves out and the top reasons, where the results are (`out_dir`).
pub fn outcome(s: &Summary, out_dir: &std::path::Path) -> String {
    let c = &s.counts;
    let f = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into());
    let mut out = String::new();
    if s.dry_run {
        out.push_str(&dry_run(s));
    }
    out.push_str(&format!(
        "{}: {} scored, {} gate-failed, {} incomplete, {} pending; {} without an output\n",
        plural(c.results, "result", "results"),
        c.scored,
        c.gate_failed,
        c.incomplete,
        c.pending,
        plural(c.missing_outputs, "task", "tasks")
    ));
    let counted = s.counted();
    let over = if counted < c.results {
        format!(
            " — over {counted} of {}; the rest have no reward yet",
            plural(c.results, "result", "results")
        )
    } else {
        String::new()
    };
    out.push_str(&format!(
        "turn-weighted reward {} (95% CI {}), overall {}{over}\n",
        f(s.figures.turn_weighted),
        s.ci95.map(|[a, b]| format!("[{a:.4}, {b:.4}]")).unwrap_or_else(|| "—".into()),
        f(s.figures.overall)
    ));
    out.push_str(&left_out(s));
    for note in &s.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out.push_str(&format!("results in {}\n", out_dir.display()));
    out
}

/// A dry run's lines: that no judge was called (and why), each judge's
/// estimate.
fn dry_run(s: &Summary) -> String {
    let mut out = String::new();
    if s.judges.values().any(|j| j.has_key) {
        out.push_str("dry run (--dry-run): no judge called\n");
    } else {
        let envs: Vec<&str> =
            s.judges.values().map(|j| j.api_key_env.as_str()).filter(|e| !e.is_empty()).collect();
        out.push_str(&format!(
            "dry run: no judge has an API key (set {}), so none was called\n",
            envs.join(", ")
        ));
    }
    for (name, j) in &s.judges {
        if let Some(e) = &j.estimate {
            let cost = e
                .max_cost_usd
                .map(|x| format!("≤ ${x:.2} (estimate)"))
                .unwrap_or_else(|| "no price".into());
            out.push_str(&format!(
                "  {name}: {} to make ({} cached), ~{} input tokens, {cost}\n",
                plural(e.calls as usize, "call", "calls"),
                e.cached_calls,
                e.input_tokens
            ));
        }
    }
    out
}

/// The top reasons rows were incomplete or failed the gate, outputs not
/// used, outputs matching no task.
fn left_out(s: &Summary) -> String {
    let mut out = String::new();
    for (what, groups) in
        [("incomplete", &s.problems.incomplete), ("gate-failed", &s.problems.gate_failed)]
    {
        let mut top: Vec<(&String, &Vec<String>)> = groups.iter().collect();
        top.sort_by_key(|(_, rows)| std::cmp::Reverse(rows.len()));
        for (reason, rows) in top.into_iter().take(3) {
            out.push_str(&format!("  {what}: {} — {reason}\n", plural(rows.len(), "row", "rows")));
        }
    }
    for u in s.unusable_outputs.iter().take(3) {
        out.push_str(&format!("  not used: {}: {}\n", u.path, u.reason));
    }
    if !s.unmatched_outputs.is_empty() {
        let shown: Vec<&str> = s.unmatched_outputs.iter().take(3).map(String::as_str).collect();
        let more = s.unmatched_outputs.len() - shown.len();
        out.push_str(&format!(
            "  {} matching no task: {}{}\n",
            plural(s.unmatched_outputs.len(), "output", "outputs"),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more (summary.md lists them)")
            } else {
                String::new()
            }
        ));
    }
    out
}

/// A paired comparison of two runs.
pub(crate) fn comparison(c: &Comparison) -> String {
    let (fa, fb) = (&c.a, &c.b);
    let mut out = format!(
        "# Paired comparison\n\n{} task × trial rows scored in both runs (A = this run, B = --compare).\n\n",
        c.rows.len()
    );
    let delta = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:+.4}", a - b),
        _ => "—".into(),
    };
    let _ = write!(
        out,
        "| figure | A | B | A − B | 95% CI of A − B |\n|---|---|---|---|---|\n| turn-weighted | {} | {} | {} | {} |\n| overall | {} | {} | {} | |\n",
        fmt(fa.turn_weighted),
        fmt(fb.turn_weighted),
        delta(fa.turn_weighted, fb.turn_weighted),
        c.delta_ci95.map(|[l, h]| format!("[{l:+.4}, {h:+.4}]")).unwrap_or_else(|| "—".into()),
        fmt(fa.overall),
        fmt(fb.overall),
        delta(fa.overall, fb.overall)
    );
    for (title, ma, mb) in [
        ("turn", &fa.by_turn, &fb.by_turn),
        ("side", &fa.by_side, &fb.by_side),
        ("scenario", &fa.by_scenario, &fb.by_scenario),
        ("category", &fa.by_category, &fb.by_category),
    ] {
        let _ = write!(out, "\n### By {title}\n\n| {title} | A | B | A − B |\n|---|---|---|---|\n");
        for k in ma.keys().chain(mb.keys().filter(|k| !ma.contains_key(*k))) {
            let (x, y) = (ma.get(k).copied(), mb.get(k).copied());
            let _ = writeln!(out, "| {k} | {} | {} | {} |", fmt(x), fmt(y), delta(x, y));
        }
    }
    out
}

/// Judge agreement as tables.
pub(crate) fn agreement(a: &Agreement) -> String {
    let mut out = String::from("\n## Judge agreement\n\n");
    if a.judges.len() < 2 {
        out.push_str("Fewer than two judges voted: nothing to compare.\n");
        return out;
    }
    out.push_str("| pair | items both voted | agreement |\n|---|---|---|\n");
    for p in &a.pairs {
        let pct = if p.items > 0 {
            format!("{:.1}%", 100.0 * p.agreed as f64 / p.items as f64)
        } else {
            "—".into()
        };
        let _ = writeln!(out, "| {} – {} | {} | {pct} |", p.a, p.b, p.items);
    }
    let kappa = a
        .fleiss_kappa
        .map(|k| format!("{k:.3}"))
        .unwrap_or_else(|| "undefined (no items, or no variation)".into());
    let _ = writeln!(
        out,
        "\nFleiss' kappa over {} rubric items every judge voted on: {kappa}\n",
        a.fleiss_items
    );
    out.push_str("| judge | votes | departs from the panel verdict |\n|---|---|---|\n");
    for d in &a.departures {
        let _ = writeln!(out, "| {} | {} | {:.1}% |", d.judge, d.votes, d.rate() * 100.0);
    }
    if let Some(d) = a.most_departing() {
        let _ = writeln!(
            out,
            "\nThe judge departing most from the panel: **{}** ({:.1}% of its votes).",
            d.judge,
            d.rate() * 100.0
        );
    }
    out
}
