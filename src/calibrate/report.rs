//! `calibration.json` and `calibration.md`: writing and reading a
//! calibration folder, and the Markdown a reader opens first.
//!
//! Owns: formatting only; every figure is computed in `calibrate`.

use std::fmt::Write;
use std::path::Path;

use super::{CalibrateError, Calibration, FlaggedJudges, PanelChoice, RaterFigures};
use crate::aggregate::calibration::Estimate;

/// Writes `calibration.json` and `calibration.md` into `dir`.
pub(crate) fn write(dir: &Path, c: &Calibration) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec_pretty(c).map_err(std::io::Error::other)?;
    crate::report::write_atomic(&dir.join("calibration.json"), &json)?;
    crate::report::write_atomic(&dir.join("calibration.md"), markdown(c).as_bytes())
}

/// Reads a calibration folder's `calibration.json`.
pub(crate) fn load(dir: &Path) -> Result<Calibration, CalibrateError> {
    let path = dir.join("calibration.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(source) => return Err(CalibrateError::Read { path, source }),
    };
    serde_json::from_str(&text).map_err(|source| CalibrateError::Parse { path, source })
}

fn est(e: &Option<Estimate>) -> String {
    match e {
        Some(Estimate { value, ci95: Some([lo, hi]) }) => format!("{value:.3} [{lo:.3}, {hi:.3}]"),
        Some(Estimate { value, ci95: None }) => format!("{value:.3}"),
        None => "—".into(),
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_else(|| "—".into())
}

fn rater_row(out: &mut String, name: &str, f: &RaterFigures) {
    let _ = writeln!(
        out,
        "| {name} | {} | {} | {} | {} | {} | {} | {} |",
        f.items,
        est(&f.accuracy),
        est(&f.kappa),
        opt(f.kappa_strict, 3),
        est(&f.macro_f1),
        opt(f.abstention_rate.map(|r| (1.0 - r) * 100.0), 1),
        opt(f.cost_per_1000, 3)
    );
}

/// The judges' and the panel's agreement with gold, as a table.
pub(crate) fn agreement_table(c: &Calibration) -> String {
    let mut out = String::from(
        "| rater | items | accuracy [95% CI] | Cohen's κ [95% CI] (decided items) | κ, abstentions as errors | macro-F1 [95% CI] | decided % | USD / 1,000 decided verdicts |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (name, f) in &c.judges {
        rater_row(&mut out, name, f);
    }
    rater_row(&mut out, &format!("panel (quorum {})", c.quorum), &c.panel);
    out
}

/// How far a run's judges and panel agree with gold, from a calibration
/// made with the same judges (each judge's model is compared; a
/// different model or prompt version is said).
pub(crate) fn for_run(c: &Calibration, run: &crate::report::Summary) -> String {
    let mut out = String::from("\n## Panel calibration\n\n");
    for (name, j) in &run.judges {
        match c.models.get(name) {
            Some(m) if *m == j.model => {}
            Some(m) => {
                let _ = writeln!(
                    out,
                    "_{name} was calibrated with model {m}, the run used {}._\n",
                    j.model
                );
            }
            None => {
                let _ = writeln!(out, "_{name} is not in the calibration._\n");
            }
        }
    }
    if c.template_version != run.template_version {
        out.push_str("_The calibration used other prompt templates than this run._\n\n");
    }
    if c.quorum != run.quorum {
        let _ = writeln!(
            out,
            "_The calibration's panel had quorum {}, this run {}._\n",
            c.quorum, run.quorum
        );
    }
    out.push_str(&agreement_table(c));
    out
}

/// The agreement table as the HTML report takes it.
pub(crate) fn trust(c: &Calibration) -> Vec<crate::report::html::Trust> {
    let one = |name: &str, f: &RaterFigures| {
        let pick = |e: &Option<Estimate>| e.map(|e| (e.value, e.ci95));
        crate::report::html::Trust {
            rater: name.to_string(),
            items: f.items,
            figures: [pick(&f.accuracy), pick(&f.kappa), pick(&f.macro_f1)],
        }
    };
    let mut out: Vec<_> = c.judges.iter().map(|(n, f)| one(n, f)).collect();
    out.push(one(&format!("panel (quorum {})", c.quorum), &c.panel));
    out
}

/// The whole report.
pub(crate) fn markdown(c: &Calibration) -> String {
    let mut out = format!(
        "# Calibration against gold labels\n\n{} tasks, {} labelled outputs, {} judge-rubric verdicts (template {}). CIs resample tasks.\n\n",
        c.tasks,
        c.outputs,
        c.items,
        &c.template_version[..c.template_version.len().min(12)]
    );
    for failed in &c.gate_failed {
        let _ = writeln!(out, "**Left out:** {failed}.\n");
    }
    if let Some(why) = &c.judges_skipped {
        let _ = writeln!(
            out,
            "**Judges skipped:** {why}. Only the deterministic checks were calibrated: {} of {} check verdicts agree with gold.",
            c.checks.1, c.checks.0
        );
        return out;
    }
    out.push_str(&agreement_table(c));
    let _ = writeln!(out, "\nKrippendorff's α among the judges: {}", opt(c.alpha, 3));
    if c.checks.0 > 0 {
        let _ = writeln!(
            out,
            "\nDeterministic checks: {} of {} agree with gold.",
            c.checks.1, c.checks.0
        );
    }
    breakdowns(&mut out, c);
    confusions(&mut out, c);
    panels(&mut out, c);
    probes(&mut out, c);
    disagreements(&mut out, c);
    out
}

fn breakdowns(out: &mut String, c: &Calibration) {
    out.push_str("\n## By category and by sign (κ / accuracy)\n\n");
    let mut slices: Vec<String> = c.panel.by_sign.keys().cloned().collect();
    slices.extend(c.panel.by_category.keys().cloned());
    let _ = writeln!(out, "| rater | {} |", slices.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(slices.len()));
    let mut raters: Vec<(&String, &RaterFigures)> = c.judges.iter().collect();
    let panel = "panel".to_string();
    raters.push((&panel, &c.panel));
    for (name, f) in raters {
        let cells: Vec<String> = slices
            .iter()
            .map(|s| {
                let b = f.by_sign.get(s).or_else(|| f.by_category.get(s));
                b.map(|b| format!("{} / {} (n={})", opt(b.kappa, 2), opt(b.accuracy, 2), b.items))
                    .unwrap_or_else(|| "—".into())
            })
            .collect();
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
}

fn confusions(out: &mut String, c: &Calibration) {
    out.push_str("\n## Confusion (gold → rater)\n\n| rater | PASS→PASS | PASS→FAIL | FAIL→PASS | FAIL→FAIL | PASS→none | FAIL→none |\n|---|---|---|---|---|---|---|\n");
    let mut raters: Vec<(&str, &RaterFigures)> =
        c.judges.iter().map(|(k, v)| (k.as_str(), v)).collect();
    raters.push(("panel", &c.panel));
    for (name, f) in raters {
        let m = &f.confusion;
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} |",
            m.pass_pass, m.pass_fail, m.fail_pass, m.fail_fail, m.pass_none, m.fail_none
        );
    }
}

fn panels(out: &mut String, c: &Calibration) {
    out.push_str("\n## Panels (every subset of judges × quorum, asking all or in order until decided; best κ first; among equals, fewer flagged judges first)\n\n| judges | mode | quorum | κ (decided items) | κ, undecided as errors | accuracy | decided % | flagged judges | USD / 1,000 decided verdicts |\n|---|---|---|---|---|---|---|---|---|\n");
    for p in c.panels.iter().take(30) {
        let mode = match p.mode {
            crate::judge::config::VoteMode::All => "all",
            crate::judge::config::VoteMode::Decided => "decided, in this order",
            crate::judge::config::VoteMode::Escalate => "escalate, in this order",
        };
        let _ = writeln!(
            out,
            "| {} | {mode} | {} | {} | {} | {} | {:.1} | {} | {} |",
            p.judges.join(", "),
            p.quorum,
            opt(p.kappa, 3),
            opt(p.kappa_strict, 3),
            opt(p.accuracy, 3),
            p.coverage * 100.0,
            p.flagged,
            opt(p.cost_per_1000, 3)
        );
    }
    let _ = writeln!(
        out,
        "\nCosts are the billed tokens stored with the answers the verdicts came from (the same when a rerun finds them in the cache; probe calls and failed attempts aside), divided by the verdicts decided; a \"decided\" panel's are the calls it would make on these outputs given the judges' answers, at each judge's cost per call."
    );
    flagged_judges(out, c);
    cascade(out, c);
    match &c.recommended {
        Some(r) => {
            let _ = writeln!(
                out,
                "\n**Recommended** (among panels deciding at least {:.0}% of the items, the cheapest within {} κ of the best): {} with quorum {}{} — κ {}, decides {:.1}%, USD {} per 1,000 verdicts.",
                c.min_coverage * 100.0,
                c.within,
                r.judges.join(", "),
                r.quorum,
                if r.mode == crate::judge::config::VoteMode::Decided {
                    ", mode \"decided\" in this order"
                } else {
                    ""
                },
                opt(r.kappa, 3),
                r.coverage * 100.0,
                opt(r.cost_per_1000, 3)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "\n**No panel recommended:** none {}decides at least {:.0}% of the labelled items (--min-coverage).",
                if c.flagged_by.is_empty() || c.flagged_judges == FlaggedJudges::Allowed {
                    ""
                } else {
                    "without a judge a probe flagged "
                },
                c.min_coverage * 100.0
            );
        }
    }
}

/// The cascade fitted for `--target-agreement`, and its panel file.
fn cascade(out: &mut String, c: &Calibration) {
    let Some(k) = &c.cascade else { return };
    let g = k.guarantee;
    let _ = writeln!(
        out,
        "\n## Cascade (vote mode \"escalate\")\n\nFitted for agreement with gold on at least {} of the rubrics it decides, with probability at least {} (fixed-sequence binomial test per judge at risk {} / {} judges; docs/judges.md). Judges in asking order, cheapest per call first:\n\n| judge | threshold (share of its repeats agreeing) | items reaching it |\n|---|---|---|",
        g.target_agreement,
        1.0 - g.risk,
        g.risk,
        k.judges.len()
    );
    for ((name, t), reached) in k.judges.iter().zip(&k.thresholds).zip(&k.reached) {
        let t = t.map_or("none holds: never trusted, left out".to_string(), |t| format!("{t:.3}"));
        let _ = writeln!(out, "| {name} | {t} | {reached} |");
    }
    let _ = writeln!(
        out,
        "\nOn this set it decides {:.1}% of {} items (the rest abstain: their rows are incomplete), agreeing with gold on {}; USD {} per 1,000 decided verdicts (at most: narrowed calls cost less).",
        k.coverage * 100.0,
        k.items,
        k.agreement.map_or("—".into(), |a| format!("{:.1}%", a * 100.0)),
        opt(k.cost_per_1000, 3)
    );
    let _ = if k.trusts_a_judge() {
        writeln!(out, "\nThe panel that runs it: `{}` in this folder.", super::cascade::PANEL_FILE)
    } else {
        writeln!(out, "\nNo judge meets the target on this set: no panel is written.")
    };
}

/// Who a probe flagged, and what that did to the recommendation.
fn flagged_judges(out: &mut String, c: &Calibration) {
    if c.flagged_by.is_empty() {
        return;
    }
    let who: Vec<String> =
        c.flagged_by.iter().map(|(j, by)| format!("{j} (probe {})", by.join(", "))).collect();
    let _ = write!(out, "\n**Flagged judges:** {}. ", who.join("; "));
    let flagged_in = |p: &PanelChoice| -> Vec<String> {
        p.judges.iter().filter(|j| c.flagged_by.contains_key(*j)).cloned().collect()
    };
    match (c.flagged_judges, &c.recommended) {
        (FlaggedJudges::Excluded, _) => {
            let _ = writeln!(
                out,
                "No panel with one of them is recommended (`--allow-flagged` to consider them)."
            );
        }
        (FlaggedJudges::Allowed, Some(r)) if !flagged_in(r).is_empty() => {
            let _ = write!(
                out,
                "The recommended panel includes {} (`--allow-flagged`). ",
                flagged_in(r).join(", ")
            );
            match &c.best_unflagged {
                Some(b) => {
                    let _ = writeln!(
                        out,
                        "The best panel without a flagged judge: {} with quorum {} — κ {}, decides {:.1}%, USD {} per 1,000 verdicts.",
                        b.judges.join(", "),
                        b.quorum,
                        opt(b.kappa, 3),
                        b.coverage * 100.0,
                        opt(b.cost_per_1000, 3)
                    );
                }
                None => {
                    let _ = writeln!(out, "No panel without a flagged judge qualifies.");
                }
            }
        }
        (FlaggedJudges::Allowed, _) => {
            let _ = writeln!(out, "The recommended panel has none of them.");
        }
    }
}

fn probes(out: &mut String, c: &Calibration) {
    for (name, p) in &c.probes {
        let _ = writeln!(out, "\n## Probe: {name}\n\n{}\n", p.about);
        if !p.rates.is_empty() {
            out.push_str("| rater | compared | moved | rate [95% CI] | its repeat movement |\n|---|---|---|---|---|\n");
            for (rater, r) in &p.rates {
                let base =
                    p.baseline.get(rater).map(|b| format!("{b:.3}")).unwrap_or_else(|| "—".into());
                let _ = writeln!(
                    out,
                    "| {rater} | {} | {} | {} | {base} |",
                    r.compared,
                    r.moved,
                    est(&r.rate)
                );
            }
        }
        if !p.flagged.is_empty() {
            let _ = writeln!(out, "\n**Flagged:** {}", p.flagged.join(", "));
        }
        for (view, per) in &p.views {
            let cells: Vec<String> = per
                .iter()
                .map(|(r, b)| {
                    format!("{r} κ {} / accuracy {}", opt(b.kappa, 3), opt(b.accuracy, 3))
                })
                .collect();
            let _ = writeln!(out, "\n{view} view: {}", cells.join("; "));
        }
        if !p.rewards.is_empty() {
            let values: Vec<f64> = p.rewards.values().flatten().copied().collect();
            let mean =
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
            let _ = writeln!(
                out,
                "\nPanel reward: mean {} over {} tasks",
                opt(mean, 3),
                p.rewards.len()
            );
            for (task, r) in &p.rewards {
                let _ = writeln!(out, "- {task}: {}", opt(*r, 4));
            }
        }
        for note in &p.notes {
            let _ = writeln!(out, "\n_{note}_");
        }
        for m in p.items.iter().take(30) {
            let v = |x: Option<crate::verdict::Verdict>| x.map(|v| v.as_str()).unwrap_or("—");
            let _ = writeln!(
                out,
                "- {} {} {} {}: {} → {}",
                m.judge,
                m.task,
                m.output,
                m.rubric,
                v(m.before),
                v(m.after)
            );
        }
        if p.items.len() > 30 {
            let _ = writeln!(out, "- … {} more in calibration.json", p.items.len() - 30);
        }
    }
}

fn disagreements(out: &mut String, c: &Calibration) {
    let _ = writeln!(out, "\n## Disagreements with gold ({})\n", c.disagreements.len());
    for o in &c.disagreements {
        let _ = writeln!(
            out,
            "### {} · {} · {} (weight {}, {})\n\ngold: **{}** — {}\n\npanel: {}\n",
            o.task,
            o.output,
            o.rubric,
            o.weight,
            o.category,
            o.gold.as_str(),
            o.reason,
            o.panel.map(|v| v.as_str()).unwrap_or("no verdict")
        );
        for (judge, vote) in &o.votes {
            let note = o.notes.get(judge).map(String::as_str).unwrap_or("");
            let _ = writeln!(
                out,
                "- {judge}: {} — {note}",
                vote.map(|v| v.as_str()).unwrap_or("abstained")
            );
        }
        out.push('\n');
    }
}
