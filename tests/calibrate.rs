//! `redjury calibrate` on the bundled calibration set, with mock judges
//! whose errors are planted: one perfect, one that passes 20% of the
//! penalty items it should fail, one that obeys text in the document, one
//! that fails whatever rubric comes last in the list. The calibration must
//! recover each planted accuracy, flag the injection-follower and the
//! order-sensitive judge, and rank the perfect judge's panel first.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::common::e2e::*;
use crate::common::mock::*;
use redjury::Templates;
use redjury::Verdict;
use redjury::{JudgeMode, OutputSource, Scorer};
use serde_json::Value;

/// What a document in a prompt is.
#[derive(Clone, Debug)]
enum Doc {
    /// A labelled output (task, output name).
    Output(String, String),
    /// The null-output probe's document.
    Null,
    /// The injection probe's copy of a labelled output.
    Injected(String, String),
}

/// A stable hash, the same in the mock and in the test's arithmetic.
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

fn flipped(task: &str, output: &str, rubric: &str) -> bool {
    fnv(&format!("{task}/{output}/{rubric}")).is_multiple_of(5)
}

struct World {
    /// user-message prefix → document.
    prefixes: Vec<(String, Doc)>,
    /// task → output → rubric → gold verdict.
    gold: BTreeMap<String, BTreeMap<String, BTreeMap<String, Verdict>>>,
    /// task → rubric → weight.
    weights: BTreeMap<String, BTreeMap<String, i32>>,
    /// task → judge rubric ids in task order.
    order: BTreeMap<String, Vec<String>>,
}

async fn world() -> World {
    let tasks: Vec<Arc<redjury::Task>> =
        redjury::load_tasks(&root().join("rubrics")).unwrap().into_iter().map(Arc::new).collect();
    let set =
        redjury::GoldSet::load(&root().join("gold"), &[root().join("scenarios/outputs")], &tasks)
            .unwrap();
    let mut gold = BTreeMap::new();
    let mut work = Vec::new();
    for o in &set.outputs {
        let labels: BTreeMap<String, Verdict> =
            o.labels.iter().map(|(k, (v, _))| (k.clone(), *v)).collect();
        gold.entry(o.task.name.clone())
            .or_insert_with(BTreeMap::new)
            .insert(o.output.clone(), labels);
        let bytes = std::fs::read(&o.path).unwrap();
        work.push((
            o.task.clone(),
            bytes.clone(),
            Doc::Output(o.task.name.clone(), o.output.clone()),
        ));
        let injected = redjury::injection_probe_document(&bytes, &o.task.author).unwrap();
        work.push((o.task.clone(), injected, Doc::Injected(o.task.name.clone(), o.output.clone())));
    }
    for t in &tasks {
        if let (Some(input), redjury::OutputKind::Redline) = (&t.input, t.output) {
            let null =
                redjury::null_probe_document(&std::fs::read(input).unwrap(), &t.author).unwrap();
            work.push((t.clone(), null, Doc::Null));
        }
    }
    let cache =
        Arc::new(redjury::Cache::open(&temp_dir("calibrate-world").join("c.sqlite")).unwrap());
    let mut prefixes = Vec::new();
    for templates in [Templates::builtin(), Templates::reference()] {
        let scorer =
            Scorer::with_judges(vec![], 1, templates, cache.clone(), JudgeMode::DryRun).unwrap();
        let items: Vec<_> = work
            .iter()
            .enumerate()
            .map(|(i, (t, b, _))| (t.clone(), OutputSource::Bytes(b.clone()), i.to_string()))
            .collect();
        for p in scorer.prepare_all(items).await {
            let i: usize = p.row.trial.parse().unwrap();
            assert!(p.row.gate.passed, "{:?}: {}", work[i].2, p.row.gate.reason);
            // Tasks made only of checks have no prompt.
            let Some(prompt) = p.prompt else { continue };
            prefixes.push((prompt.user_prefix.clone(), work[i].2.clone()));
        }
    }
    let weights = tasks
        .iter()
        .map(|t| (t.name.clone(), t.rubrics.iter().map(|r| (r.id.clone(), r.weight)).collect()))
        .collect();
    let order = tasks
        .iter()
        .map(|t| (t.name.clone(), t.llm_rubrics().map(|r| r.id.clone()).collect()))
        .collect();
    World { prefixes, gold, weights, order }
}

/// A judge whose errors follow `profile`.
fn planted(world: Arc<World>, profile: &'static str) -> Handler {
    Arc::new(move |req: &Recorded, _| {
        let v = req.json();
        let user = v["messages"][1]["content"].as_str().unwrap_or("");
        let doc = world
            .prefixes
            .iter()
            .find(|(p, _)| user.starts_with(p.as_str()))
            .map(|(_, d)| d.clone());
        let ids = req.rubric_ids();
        let answer = |id: &str| -> Verdict {
            let expected = match &doc {
                Some(Doc::Output(t, o)) | Some(Doc::Injected(t, o)) => {
                    world.gold[t][o].get(id).copied().unwrap_or(Verdict::Fail)
                }
                _ => Verdict::Fail,
            };
            match (&doc, profile) {
                (Some(Doc::Output(t, o) | Doc::Injected(t, o)), "flipper") => {
                    let penalty = world.weights[t][id] < 0;
                    if penalty && expected == Verdict::Fail && flipped(t, o, id) {
                        return Verdict::Pass;
                    }
                    expected
                }
                (Some(Doc::Injected(..)), "follower") => Verdict::Pass,
                // Flips a verdict on about one in four of its answers, by
                // the prompt and how often it was asked it: moves under
                // repeats as much as under any other probe.
                (_, "sampler") => {
                    let seen = sampler_seen(&req.body, id);
                    if fnv(&format!("{}/{id}/{seen}", fnv(&req.body))).is_multiple_of(4) {
                        if expected == Verdict::Pass { Verdict::Fail } else { Verdict::Pass }
                    } else {
                        expected
                    }
                }
                // Flips one answer in four, each independently of the
                // others (FNV's low bits alone are not: of three repeats
                // told apart by their last digit at most one would flip).
                (_, "unsure") => {
                    let seen = sampler_seen(&format!("unsure/{}", req.body), id);
                    let mut z = fnv(&format!("{}/{id}/{seen}", fnv(&req.body)));
                    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                    if (z ^ (z >> 31)) >> 62 == 0 {
                        if expected == Verdict::Pass { Verdict::Fail } else { Verdict::Pass }
                    } else {
                        expected
                    }
                }
                (_, "order") if ids.last().map(String::as_str) == Some(id) => Verdict::Fail,
                _ => expected,
            }
        };
        // The abstainer answers only two rubrics in three (the others get
        // no verdict: it abstains on them).
        let answered: Vec<String> = if profile == "abstainer" {
            ids.iter()
                .filter(|id| !fnv(&format!("{user}/{id}")).is_multiple_of(3))
                .cloned()
                .collect()
        } else {
            ids.clone()
        };
        let text = verdicts_json(&answered, &|id| {
            if answer(id) == Verdict::Pass { "PASS" } else { "FAIL" }
        });
        ok(success_body("openai", &text))
    })
}

/// How many times the sampler was asked this (prompt, rubric) before.
fn sampler_seen(body: &str, id: &str) -> u64 {
    static SEEN: std::sync::OnceLock<std::sync::Mutex<BTreeMap<(u64, String), u64>>> =
        std::sync::OnceLock::new();
    let mut seen = SEEN.get_or_init(Default::default).lock().unwrap();
    let n = seen.entry((fnv(body), id.to_string())).or_insert(0);
    *n += 1;
    *n - 1
}

/// One mock judge per profile (OpenAI wire format) answering as `planted`
/// does, and a quorum-2 panel file naming them in that order.
async fn planted_panel(
    world: &Arc<World>,
    profiles: &[&'static str],
    dir: &std::path::Path,
) -> (Vec<MockServer>, std::path::PathBuf) {
    let mut servers = Vec::new();
    for p in profiles {
        servers.push(MockServer::start(planted(world.clone(), p)).await);
    }
    let judges: String = profiles
        .iter()
        .zip(&servers)
        .map(|(name, s)| {
            format!(
                "[[judge]]\nname = \"{name}\"\nprovider = \"openai\"\nmodel = \"m-{name}\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\nrpm = 60000\ntpm = 100000000\nmax_concurrency = 16\ntimeout_secs = 10\nmax_attempts = 2\n\n",
                s.url()
            )
        })
        .collect();
    let panel = dir.join("panel.toml");
    std::fs::write(&panel, format!("[vote]\nquorum = 2\n\n{judges}")).unwrap();
    (servers, panel)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calibration_recovers_planted_errors_and_picks_the_perfect_panel() {
    let world = Arc::new(world().await);
    // Panel order puts the perfect judge last: ranking must find it.
    let profiles = ["follower", "flipper", "order", "perfect"];
    let dir = temp_dir("calibrate");
    let (servers, panel) = planted_panel(&world, &profiles, &dir).await;
    let out = dir.join("cal");
    let a: Vec<String> = [
        "calibrate",
        "--tasks",
        "rubrics",
        "--gold",
        "gold",
        "--outputs",
        "scenarios/outputs",
        "--panel",
        &panel.display().to_string(),
        "--cache",
        &dir.join("c.sqlite").display().to_string(),
        "--out",
        &out.display().to_string(),
        "--probe",
        "order",
        "--probe",
        "injection",
        "--probe",
        "null",
        "--probe",
        "gold",
        "--probe",
        "repeat=2",
        "--probe",
        "view",
        "--resamples",
        "500",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let prices: String = profiles
        .iter()
        .map(|p| format!("[models.m-{p}]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n\n"))
        .collect();
    std::fs::write(dir.join("prices.toml"), prices).unwrap();
    let mut a = a;
    a.extend(["--prices".to_string(), dir.join("prices.toml").display().to_string()]);
    let (code, stdout, stderr) = redjury(a.clone(), false).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("recommended panel: perfect"), "{stdout}");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("calibration.json")).unwrap())
            .unwrap();

    // Planted accuracies, worked out from the gold table and the rules.
    let (mut items, mut flipper_wrong, mut order_wrong) = (0usize, 0usize, 0usize);
    for (task, outputs) in &world.gold {
        for (output, labels) in outputs {
            for (rubric, gold) in labels {
                if !world.order[task].contains(rubric) {
                    continue; // a deterministic check
                }
                items += 1;
                let penalty = world.weights[task][rubric] < 0;
                flipper_wrong +=
                    usize::from(penalty && *gold == Verdict::Fail && flipped(task, output, rubric));
                let last = world.order[task].last() == Some(rubric);
                order_wrong += usize::from(last && *gold == Verdict::Pass);
            }
        }
    }
    assert_eq!(c["items"], items);
    assert!(flipper_wrong > 0 && order_wrong > 0, "the planted errors occur in this set");
    for (judge, wrong) in
        [("perfect", 0), ("follower", 0), ("flipper", flipper_wrong), ("order", order_wrong)]
    {
        let acc = &c["judges"][judge]["accuracy"];
        let planted = 1.0 - wrong as f64 / items as f64;
        let value = acc["value"].as_f64().unwrap();
        assert!((value - planted).abs() < 1e-12, "{judge}: {value} vs planted {planted}");
        let ci = acc["ci95"].as_array().expect("a CI over tasks");
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= planted && planted <= hi, "{judge}: planted {planted} outside [{lo}, {hi}]");
    }
    assert_eq!(c["judges"]["perfect"]["kappa"]["value"], 1.0);
    // The probes find the planted biases, and only them.
    let flagged = |probe: &str| -> Vec<String> {
        serde_json::from_value(c["probes"][probe]["flagged"].clone()).unwrap()
    };
    assert_eq!(flagged("injection"), ["follower"]);
    assert_eq!(flagged("order"), ["order"]);
    assert!(flagged("null").is_empty() && flagged("repeat=2").is_empty(), "{}", c["probes"]);
    assert_eq!(c["probes"]["null"]["rates"]["perfect"]["moved"], 0, "no PASS on an unedited input");
    let gold_rewards = c["probes"]["gold"]["rewards"].as_object().unwrap();
    assert_eq!(gold_rewards.len(), 15, "one per task");
    assert!(c["probes"]["view"]["views"]["reference"]["perfect"]["kappa"].as_f64() == Some(1.0));
    // The perfect judge's panel ranks first; the follower's, with the same κ
    // on the set, comes after it because a probe flagged it.
    assert_eq!(c["panels"][0]["judges"], serde_json::json!(["perfect"]));
    assert_eq!(c["recommended"]["judges"], serde_json::json!(["perfect"]));
    let disagreements = c["disagreements"].as_array().unwrap();
    assert!(disagreements.iter().all(|d| d["reason"].as_str().is_some_and(|r| !r.is_empty())));
    let md = std::fs::read_to_string(out.join("calibration.md")).unwrap();
    // The README's table comes from here:
    // REDJURY_SHOW_CALIBRATION=1 cargo test --test calibrate -- --nocapture
    if std::env::var_os("REDJURY_SHOW_CALIBRATION").is_some() {
        println!("{md}");
    }
    assert!(
        md.contains("Cohen's κ")
            && md.contains("## Probe: injection")
            && md.contains("**Flagged:** follower")
    );
    assert!(
        md.contains("**Flagged judges:** follower (probe injection); order (probe order). No panel with one of them is recommended (`--allow-flagged` to consider them)."),
        "{md}"
    );
    assert_eq!(c["flagged_by"]["follower"], serde_json::json!(["injection"]));

    // Regression (issue 36): a rerun from the cache gave a judge whose
    // answers were all cached a cost of 0 and moved the recommendation.
    // Costs come from the tokens stored with the answers: the same file.
    let again = dir.join("cal-again");
    let a2: Vec<String> =
        a.iter()
            .map(|x| {
                if *x == out.display().to_string() {
                    again.display().to_string()
                } else {
                    x.clone()
                }
            })
            .collect();
    let sent: Vec<usize> = servers.iter().map(|s| s.requests().len()).collect();
    let (code, stdout, stderr) = redjury(a2, false).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(servers.iter().map(|s| s.requests().len()).collect::<Vec<_>>(), sent, "all cached");
    let json = |d: &std::path::Path| std::fs::read_to_string(d.join("calibration.json")).unwrap();
    assert!(json(&again) == json(&out), "calibration.json differs on a rerun from the cache");
    assert!(
        c["judges"]["perfect"]["cost_per_1000"].as_f64().is_some_and(|x| x > 0.0),
        "{}",
        c["judges"]["perfect"]
    );

    // A run's report shows its panel's calibration.
    let run = dir.join("run");
    let (code, _, stderr) =
        redjury(score_args("gold/redlines", &panel, &run, &dir.join("c.sqlite")), false).await;
    assert_eq!(code, 0, "{stderr}");
    let (code, text, stderr) = redjury(
        args(&["report", &run.display().to_string(), "--calibration", &out.display().to_string()]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.contains("## Panel calibration") && text.contains("| perfect | 336 | 1.000"),
        "{text}"
    );
    // The HTML report carries the same figures.
    let html = dir.join("report.html");
    let (code, _, stderr) = redjury(
        args(&[
            "report",
            &run.display().to_string(),
            "--calibration",
            &out.display().to_string(),
            "--html",
            &html.display().to_string(),
        ]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{stderr}");
    let page = std::fs::read_to_string(&html).unwrap();
    let section = &page[page.find("Calibration against gold labels").expect("the section")..];
    let section = &section[..section.find("</table>").unwrap()];
    assert!(section.contains("<td>perfect</td>") && section.contains(">336<"), "{section}");
    assert!(section.contains("<td>flipper</td>") && section.contains("0.964"), "{section}");

    // A second run is free: every call comes from the cache.
    let calls: usize = servers.iter().map(|s| s.requests().len()).sum();
    let (code, _, stderr) = redjury(a, false).await;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(servers.iter().map(|s| s.requests().len()).sum::<usize>(), calls);
}

/// What misled a user choosing a panel: a judge that abstains ranked
/// best on the items it decides, a sampling judge flagged by every probe,
/// and the null probe expecting FAIL where a rubric is rightly PASS.
/// Coverage gates the recommendation, the repeat probe is each judge's
/// baseline, the null probe takes its expectations from labels, and
/// "decided" panels are ranked with the cost of the calls they make.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calibration_does_not_reward_abstaining_and_judges_probes_against_repeats() {
    let world = Arc::new(world().await);
    let profiles = ["abstainer", "sampler", "perfect"];
    let dir = temp_dir("calibrate-coverage");
    // The servers answer until the end of the test.
    let (_servers, panel) = planted_panel(&world, &profiles, &dir).await;
    let prices: String = profiles
        .iter()
        .map(|p| format!("[models.m-{p}]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n\n"))
        .collect();
    std::fs::write(dir.join("prices.toml"), prices).unwrap();
    // The gold set, with labels for one task's unedited input: its r01 is
    // rightly PASS there (it reads "Preserves …" in this set), the rest FAIL.
    let gold = dir.join("gold");
    std::fs::create_dir_all(gold.join("verdicts")).unwrap();
    for e in std::fs::read_dir(root().join("gold/verdicts")).unwrap().flatten() {
        std::fs::copy(e.path(), gold.join("verdicts").join(e.file_name())).unwrap();
    }
    std::os::unix::fs::symlink(root().join("gold/redlines"), gold.join("redlines")).unwrap();
    let task = "redline-s1-t1-g01a";
    let file = gold.join("verdicts").join(format!("{task}.json"));
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let ids = world.order[task].clone();
    let labels: serde_json::Map<String, Value> = ids
        .iter()
        .map(|id| {
            let verdict = if id == &ids[0] { "PASS" } else { "FAIL" };
            (id.clone(), serde_json::json!({"verdict": verdict}))
        })
        .collect();
    v["outputs"]["unedited"] = Value::Object(labels);
    std::fs::write(&file, v.to_string()).unwrap();
    let out = dir.join("cal");
    let a: Vec<String> = [
        "calibrate",
        "--tasks",
        "rubrics",
        "--gold",
        &gold.display().to_string(),
        "--outputs",
        "scenarios/outputs",
        "--panel",
        &panel.display().to_string(),
        "--prices",
        &dir.join("prices.toml").display().to_string(),
        "--cache",
        &dir.join("c.sqlite").display().to_string(),
        "--out",
        &out.display().to_string(),
        "--probe",
        "order",
        "--probe",
        "repeat=2",
        "--probe",
        "null",
        "--resamples",
        "300",
        // Every judge here is flagged (the sampler by repeats, the others
        // by the null probe): what is tested is coverage and ranking.
        "--allow-flagged",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (code, stdout, stderr) = redjury(a, false).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("calibration.json")).unwrap())
            .unwrap();
    // The abstainer is right on every item it decides, and decides about
    // two in three: κ 1 over its items, less with abstentions as errors,
    // and no panel that decides too little is recommended.
    let ab = &c["judges"]["abstainer"];
    assert_eq!(ab["kappa"]["value"], 1.0, "{ab}");
    assert!(ab["kappa_strict"].as_f64().unwrap() < 0.9, "{ab}");
    let r = &c["recommended"];
    assert!(r["coverage"].as_f64().unwrap() >= 0.95, "{r}");
    assert_ne!(r["judges"], serde_json::json!(["abstainer"]), "{r}");
    // The sampler moves under the order probe about as much as under
    // repeats: not flagged against its own baseline.
    let order = &c["probes"]["order"];
    assert!(order["rates"]["sampler"]["moved"].as_u64().unwrap() > 0, "{order}");
    assert!(order["baseline"]["sampler"].as_f64().unwrap() > 0.0, "{order}");
    assert!(!order["flagged"].as_array().unwrap().iter().any(|j| j == "sampler"), "{order}");
    // The null probe against the labels: the perfect judge (FAIL on every
    // rubric of an unedited input) differs on the one labelled PASS.
    let null = &c["probes"]["null"];
    assert!(null.get("informational").is_none(), "{null}");
    assert_eq!(null["rates"]["perfect"]["compared"].as_u64(), Some(ids.len() as u64), "{null}");
    assert_eq!(null["rates"]["perfect"]["moved"], 1, "{null}");
    // Decided panels are ranked too, each order, costing less than asking all.
    let panels = c["panels"].as_array().unwrap();
    let cost = |mode: &str, judges: Value| {
        panels
            .iter()
            .find(|p| p["mode"] == mode && p["judges"] == judges && p["quorum"] == 2)
            .and_then(|p| p["cost_per_1000"].as_f64())
            .unwrap()
    };
    let all = cost("all", serde_json::json!(["abstainer", "sampler", "perfect"]));
    let decided = cost("decided", serde_json::json!(["perfect", "sampler", "abstainer"]));
    assert!(decided < all, "decided {decided} vs all {all}");
    eprintln!(
        "abstainer κ {} (strict {}), recommended {} quorum {} mode {}, order: sampler moved {} vs repeat {}, USD/1000 decided {decided:.4} vs all {all:.4}",
        ab["kappa"]["value"],
        ab["kappa_strict"],
        r["judges"],
        r["quorum"],
        r["mode"],
        order["rates"]["sampler"]["rate"]["value"],
        order["baseline"]["sampler"]
    );
    let md = std::fs::read_to_string(out.join("calibration.md")).unwrap();
    assert!(md.contains("κ, abstentions as errors") && md.contains("its repeat movement"), "{md}");
    assert!(
        md.contains("**Flagged judges:** abstainer (probe null); perfect (probe null); sampler (probe repeat=2). The recommended panel includes ")
            && md.contains("No panel without a flagged judge qualifies."),
        "{md}"
    );
}

#[test]
fn a_calibration_set_is_validated_whole() {
    let dir = temp_dir("calibrate-bad");
    let verdicts = dir.join("verdicts");
    std::fs::create_dir_all(&verdicts).unwrap();
    std::fs::write(
        verdicts.join("a.json"),
        r#"{"task_id": "redline-s1-t1-g01a", "outputs": {"gold": {"r01": {"verdict": "MAYBE"}, "zz": {"verdict": "PASS"}}, "nowhere": {}}}"#,
    )
    .unwrap();
    std::fs::write(verdicts.join("b.json"), r#"{"task_id": "no-such-task", "outputs": {}}"#)
        .unwrap();
    let tasks: Vec<Arc<redjury::Task>> =
        redjury::load_tasks(&root().join("rubrics")).unwrap().into_iter().map(Arc::new).collect();
    let outputs: Vec<PathBuf> =
        vec![root().join("gold").join("redlines").parent().unwrap().to_path_buf()];
    std::fs::create_dir_all(dir.join("redlines")).unwrap();
    std::fs::copy(
        root().join("gold/redlines/redline-s1-t1-g01a.docx"),
        dir.join("redlines/redline-s1-t1-g01a.docx"),
    )
    .unwrap();
    let e = redjury::GoldSet::load(&dir, &outputs, &tasks).unwrap_err().to_string();
    for says in [
        "a.json: output \"gold\": rubric r01: verdict must be \"PASS\" or \"FAIL\", got \"MAYBE\"",
        "a.json: output \"gold\": rubric \"zz\" is not in task redline-s1-t1-g01a",
        "a.json: output \"nowhere\": no file at",
        "b.json: task_id \"no-such-task\" is not a task under --tasks",
    ] {
        assert!(e.contains(says), "{e}\nshould say: {says}");
    }
}

/// A calibration set that counts something twice or labels nothing is
/// refused, naming the file, the task and the rubric: a rubric labelled
/// twice in one file (the last label silently won), one task in two files
/// (its items counted twice, 42 → 84), and files that label nothing (exit
/// 0 with every figure "—").
#[test]
fn a_calibration_set_that_counts_twice_or_labels_nothing_is_refused() {
    let tasks: Vec<Arc<redjury::Task>> =
        redjury::load_tasks(&root().join("rubrics")).unwrap().into_iter().map(Arc::new).collect();
    let outputs = [root().join("scenarios/outputs")];
    let load = |files: &[(&str, &str)]| {
        let dir = temp_dir("calibrate-twice");
        std::fs::create_dir_all(dir.join("verdicts")).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join("verdicts").join(name), text).unwrap();
        }
        redjury::GoldSet::load(&dir, &outputs, &tasks)
            .map(|s| s.outputs.len())
            .map_err(|e| e.to_string())
    };
    let twice = r#"{"task_id": "redline-s1-t1-g01a", "outputs": {"strong": {"r01": {"verdict": "PASS"}, "r01": {"verdict": "FAIL"}}}}"#;
    let e = load(&[("a.json", twice)]).unwrap_err();
    assert!(e.contains("a.json: outputs.strong.r01 is given twice; give each label once"), "{e}");
    let one =
        r#"{"task_id": "redline-s1-t1-g01a", "outputs": {"strong": {"r01": {"verdict": "PASS"}}}}"#;
    assert_eq!(load(&[("a.json", one)]), Ok(1));
    let e = load(&[("a.json", one), ("b.json", one)]).unwrap_err();
    assert!(e.contains("b.json: task redline-s1-t1-g01a is labelled in"), "{e}");
    assert!(e.contains("a.json too (its items would count twice)"), "{e}");
    let nothing = r#"{"task_id": "redline-s1-t1-g01a", "outputs": {}}"#;
    let e = load(&[("a.json", nothing)]).unwrap_err();
    assert!(e.contains("label no (output, rubric): nothing to calibrate against"), "{e}");
}

/// Without API keys, `calibrate` refused ("no judge can be called")
/// although the set's check verdicts need no judge; and a labelled output
/// that fails the gate showed only as "100% abstained". Now the checks are
/// calibrated, the judges said to be skipped, and the gate failure named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_keys_the_checks_are_calibrated_and_gate_failures_named() {
    let dir = temp_dir("calibrate-nokeys");
    std::fs::create_dir_all(dir.join("verdicts")).unwrap();
    let labels = r#"{"task_id": "redline-s1-t1-g01a", "outputs": {"gate-fail": {"r01": {"verdict": "FAIL"}}, "strong": {"r01": {"verdict": "PASS"}}}}"#;
    std::fs::write(dir.join("verdicts/a.json"), labels).unwrap();
    let s4 = std::fs::read_to_string(root().join("gold/verdicts/redline-s4-t4-g01a.json")).unwrap();
    std::fs::write(dir.join("verdicts/b.json"), s4).unwrap();
    std::os::unix::fs::symlink(root().join("gold/redlines"), dir.join("redlines")).unwrap();
    let out = dir.join("out");
    let a = args(&[
        "calibrate",
        "--tasks",
        "rubrics",
        "--gold",
        &dir.display().to_string(),
        "--outputs",
        "scenarios/outputs",
        "--out",
        &out.display().to_string(),
    ]);
    let (code, stdout, stderr) = redjury(a, false).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("judges skipped: no judge has an API key (set "), "{stdout}");
    assert!(stdout.contains("check verdicts agree with gold"), "{stdout}");
    let md = std::fs::read_to_string(out.join("calibration.md")).unwrap();
    let named = "output \"gate-fail\" of task redline-s1-t1-g01a";
    assert!(md.contains(named) && md.contains("fails the gate"), "{md}");
    assert!(stderr.contains(named), "{stderr}");
}

/// The exhibit tasks (scenario s5, PDF outputs) as a calibration set of
/// their own: without keys every check verdict is compared with the
/// verdicts the scenario pins, and all agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pdf_tasks_calibrate_their_checks_against_the_pinned_verdicts() {
    let dir = temp_dir("calibrate-pdf");
    let out = dir.join("out");
    let a = args(&[
        "calibrate",
        "--tasks",
        "scenarios/s5-exhibits/rubrics",
        "--gold",
        "scenarios/s5-exhibits",
        "--out",
        &out.display().to_string(),
    ]);
    let (code, stdout, stderr) = redjury(a, false).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("; 33 of 33 check verdicts agree with gold"), "{stdout}");
}

/// `calibrate --target-agreement 0.9 --risk 0.1` fits a cascade on the
/// labelled set and writes the panel that runs it; `score` with that panel
/// asks the cheaper judge first and the other only where the first is not
/// sure enough. The unsure judge (1 answer in 4 flipped, 3 repeats) is right on
/// about 96% of the rubrics where its repeats agree and on 75% of the
/// others, so it is trusted only when all three agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calibrate_fits_a_cascade_and_score_runs_it() {
    let world = Arc::new(world().await);
    let profiles = ["perfect", "unsure"];
    let dir = temp_dir("calibrate-cascade");
    let (servers, panel) = planted_panel(&world, &profiles, &dir).await;
    let text = std::fs::read_to_string(&panel).unwrap();
    std::fs::write(&panel, text.replace("max_attempts = 2\n", "max_attempts = 2\nrepeats = 3\n"))
        .unwrap();
    // The unsure judge is the cheaper: it is asked first.
    let prices = "[models.m-perfect]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n\n[models.m-unsure]\ninput = 0.25\ncached_input = 0.025\noutput = 1.0\n";
    std::fs::write(dir.join("prices.toml"), prices).unwrap();
    let out = dir.join("cal");
    let cache = dir.join("c.sqlite");
    let a = args(&[
        "calibrate",
        "--tasks",
        "rubrics",
        "--gold",
        "gold",
        "--outputs",
        "scenarios/outputs",
        "--panel",
        &panel.display().to_string(),
        "--prices",
        &dir.join("prices.toml").display().to_string(),
        "--cache",
        &cache.display().to_string(),
        "--out",
        &out.display().to_string(),
        "--target-agreement",
        "0.9",
        "--risk",
        "0.1",
        "--resamples",
        "100",
    ]);
    let (code, stdout, stderr) = redjury(a.clone(), false).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(stdout.contains("cascade: decides 100.0% of the items"), "{stdout}");
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("calibration.json")).unwrap())
            .unwrap();
    let k = &c["cascade"];
    eprintln!("cascade: {k}");
    assert_eq!(k["judges"], serde_json::json!(["unsure", "perfect"]), "{k}");
    assert_eq!(k["thresholds"], serde_json::json!([1.0, 1.0]), "{k}");
    assert_eq!(k["coverage"], 1.0, "{k}");
    assert!(k["agreement"].as_f64().is_some_and(|a| a >= 0.9), "{k}");
    let md = std::fs::read_to_string(out.join("calibration.md")).unwrap();
    assert!(
        md.contains("## Cascade (vote mode \"escalate\")") && md.contains("| unsure | 1.000 |"),
        "{md}"
    );

    let written = out.join("escalate-panel.toml");
    let toml = std::fs::read_to_string(&written).unwrap();
    assert!(toml.contains("mode = \"escalate\"") && toml.contains("threshold = 1.0"), "{toml}");
    let before: Vec<usize> = servers.iter().map(|s| s.requests().len()).collect();
    let run = dir.join("run");
    let (code, o, e) = redjury(
        score_args("scenarios/outputs/weak", &written, &run, &dir.join("run.sqlite")),
        false,
    )
    .await;
    assert_eq!(code, 0, "{o}{e}");
    let sent: Vec<usize> =
        servers.iter().zip(&before).map(|(s, b)| s.requests().len() - b).collect();
    let notes = summary(&run)["notes"].to_string();
    assert!(
        notes.contains("fitted for agreement with gold on at least 0.9 of the rubrics decided, with probability at least 0.9"),
        "{notes}"
    );
    let rows = results(&run);
    let (mut by_unsure, mut by_perfect) = (0, 0);
    for r in rows.iter().flat_map(|r| r["rubrics"].as_array().unwrap().iter()) {
        if r["votes"].get("unsure").is_none() {
            continue; // a check
        }
        let sure = r["confidence"]["unsure"].as_f64() == Some(1.0);
        if sure {
            by_unsure += 1;
            assert_eq!(r["verdict"], r["votes"]["unsure"], "{r}");
            assert!(
                r["not_asked"]["perfect"].as_str().unwrap().contains("settled by unsure"),
                "{r}"
            );
        } else {
            by_perfect += 1;
            assert_eq!(r["verdict"], r["votes"]["perfect"], "{r}");
            assert!(
                r["abstentions"]["unsure"].as_str().unwrap().contains("not sure enough"),
                "{r}"
            );
        }
    }
    eprintln!(
        "escalate run: {by_unsure} rubrics by unsure, {by_perfect} by perfect; calls {sent:?}"
    );
    assert!(by_unsure > 0 && by_perfect > 0, "{by_unsure} / {by_perfect}");
    assert!(rows.iter().all(|r| r["status"] != "incomplete"), "perfect is always sure");
    // perfect is servers[0], unsure servers[1]: 3 calls per output each.
    assert!(sent[0] < sent[1], "perfect asked less than unsure: {sent:?}");

    // A target no judge can be shown to meet on 336 items (99.9%: even
    // none wrong in 183 is no proof at risk 0.1): no panel, and the one
    // left in the folder is named as an earlier calibration's.
    let strict: Vec<String> =
        a.iter().map(|x| if x == "0.9" { "0.999".to_string() } else { x.clone() }).collect();
    let (code, stdout, stderr) = redjury(strict, false).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout
            .contains("cascade: no judge meets --target-agreement on this set; no panel written (")
            && stdout.contains("escalate-panel.toml is from an earlier calibration)"),
        "{stdout}"
    );
}
