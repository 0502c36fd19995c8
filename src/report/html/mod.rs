//! `redjury report DIR --html`: one self-contained HTML file per run — the
//! overview with plots, the judges, every task with its rubrics beside the
//! view the judges read, and (with `--compare`) the paired comparison.
//!
//! Owns: formatting the computed figures as HTML (the same figures the
//! Markdown summary formats: nothing is computed here but layout), the
//! embedding of rows and views (gzip + base64, unpacked by the browser's
//! own DecompressionStream), and the page's CSS and script. Must never put
//! a URL in the file (no CDN, no font, nothing fetched: it opens from
//! `file://` and from an email), and never let run data reach the page
//! unescaped.

pub(crate) mod svg;
pub(crate) mod view;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use base64::Engine;
use serde_json::json;

use crate::aggregate::agreement::Agreement;
use crate::aggregate::compare::Comparison;
use crate::report::Summary;
use crate::score::{RubricKind, Status, TaskResult};
use crate::verdict::Verdict;

const CSS: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Text escaped for HTML content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    if !s.contains(['&', '<', '>', '"', '\'']) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// One rater's agreement with gold, from a calibration (formatted only).
#[derive(Debug, Clone)]
pub(crate) struct Trust {
    /// The judge or the panel.
    pub rater: String,
    /// Labelled items.
    pub items: u64,
    /// (value, CI) of accuracy, Cohen's κ and macro-F1.
    pub figures: [Option<(f64, Option<[f64; 2]>)>; 3],
}

/// The other run, for `--compare`.
pub(crate) struct Against<'a> {
    /// Its folder (for the title).
    pub dir: &'a Path,
    /// The comparison (A = this run).
    pub comparison: &'a Comparison,
}

/// Where the views of the run's rows are, and how much of them to embed.
pub(crate) struct Views<'a> {
    /// The results folder's `views/`, if it has one.
    pub dir: Option<&'a Path>,
    /// Compressed bytes of views to embed at most; rows that matter most
    /// (judges split, incomplete, gate-failed) first.
    pub budget: usize,
}

/// Everything a report page shows.
pub(crate) struct Page<'a> {
    /// The results folder.
    pub dir: &'a Path,
    /// Its summary.
    pub summary: &'a Summary,
    /// Its rows.
    pub rows: &'a [TaskResult],
    /// Judge agreement over its rows.
    pub agreement: &'a Agreement,
    /// Calibration figures, when a calibration folder is given.
    pub trust: Option<&'a [Trust]>,
    /// The run compared against, with `--compare`.
    pub against: Option<Against<'a>>,
    /// The views.
    pub views: Views<'a>,
}

fn gzip_b64(bytes: &[u8]) -> String {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = enc.write_all(bytes);
    let packed = enc.finish().unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(packed)
}

/// JSON safe inside a `<script>` element.
fn script_json(v: &serde_json::Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

fn fmt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.4}")).unwrap_or_else(|| "—".into())
}

fn ci(v: Option<[f64; 2]>) -> String {
    v.map(|[a, b]| format!("[{a:.4}, {b:.4}]")).unwrap_or_else(|| "—".into())
}

/// Whether the judges split on any rubric of the row.
fn split(r: &TaskResult) -> bool {
    r.rubrics.iter().filter(|x| x.kind == RubricKind::Llm).any(|x| {
        let votes: Vec<Verdict> = x.votes.values().flatten().copied().collect();
        votes.contains(&Verdict::Pass) && votes.contains(&Verdict::Fail)
    })
}

/// The file name of a row's view (as the run wrote it).
fn view_key(r: &TaskResult) -> String {
    if r.trial == "1" { r.task.clone() } else { format!("{}__{}", r.task, r.trial) }
}

fn row_json(r: &TaskResult) -> serde_json::Value {
    let rubrics: Vec<serde_json::Value> = r
        .rubrics
        .iter()
        .map(|x| {
            json!({
                "id": x.id, "kind": if x.kind == RubricKind::Check { "check" } else { "llm" },
                "w": x.weight, "cat": x.category, "v": x.verdict,
                "votes": x.votes, "just": x.justifications, "abst": x.abstentions,
                "req": x.required,
            })
        })
        .collect();
    json!({
        "k": view_key(r), "task": r.task, "trial": r.trial, "scenario": r.scenario, "turn": r.turn,
        "side": r.side.as_str(), "group": r.group, "status": status_name(r.status), "reward": r.reward,
        "gate": r.gate.reason, "reason": r.reason, "split": split(r), "rubrics": rubrics,
    })
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Scored => "scored",
        Status::GateFailed => "gate_failed",
        Status::Incomplete => "incomplete",
        Status::Pending => "pending",
    }
}

/// The views to embed, within the budget, the rows that matter most first.
/// Views are converted and compressed on all cores.
fn embedded_views(rows: &[TaskResult], views: &Views<'_>) -> BTreeMap<String, String> {
    let Some(dir) = views.dir else { return BTreeMap::new() };
    let mut order: Vec<&TaskResult> = rows.iter().collect();
    order.sort_by_key(|r| match (split(r), r.status) {
        (_, Status::Incomplete) => 0,
        (true, _) => 1,
        (_, Status::GateFailed) => 2,
        _ => 3,
    });
    // Rows read back are checked for plain names; a name that is not one
    // never reaches a path, whoever made the rows.
    let keys: Vec<String> = order
        .iter()
        .filter(|r| {
            crate::task::check_plain_name("task", &r.task).is_ok()
                && crate::task::check_plain_name("trial", &r.trial).is_ok()
        })
        .map(|r| view_key(r))
        .collect();
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let mut out = BTreeMap::new();
    let mut used = 0;
    // In priority order, a batch at a time across the cores, until the
    // budget is spent: views past it are never read.
    for batch in keys.chunks(64 * threads) {
        let part = batch.len().div_ceil(threads).max(1);
        let packed: Vec<Vec<(String, String)>> = std::thread::scope(|s| {
            let handles: Vec<_> = batch
                .chunks(part)
                .map(|keys| {
                    s.spawn(move || {
                        keys.iter()
                            .filter_map(|k| {
                                let text =
                                    std::fs::read_to_string(dir.join(format!("{k}.md"))).ok()?;
                                Some((k.clone(), gzip_b64(view::to_html(&text).as_bytes())))
                            })
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
        });
        for (k, b64) in packed.into_iter().flatten() {
            if used + b64.len() > views.budget {
                return out;
            }
            used += b64.len();
            out.insert(k, b64);
        }
    }
    out
}

/// The page allows nothing from outside itself: its one script and style
/// are inline, images only as data, and no request may leave it.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; form-action 'none'; base-uri 'none'";

/// The whole page.
pub(crate) fn render(page: &Page<'_>) -> String {
    let s = page.summary;
    let title = format!("redjury report: {}", page.dir.display());
    let mut out = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body>",
        escape(&title)
    );
    let _ = write!(
        out,
        "<header><h1>{}</h1><nav aria-label=\"Sections\"><a href=\"#overview\">Overview</a><a href=\"#judges\">Judges</a><a href=\"#tasks\">Tasks</a>{}</nav></header><main>",
        escape(&title),
        if page.against.is_some() { "<a href=\"#compare\">Compare</a>" } else { "" }
    );
    overview(&mut out, s);
    judges(&mut out, s, page.agreement, page.trust);
    tasks(&mut out, page);
    if let Some(a) = &page.against {
        compare(&mut out, a);
    }
    out.push_str("</main>");
    let rows: Vec<serde_json::Value> = page.rows.iter().map(row_json).collect();
    let judges: Vec<&String> = s.judges.keys().collect();
    let views = embedded_views(page.rows, &page.views);
    let _ = write!(
        out,
        "<script type=\"application/json\" id=\"judges-data\">{}</script><script type=\"application/octet-stream\" id=\"rows-data\">{}</script><script type=\"application/json\" id=\"views-data\">{}</script><script>{SCRIPT}</script></body></html>",
        script_json(&json!(judges)),
        gzip_b64(serde_json::Value::Array(rows).to_string().as_bytes()),
        script_json(&json!(views))
    );
    out
}

fn figure(out: &mut String, key: &str, label: &str, value: Option<f64>, note: &str) {
    let _ = write!(
        out,
        "<div><dt>{label}</dt><dd data-figure=\"{key}\">{}</dd><dd class=\"muted\">{}</dd></div>",
        fmt(value),
        escape(note)
    );
}

fn overview(out: &mut String, s: &Summary) {
    let c = &s.counts;
    out.push_str("<section id=\"overview\" aria-labelledby=\"h-overview\"><h2 id=\"h-overview\">Overview</h2>");
    dry_run(out, s);
    let counted = s.counted();
    let over = if counted < c.results {
        format!(" — over {counted} of {} results only", c.results)
    } else {
        String::new()
    };
    if counted < c.results || c.missing_outputs > 0 {
        let _ = write!(
            out,
            "<p class=\"banner\" role=\"note\">Figures over {counted} of {} results: {} incomplete, {} pending; {} without an output.</p>",
            c.results,
            c.incomplete,
            c.pending,
            crate::report::markdown::plural(c.missing_outputs, "task", "tasks")
        );
    }
    out.push_str("<dl class=\"headline\">");
    figure(
        out,
        "turn_weighted",
        &format!("turn-weighted reward (headline){over}"),
        s.figures.turn_weighted,
        &format!("95% CI {} (reference), {} (groups)", ci(s.ci95), ci(s.ci95_groups)),
    );
    figure(out, "overall", "overall (mean over input groups)", s.figures.overall, "");
    figure(out, "mean_per_task", "mean per task", s.figures.mean_per_task, "");
    let _ = write!(
        out,
        "<div><dt>results</dt><dd data-count=\"results\">{}</dd><dd class=\"muted\"><span data-count=\"scored\">{}</span> scored · <span data-count=\"gate_failed\">{}</span> gate-failed · <span data-count=\"incomplete\">{}</span> incomplete · <span data-count=\"pending\">{}</span> pending</dd></div></dl>",
        c.results, c.scored, c.gate_failed, c.incomplete, c.pending
    );
    problems(out, s);
    let cis = s.ci95_breakdowns.clone().unwrap_or_default();
    out.push_str("<div class=\"plots\">");
    let f = &s.figures;
    for (title, key, values, intervals) in [
        (("By turn", "turn"), "by_turn", &f.by_turn, &cis.by_turn),
        (("By side", "side"), "by_side", &f.by_side, &cis.by_side),
        (("By scenario", "scenario"), "by_scenario", &f.by_scenario, &cis.by_scenario),
        (
            ("By (scenario, turn) cell", "(scenario, turn) cell"),
            "by_scenario_turn",
            &f.by_scenario_turn,
            &cis.by_scenario_turn,
        ),
        (
            ("By category (share of weight graded correct)", "category"),
            "by_category",
            &f.by_category,
            &cis.by_category,
        ),
    ] {
        plot(out, title, key, values, intervals);
    }
    out.push_str("</div>");
    docx_shape(out, s);
    usage(out, s);
    out.push_str("</section>");
}

/// Surgicalness (inline and block bars, points against the expert) and
/// the turn-1 verbosity table, when the run read .docx outputs.
fn docx_shape(out: &mut String, s: &Summary) {
    let shape = &s.docx_shape;
    if shape.is_empty() {
        return;
    }
    let expert = shape.surgicalness.get(crate::aggregate::shape::EXPERT).map(|e| e.inline_share);
    let items: Vec<(String, f64, Option<[f64; 2]>)> =
        shape.surgicalness.iter().map(|(k, v)| (k.clone(), v.inline_share, None)).collect();
    let title = "Surgicalness: share of tracked-change events that are inline";
    let _ = write!(
        out,
        "<h3>Edit shape</h3><figure><figcaption>{}</figcaption>{}</figure><div class=\"table-box\"><table data-docx-shape=\"surgicalness\"><thead><tr><th scope=\"col\">actor</th><th scope=\"col\" class=\"num\">inline</th><th scope=\"col\" class=\"num\">block</th><th scope=\"col\" class=\"num\">inline share</th><th scope=\"col\" class=\"num\">block share</th><th scope=\"col\" class=\"num\">against the expert (points)</th><th scope=\"col\" class=\"num\">documents</th></tr></thead><tbody>",
        escape(title),
        svg::bars(title, &items)
    );
    for (actor, x) in &shape.surgicalness {
        let against = match expert {
            Some(e) if actor != crate::aggregate::shape::EXPERT => {
                format!("{:+.1}", 100.0 * (x.inline_share - e))
            }
            _ => "—".into(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.4}</td><td class=\"num\">{:.4}</td><td class=\"num\">{against}</td><td class=\"num\">{}</td></tr>",
            escape(actor),
            x.n_inline,
            x.n_block,
            x.inline_share,
            x.block_share,
            x.n_tasks
        );
    }
    out.push_str("</tbody></table></div>");
    if shape.verbosity_turn1.is_empty() {
        return;
    }
    out.push_str("<div class=\"table-box\"><table data-docx-shape=\"verbosity\"><caption>Verbosity trap (turn 1)</caption><thead><tr><th scope=\"col\">actor</th><th scope=\"col\" class=\"num\">redlines per task</th><th scope=\"col\" class=\"num\">edits per touched paragraph</th><th scope=\"col\" class=\"num\">average edit length (chars)</th><th scope=\"col\" class=\"num\">overlap with the expert</th><th scope=\"col\" class=\"num\">documents</th></tr></thead><tbody>");
    for (actor, v) in &shape.verbosity_turn1 {
        let overlap = match (v.overlap_rate, v.n_tasks_with_overlap) {
            (Some(r), Some(n)) => format!("{r:.4} ({n} tasks)"),
            _ => "—".into(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{:.2}</td><td class=\"num\">{:.3}</td><td class=\"num\">{:.1}</td><td class=\"num\">{overlap}</td><td class=\"num\">{}</td></tr>",
            escape(actor),
            v.redlines_per_task,
            v.edits_per_touched_para,
            v.avg_edit_length,
            v.n_tasks
        );
    }
    out.push_str("</tbody></table></div>");
}

/// A dry run says so first, with what the judges would have cost.
fn dry_run(out: &mut String, s: &Summary) {
    if !s.dry_run {
        return;
    }
    out.push_str("<div class=\"banner dry-run\" role=\"note\"><p><b>Dry run:</b> no judge was called; judged rubrics are pending, and the figures cover only the rows that need no judge. What the judges would be asked, at most:</p><table><thead><tr><th scope=\"col\">judge</th><th scope=\"col\" class=\"num\">calls</th><th scope=\"col\" class=\"num\">of which cached</th><th scope=\"col\" class=\"num\">input tokens</th><th scope=\"col\" class=\"num\">cost (USD, at most)</th></tr></thead><tbody>");
    for (name, j) in &s.judges {
        let Some(e) = &j.estimate else { continue };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(name),
            e.calls,
            e.cached_calls,
            e.input_tokens,
            e.max_cost_usd.map(|c| format!("{c:.2}")).unwrap_or_else(|| "no price".into())
        );
    }
    out.push_str("</tbody></table></div>");
}

fn problems(out: &mut String, s: &Summary) {
    for (what, groups) in
        [("Incomplete", &s.problems.incomplete), ("Gate-failed", &s.problems.gate_failed)]
    {
        if groups.is_empty() {
            continue;
        }
        let _ = write!(out, "<h3>{what} rows, by reason</h3><ul>");
        let mut top: Vec<(&String, &Vec<String>)> = groups.iter().collect();
        top.sort_by_key(|(_, rows)| std::cmp::Reverse(rows.len()));
        for (reason, rows) in top.iter().take(10) {
            let n = crate::report::markdown::plural(rows.len(), "row", "rows");
            let _ = write!(out, "<li>{n} — {}</li>", escape(reason));
        }
        out.push_str("</ul>");
    }
}

/// A breakdown's plot and, folded under it, its numbers. `title` is the
/// plot's caption and the table's first column's heading; `key` (the
/// summary's field) only marks the table for programs.
fn plot(
    out: &mut String,
    (title, column): (&str, &str),
    key: &str,
    values: &BTreeMap<String, f64>,
    cis: &BTreeMap<String, [f64; 2]>,
) {
    if values.is_empty() {
        return;
    }
    let items: Vec<(String, f64, Option<[f64; 2]>)> =
        values.iter().map(|(k, v)| (k.clone(), *v, cis.get(k).copied())).collect();
    let _ = write!(
        out,
        "<figure><figcaption>{}</figcaption>{}<details><summary>Numbers</summary><table data-breakdown=\"{key}\"><thead><tr><th scope=\"col\">{}</th><th scope=\"col\" class=\"num\">value</th><th scope=\"col\">95% CI (groups)</th></tr></thead><tbody>",
        escape(title),
        svg::bars(title, &items),
        escape(column)
    );
    for (k, v, c) in &items {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"num\" data-value=\"{v}\">{v:.4}</td><td>{}</td></tr>",
            escape(k),
            ci(*c)
        );
    }
    out.push_str("</tbody></table></details></figure>");
}

fn usage(out: &mut String, s: &Summary) {
    if s.judges.is_empty() {
        return;
    }
    out.push_str("<h3>Judge calls</h3><table><thead><tr><th scope=\"col\">judge</th><th scope=\"col\">model</th><th scope=\"col\" class=\"num\">requests</th><th scope=\"col\" class=\"num\">cache hits</th><th scope=\"col\" class=\"num\">retries</th><th scope=\"col\" class=\"num\">failures</th><th scope=\"col\" class=\"num\">429s</th><th scope=\"col\" class=\"num\">batch calls</th><th scope=\"col\" class=\"num\">input tokens</th><th scope=\"col\" class=\"num\">output tokens</th><th scope=\"col\" class=\"num\">cost (USD, estimate)</th></tr></thead><tbody>");
    for (name, j) in &s.judges {
        let k = &j.counters;
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(name),
            escape(&j.model),
            k.requests,
            k.cache_hits,
            k.retries,
            k.failures,
            k.rate_limited,
            k.batch_calls,
            k.input_tokens + k.batch_input_tokens,
            k.output_tokens + k.batch_output_tokens,
            j.cost.map(|c| format!("{c:.4}")).unwrap_or_else(|| "no price".into())
        );
    }
    out.push_str("</tbody></table>");
    for (name, j) in &s.judges {
        if let Some(why) = &j.stopped {
            let _ = write!(
                out,
                "<p class=\"banner\"><b>{} was stopped during the run:</b> {}</p>",
                escape(name),
                escape(why)
            );
        }
    }
}

fn judges(out: &mut String, s: &Summary, a: &Agreement, trust: Option<&[Trust]>) {
    out.push_str(
        "<section id=\"judges\" aria-labelledby=\"h-judges\"><h2 id=\"h-judges\">Judges</h2>",
    );
    if a.judges.len() >= 2 {
        let index: BTreeMap<&str, usize> =
            a.judges.iter().enumerate().map(|(i, j)| (j.as_str(), i)).collect();
        let n = a.judges.len();
        let mut cells = vec![vec![None; n]; n];
        for (i, row) in cells.iter_mut().enumerate() {
            row[i] = Some(1.0);
        }
        for p in &a.pairs {
            if let (Some(&i), Some(&j)) = (index.get(p.a.as_str()), index.get(p.b.as_str()))
                && p.items > 0
            {
                let v = p.agreed as f64 / p.items as f64;
                cells[i][j] = Some(v);
                cells[j][i] = Some(v);
            }
        }
        let _ = write!(
            out,
            "<figure><figcaption>Pairwise agreement (share of rubrics both judges decided on which they agree)</figcaption>{}</figure>",
            svg::heatmap("Pairwise agreement between judges", &a.judges, &cells)
        );
        let _ = write!(
            out,
            "<p>Fleiss' κ over {} rubric verdicts all judges gave: <b data-figure=\"fleiss_kappa\">{}</b>.",
            a.fleiss_items,
            fmt(a.fleiss_kappa)
        );
        if let Some(d) = a.most_departing() {
            let _ = write!(
                out,
                " The judge that departs most from the panel: <b>{}</b> ({} of {} votes, {:.1}%).",
                escape(&d.judge),
                d.differ,
                d.votes,
                d.rate() * 100.0
            );
        }
        out.push_str("</p>");
    } else {
        out.push_str("<p>Fewer than two judges voted: nothing to compare.</p>");
    }
    if let Some(trust) = trust {
        out.push_str("<h3>Calibration against gold labels</h3><table><thead><tr><th scope=\"col\">rater</th><th scope=\"col\" class=\"num\">items</th><th scope=\"col\">accuracy [95% CI]</th><th scope=\"col\">Cohen's κ [95% CI]</th><th scope=\"col\">macro-F1 [95% CI]</th></tr></thead><tbody>");
        for t in trust {
            let cell = |f: &Option<(f64, Option<[f64; 2]>)>| match f {
                Some((v, Some([a, b]))) => format!("{v:.3} [{a:.3}, {b:.3}]"),
                Some((v, None)) => format!("{v:.3}"),
                None => "—".into(),
            };
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(&t.rater),
                t.items,
                cell(&t.figures[0]),
                cell(&t.figures[1]),
                cell(&t.figures[2])
            );
        }
        out.push_str("</tbody></table>");
    }
    let _ = s;
    out.push_str("</section>");
}

fn tasks(out: &mut String, page: &Page<'_>) {
    out.push_str("<section id=\"tasks\" aria-labelledby=\"h-tasks\"><h2 id=\"h-tasks\">Tasks</h2>");
    out.push_str("<div class=\"controls\"><label>Show <select id=\"filter\"><option value=\"all\">all rows</option><option value=\"split\">judges split</option><option value=\"incomplete\">incomplete</option><option value=\"gate_failed\">gate failed</option><option value=\"scored\">scored</option></select></label><label>Search <input id=\"search\" type=\"search\" placeholder=\"task, group, reason\"></label><span id=\"count\" aria-live=\"polite\"></span></div>");
    out.push_str("<table id=\"tasks-table\"><thead><tr>");
    for (key, label) in [
        ("task", "task"),
        ("trial", "trial"),
        ("scenario", "scenario"),
        ("turn", "turn"),
        ("side", "side"),
        ("group", "group"),
        ("status", "status"),
        ("reward", "reward"),
    ] {
        let _ = write!(
            out,
            "<th scope=\"col\" data-key=\"{key}\" aria-sort=\"none\"><button type=\"button\">{label}</button></th>"
        );
    }
    out.push_str("</tr></thead><tbody></tbody></table><button type=\"button\" id=\"more\" hidden>Show more</button>");
    let _ = write!(
        out,
        "<noscript><p>The task table needs JavaScript; {} rows are in results.jsonl.</p></noscript>",
        page.rows.len()
    );
    out.push_str("<section id=\"detail\" hidden aria-live=\"polite\"><h3></h3><button type=\"button\" class=\"close\">Close</button><p class=\"info muted\"></p><div class=\"detail-grid\"><div class=\"rubrics-box\"></div><div class=\"view-box\"></div></div></section>");
    out.push_str("</section>");
}

fn compare(out: &mut String, a: &Against<'_>) {
    let c = a.comparison;
    let _ = write!(
        out,
        "<section id=\"compare\" aria-labelledby=\"h-compare\"><h2 id=\"h-compare\">Compare</h2><p>{} task × trial rows scored in both runs; A = this run, B = {}.</p>",
        c.rows.len(),
        escape(&a.dir.display().to_string())
    );
    let delta = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => format!("{:+.4}", x - y),
        _ => "—".into(),
    };
    let _ = write!(
        out,
        "<table><thead><tr><th scope=\"col\">figure</th><th scope=\"col\">A</th><th scope=\"col\">B</th><th scope=\"col\">A − B</th><th scope=\"col\">paired 95% CI</th></tr></thead><tbody><tr><td>turn-weighted</td><td>{}</td><td>{}</td><td data-figure=\"delta_turn_weighted\">{}</td><td>{}</td></tr>",
        fmt(c.a.turn_weighted),
        fmt(c.b.turn_weighted),
        delta(c.a.turn_weighted, c.b.turn_weighted),
        ci(c.delta_ci95)
    );
    let cis = c.delta_breakdowns.clone().unwrap_or_default();
    for (what, ma, mb, intervals) in [
        ("turn", &c.a.by_turn, &c.b.by_turn, &cis.by_turn),
        ("side", &c.a.by_side, &c.b.by_side, &cis.by_side),
        ("scenario", &c.a.by_scenario, &c.b.by_scenario, &cis.by_scenario),
        ("cell", &c.a.by_scenario_turn, &c.b.by_scenario_turn, &cis.by_scenario_turn),
        ("category", &c.a.by_category, &c.b.by_category, &cis.by_category),
    ] {
        for (k, x) in ma {
            let y = mb.get(k).copied();
            let _ = write!(
                out,
                "<tr><td>{what} {}</td><td>{x:.4}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(k),
                fmt(y),
                delta(Some(*x), y),
                ci(intervals.get(k).copied())
            );
        }
    }
    out.push_str("</tbody></table>");
    let points: Vec<(String, f64, f64)> =
        c.rows.iter().map(|r| (format!("{} trial {}", r.task, r.trial), r.a, r.b)).collect();
    let _ = write!(
        out,
        "<figure><figcaption>Reward per task: run A against run B</figcaption>{}</figure><h3>Largest movers</h3><ol>",
        svg::scatter("Per-task reward, run A against run B", &points)
    );
    for m in c.movers(15) {
        let _ = write!(
            out,
            "<li>{} trial {}: {:.4} → {:.4} ({:+.4})</li>",
            escape(&m.task),
            escape(&m.trial),
            m.b,
            m.a,
            m.a - m.b
        );
    }
    out.push_str("</ol></section>");
}
