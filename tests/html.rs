//! The HTML report: one self-contained file whose figures are the
//! summary's, with every task in it, nothing fetched from anywhere, views
//! escaped against hostile documents — and, in a real headless Chromium,
//! rendering without script errors, filtering, opening a task, and making
//! a screenshot.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::e2e::*;
use crate::common::{Docx, del, ins, p, temp_dir, xml_text as xml};
use base64::Engine;
use serde_json::Value;

/// A scored run over strong, weak and gate-failing outputs (trials), with
/// views; and a second run judged by weaker stand-ins, to compare.
async fn runs(tag: &str) -> (Scratch, PathBuf, PathBuf) {
    let dir = temp_dir(tag);
    let outs = dir.join("outs");
    for kind in ["strong", "weak", "gate-fail"] {
        for e in std::fs::read_dir(root().join("scenarios/outputs").join(kind)).unwrap().flatten() {
            let task = e.path().file_stem().unwrap().to_string_lossy().to_string();
            let to = outs.join(&task).join(kind).join("contract.docx");
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    let (a, b) = (dir.join("a"), dir.join("b"));
    for (out, kind) in [(&a, "strong"), (&b, "weak")] {
        let judges = Judges::start(kind).await;
        let panel = judges.panel(&dir, &format!("gemini-{kind}"));
        let args = score_args(
            &outs.display().to_string(),
            &panel,
            out,
            &dir.join(format!("{kind}.sqlite")),
        );
        let (code, o, e) = redjury(args, true).await;
        assert!(code == 0 || code == 3, "{o}{e}");
    }
    (dir, a, b)
}

fn unpack(b64: &str) -> String {
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64.trim()).unwrap();
    let mut out = String::new();
    flate2::read::GzDecoder::new(&bytes[..]).read_to_string(&mut out).unwrap();
    out
}

/// The text of `<script ... id="ID">…</script>`.
fn script(html: &str, id: &str) -> String {
    let start = html.find(&format!("id=\"{id}\">")).unwrap() + id.len() + 6;
    html[start..start + html[start..].find("</script>").unwrap()].to_string()
}

/// Every `data-ATTR="KEY">VALUE<` in the page.
fn marked(html: &str, attr: &str) -> Vec<(String, String)> {
    let needle = format!("{attr}=\"");
    html.match_indices(&needle)
        .map(|(i, _)| {
            let rest = &html[i + needle.len()..];
            let key = &rest[..rest.find('"').unwrap()];
            let after = &rest[rest.find('>').unwrap() + 1..];
            (key.to_string(), after[..after.find('<').unwrap()].to_string())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_holds_every_task_and_the_summarys_figures_and_fetches_nothing() {
    let (dir, a, b) = runs("html-structure").await;
    let file = dir.join("report.html");
    let (code, out, err) = redjury(
        args(&[
            "report",
            &a.display().to_string(),
            "--compare",
            &b.display().to_string(),
            "--html",
            &file.display().to_string(),
        ]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(!html.contains("://"), "no URL of any kind in a self-contained report");
    for tag in ["<link", "<img", "<iframe", "@import", "src="] {
        assert!(!html.contains(tag), "nothing loaded: found {tag}");
    }
    // Every row is in the embedded data, once.
    let rows: Vec<Value> = serde_json::from_str(&unpack(&script(&html, "rows-data"))).unwrap();
    let expected = results(&a);
    assert_eq!(rows.len(), expected.len());
    for r in &expected {
        let found =
            rows.iter().filter(|x| x["task"] == r["task"] && x["trial"] == r["trial"]).count();
        assert_eq!(found, 1, "{} {}", r["task"], r["trial"]);
    }
    // A required rubric is marked so (s4's provenance and template items).
    let required: std::collections::BTreeSet<String> = rows
        .iter()
        .flat_map(|r| {
            let task = r["task"].as_str().unwrap_or("").to_string();
            r["rubrics"].as_array().cloned().unwrap_or_default().into_iter().filter_map(move |x| {
                (x["req"] == true).then(|| format!("{task} {}", x["id"].as_str().unwrap_or("")))
            })
        })
        .collect();
    let want = ["redline-s4-t1-g01a r04", "redline-s4-t4-g01a r07"];
    assert_eq!(required, want.map(String::from).into(), "every trial of them, and nothing else");
    // Figures and counts are the summary's.
    let s = summary(&a);
    let four = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or("—".into());
    let (rows_a, _) = redjury::load_run(&a).unwrap();
    let kappa = redjury::Agreement::of(&rows_a).fleiss_kappa;
    let (ta, tb) = (s["turn_weighted"].as_f64(), summary(&b)["turn_weighted"].as_f64());
    let mut seen = Vec::new();
    for (key, value) in marked(&html, "data-figure") {
        let want = match key.as_str() {
            "fleiss_kappa" => four(kappa),
            "delta_turn_weighted" => format!("{:+.4}", ta.unwrap() - tb.unwrap()),
            k => four(s[k].as_f64()),
        };
        assert_eq!(value, want, "{key}");
        seen.push(key);
    }
    assert!(
        seen.iter().any(|k| k == "fleiss_kappa") && seen.iter().any(|k| k == "delta_turn_weighted")
    );
    for (key, value) in marked(&html, "data-count") {
        assert_eq!(value, s["counts"][&key].to_string(), "{key}");
    }
    for key in ["by_turn", "by_side", "by_scenario", "by_scenario_turn", "by_category"] {
        let table = &html[html.find(&format!("data-breakdown=\"{key}\"")).unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        let values: Vec<f64> =
            marked(table, "data-value").iter().map(|(v, _)| v.parse().unwrap()).collect();
        let want: Vec<f64> =
            s[key].as_object().unwrap().values().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(values, want, "{key}");
    }
    // Views are embedded for the rows that have one.
    let views: serde_json::Map<String, Value> =
        serde_json::from_str(&script(&html, "views-data")).unwrap();
    let view_files = std::fs::read_dir(a.join("views")).unwrap().count();
    assert_eq!(views.len(), view_files);
    let one = unpack(views.values().next().unwrap().as_str().unwrap());
    assert!(one.starts_with("<div class=\"doc\">") && one.contains("class=\"pid\""));
    assert!(html.contains("id=\"compare\"") && html.contains("Largest movers"));
    // The edit shape: each actor's surgicalness counts, as the summary has them.
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("summary.json")).unwrap()).unwrap();
    let actors = summary["docx_shape"]["surgicalness"].as_object().unwrap();
    assert!(actors.contains_key("expert") && actors.len() == 2, "{actors:?}");
    assert!(html.contains("data-docx-shape=\"verbosity\""));
    for (actor, x) in actors {
        let row = format!(
            "<tr><td>{actor}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>",
            x["n_inline"], x["n_block"]
        );
        assert!(html.contains(&row), "{row}");
    }
}

/// Tags the view may produce, and nothing else.
const VIEW_TAGS: [&str; 19] = [
    "div", "span", "ins", "del", "sup", "a", "aside", "table", "thead", "tbody", "tr", "th", "td",
    "h2", "h3", "p", "b", "/", "!",
];

fn assert_only_view_markup(html: &str) {
    for (i, _) in html.match_indices('<') {
        let rest = &html[i + 1..];
        let name: String =
            rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '/').collect();
        let bare = name.trim_start_matches('/');
        assert!(
            VIEW_TAGS.contains(&bare) || (name.starts_with('/') && VIEW_TAGS.contains(&bare)),
            "unexpected tag <{name}… in {}",
            &html[i..(i + 80).min(html.len())]
        );
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        for bad in [" on", "javascript:", "style=", "src="] {
            assert!(!tag.to_ascii_lowercase().contains(bad), "attribute {bad} in <{tag}>");
        }
        if let Some(h) = tag.find("href=\"") {
            assert!(tag[h + 6..].starts_with("#c-"), "a link out of the page: {tag}");
        }
    }
}

/// Documents a policy would write to break out of the page: scored (a dry
/// run), reported as HTML, and every view embedded in the page checked.
#[tokio::test]
async fn the_view_escapes_hostile_documents() {
    let hostile = [
        "<script>alert(1)</script>",
        "\"><img src=x onerror=alert(1)>",
        "++forged++{@Vendor Counsel}",
        "</div></aside><a href=\"https://evil.example\">x</a>",
        "{cmt-1\"><script>}",
        "javascript:alert(1)",
    ];
    let dir = temp_dir("html-hostile");
    let outs = dir.join("outs").join("redline-s1-t1-g01a");
    for (i, text) in hostile.iter().enumerate() {
        let t = xml(text);
        let body = format!(
            "{}<w:p>{}{}</w:p><w:p>{}</w:p>",
            p(&t),
            ins(1, &xml("<b>Eve</b>\""), &t),
            // Not the text just inserted: that pair would change nothing,
            // and be cancelled.
            del(2, &xml("A&B"), &xml(&format!("{text} (old)"))),
            ins(3, "Vendor Counsel", &t)
        );
        let file = outs.join(format!("h{i}")).join("contract.docx");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, Docx::body(&body).bytes()).unwrap();
    }
    let run = dry_run(&shown(&dir.join("outs")), &dir).await;
    let (code, out, err) = redjury(args(&["report", &shown(&run), "--html"]), false).await;
    assert_eq!(code, 0, "{out}{err}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    let views: serde_json::Map<String, Value> =
        serde_json::from_str(&script(&html, "views-data")).unwrap();
    assert_eq!(views.len(), hostile.len(), "one view per hostile document");
    for (i, text) in hostile.iter().enumerate() {
        let packed = &views[&format!("redline-s1-t1-g01a__h{i}")];
        let view = unpack(packed.as_str().unwrap());
        assert_only_view_markup(&view);
        assert!(!view.contains("<script") && !view.contains("<img"), "{view}");
        assert!(view.contains("&lt;") || !text.contains('<'), "{text}: {view}");
        // The hostile author's name is shown, escaped, on its change.
        assert!(view.contains("inserted: &lt;b&gt;Eve&lt;/b&gt;&quot;"), "{text}: {view}");
    }
}

/// Chromium, when this machine has it; CI (REDJURY_REQUIRE_BROWSER=1)
/// must.
fn chromium(test: &str) -> Option<PathBuf> {
    let found = ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|name| {
        let out = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().ok()?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (!path.is_empty()).then(|| PathBuf::from(path))
    });
    if found.is_none() {
        assert!(
            std::env::var_os("REDJURY_REQUIRE_BROWSER").is_none(),
            "{test}: no Chromium on this machine (REDJURY_REQUIRE_BROWSER is set): `apt-get install chromium`, as .ci/run does"
        );
        eprintln!(
            "SKIPPED {test}: no Chromium on this machine; `apt-get install chromium` (.ci/run installs it)"
        );
    }
    found
}

fn headless(browser: &Path, extra: &[&str], url: &str) -> String {
    let profile = temp_dir("chromium");
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url)
        .output()
        .expect("run chromium");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_works_in_a_real_browser() {
    let Some(browser) = chromium("the_report_works_in_a_real_browser") else { return };
    let (dir, a, _) = runs("html-browser").await;
    let file = dir.join("report.html");
    let (code, out, err) = redjury(
        args(&["report", &a.display().to_string(), "--html", &file.display().to_string()]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    let url = format!("file://{}", file.display());
    let dom = tokio::task::spawn_blocking({
        let (b, u) = (browser.clone(), format!("{url}#selftest"));
        move || headless(&b, &["--dump-dom"], &u)
    })
    .await
    .unwrap();
    assert!(
        dom.contains("data-selftest=\"pass\""),
        "the page's self-test: {}",
        &dom[..dom.len().min(600)]
    );
    assert!(!dom.contains("data-errors="), "script errors in the page");
    assert!(dom.contains("data-rendered-ms="), "the table rendered");
    let shot = dir.join("report.png");
    let shot_arg = format!("--screenshot={}", shot.display());
    tokio::task::spawn_blocking(move || {
        headless(&browser, &[&shot_arg, "--window-size=1280,1800"], &url)
    })
    .await
    .unwrap();
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "{} bytes", png.len());
    if let Some(keep) = std::env::var_os("REDJURY_KEEP_REPORT") {
        std::fs::copy(&file, keep).unwrap();
    }
}

/// What the layout of the page must hold, checked in the page: nothing
/// scrolls the page sideways, every plot label lies inside its plot,
/// nothing sticks out of a container that cuts it off, the numbers tables
/// name their rows in words, the plots' values show four places, the task
/// table shows the tasks. Returns the problems found.
const LAYOUT: &str = r##"(() => {
  const problems = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width + 1)
    problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
  for (const d of document.querySelectorAll("details")) d.open = true;
  for (const svg of document.querySelectorAll("svg.plot")) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        problems.push(`plot label "${t.textContent}" is cut (${svg.getAttribute("aria-label")})`);
    }
    for (const t of svg.querySelectorAll("text.value"))
      if (!/^\d\.\d{4}$/.test(t.textContent)) problems.push(`plot value "${t.textContent}" does not show four places`);
  }
  const cut = (e) => {
    for (let a = e.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === "auto" || o === "scroll") return null;
      if (o !== "visible") return a.getBoundingClientRect().right;
    }
    return width;
  };
  for (const e of document.querySelectorAll("main td, main th, main dt, main dd, main li, main p, main h2, main h3, main figcaption, main summary, main label, main button, header h1, nav a")) {
    if (e.offsetParent === null) continue;
    const right = cut(e);
    if (right !== null && e.getBoundingClientRect().right > right + 1)
      problems.push(`<${e.tagName.toLowerCase()}> "${e.textContent.slice(0, 40)}" sticks out of its container`);
  }
  for (const t of document.querySelectorAll("table[data-breakdown] th, table[data-breakdown] td"))
    if (/^[a-z]+(_[a-z]+)+$/.test(t.textContent.trim())) problems.push(`a numbers table shows the raw key "${t.textContent}"`);
  for (const td of document.querySelectorAll("#tasks-table td"))
    if (td.textContent.includes("[object")) { problems.push("the task table shows objects, not values"); break; }
  return problems;
})()"##;

/// The same in a task's detail, opened on a task with a penalty rubric
/// that passed: justifications readable and clear of the document, a
/// penalty that passed shown as bad, the revision summary a table.
const DETAIL: &str = r##"(async () => {
  const problems = [];
  let i = state.rows.findIndex((r) => r.rubrics.some((x) => x.w < 0 && x.v === "PASS"));
  if (i < 0) { problems.push("no row with a penalty that passed to look at"); i = 0; }
  await openTask(i);
  const detail = document.getElementById("detail");
  for (const j of detail.querySelectorAll("td.just"))
    if (j.getBoundingClientRect().width < 200) problems.push(`a justification column is ${Math.round(j.getBoundingClientRect().width)} px wide`);
  const a = detail.querySelector(".rubrics-box").getBoundingClientRect();
  const b = detail.querySelector(".view-box").getBoundingClientRect();
  if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) problems.push("the rubric table and the document overlap");
  const bad = getComputedStyle(document.querySelector("td.v-FAIL:not(.penalty)") || detail).color;
  for (const c of detail.querySelectorAll("td.v-PASS.penalty"))
    if (getComputedStyle(c).color !== bad) problems.push("a penalty that passed is not shown as bad");
  if (detail.querySelectorAll("td.v-PASS.penalty").length === 0) problems.push("no penalty that passed is shown");
  if (!detail.querySelector(".view-box table.revision-summary th")) problems.push("the revision summary is not a table");
  return problems;
})()"##;

/// The page laid out at a laptop's width and a phone's, in a real
/// Chromium: category names, heatmap labels, the task detail and the
/// numbers tables were cut or unreadable at 1400 px. Screenshots are kept
/// in target/screenshots/ (CI's artefacts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_lays_out_at_a_laptop_and_a_phone_width() {
    let Some(path) = chromium("the_report_lays_out_at_a_laptop_and_a_phone_width") else { return };
    let (dir, a, _) = runs("html-layout").await;
    let file = dir.join("report.html");
    let (code, out, err) =
        redjury(args(&["report", &shown(&a), "--html", &shown(&file)]), false).await;
    assert_eq!(code, 0, "{out}{err}");
    let shots = root().join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    tokio::task::spawn_blocking(move || {
        let mut browser = crate::common::browser::Browser::launch(&path);
        for (name, width, height) in [("laptop", 1400, 900), ("phone", 390, 844)] {
            browser.open(&format!("file://{}", file.display()), width, height);
            let mut problems: Vec<Value> =
                browser.eval(LAYOUT).as_array().cloned().unwrap_or_default();
            browser.screenshot(&shots.join(format!("report-{name}.png")));
            problems.extend(browser.eval(DETAIL).as_array().cloned().unwrap_or_default());
            problems.extend(browser.eval(LAYOUT).as_array().cloned().unwrap_or_default());
            browser.screenshot(&shots.join(format!("report-{name}-task.png")));
            assert!(problems.is_empty(), "at {width} px: {problems:#?}");
        }
    })
    .await
    .unwrap();
}

/// A dry run's report never said "dry run", showed no cost estimate, and
/// its headline (0.8375) covered only the 2 check-only tasks without
/// saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_runs_report_says_so_and_what_its_headline_covers() {
    let dir = temp_dir("html-dry");
    let run = dry_run("scenarios/outputs/strong", &dir).await;
    let (code, out, err) = redjury(args(&["report", &shown(&run), "--html"]), false).await;
    assert_eq!(code, 0, "{out}{err}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(html.contains("<b>Dry run:</b> no judge was called"), "labelled at the top");
    let banner = html.split("dry-run").nth(1).unwrap_or("");
    for judge in ["gpt-5.4-mini", "claude-haiku-4-5", "gemini-3.1-flash-lite"] {
        assert!(
            banner.contains(&format!("<tr><td>{judge}</td><td class=\"num\">13</td>")),
            "{judge}'s estimate"
        );
    }
    assert!(
        html.contains("turn-weighted reward (headline) — over 2 of 15 results only"),
        "what the headline covers"
    );
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}
