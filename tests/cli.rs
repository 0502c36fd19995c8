//! The binary as a first-time user meets it: what it refuses before
//! spending, what it prints, where its defaults come from, and results
//! folders that never mix two runs.
use std::path::Path;

use crate::common::e2e::*;
use crate::common::mock::*;

fn p(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fewer_keys_than_the_quorum_is_refused_before_any_call() {
    let judges = Judges::start("gold").await;
    let dir = temp_dir("quorum");
    let panel = judges.panel(&dir, "gemini-test");
    // Quorum 2, one judge with a key: every call would be paid for and no
    // rubric could reach a verdict.
    let a = score_args("gold/redlines", &panel, &dir.join("run"), &dir.join("cache.sqlite"));
    let (code, out, err) = redjury_with(&root(), a, &["E2E_OPENAI_KEY"]).await;
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("only 1 of 3 judges have an API key, fewer than the quorum of 2"),
        "{err}"
    );
    assert!(err.contains("Set E2E_ANTHROPIC_KEY, E2E_GEMINI_KEY"), "{err}");
    assert_eq!(judges.counts(), [0, 0, 0], "nothing spent");
    assert!(!dir.join("run").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_needs_no_key_variable() {
    let server = MockServer::start(answering("openai", &[])).await;
    let dir = temp_dir("keyless");
    let panel = dir.join("panel.toml");
    std::fs::write(
        &panel,
        format!(
            "[vote]\nquorum = 1\n\n[[judge]]\nname = \"local\"\nprovider = \"openai\"\nmodel = \"llama\"\nbase_url = \"{}/v1\"\napi_key_env = \"\"\nrpm = 6000\ntpm = 10000000\nmax_concurrency = 4\ntimeout_secs = 10\nmax_attempts = 2\n",
            server.url()
        ),
    )
    .expect("panel");
    let (code, out, err) = redjury_with(
        &root(),
        score_args("gold/redlines", &panel, &dir.join("run"), &dir.join("c.sqlite")),
        &[],
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(server.requests().len(), 13, "called without any key variable");
    assert!(server.requests().iter().all(|r| r.header("authorization").is_none()));
    assert_eq!(summary(&dir.join("run"))["dry_run"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incomplete_run_says_so_and_why() {
    // Two judges refuse the key: with quorum 2 nothing judged is complete.
    let bad: Handler = std::sync::Arc::new(|_: &Recorded, _| {
        status(401, &[], r#"{"error":{"message":"bad key"}}"#)
    });
    let judges = Judges {
        openai: MockServer::start(bad.clone()).await,
        anthropic: MockServer::start(bad).await,
        gemini: MockServer::start(stand_in("gemini", "gold")).await,
    };
    let dir = temp_dir("incomplete");
    let panel = judges.panel(&dir, "gemini-test");
    let outputs = dir.join("outputs");
    std::fs::create_dir_all(&outputs).expect("mkdir");
    for f in std::fs::read_dir(root().join("gold/redlines")).expect("gold").flatten() {
        std::fs::copy(f.path(), outputs.join(f.file_name())).expect("copy");
    }
    // A legacy .doc named after a task (its .docx removed) is reported, not skipped.
    std::fs::remove_file(outputs.join("redline-s2-t1-g01b.docx")).expect("rm");
    std::fs::write(outputs.join("redline-s2-t1-g01b.doc"), b"\xd0\xcf\x11\xe0").expect("doc");
    // An output made without Track Changes, and one named after no task.
    std::fs::copy(
        root().join("scenarios/outputs/gate-fail/redline-s1-t1-g01a.docx"),
        outputs.join("redline-s1-t1-g01a.docx"),
    )
    .expect("copy");
    std::fs::copy(
        root().join("gold/redlines/redline-s1-t2-g01a.docx"),
        outputs.join("redline-s9-t1-g01a.docx"),
    )
    .expect("copy");
    let mut a = score_args(&p(&outputs), &panel, &dir.join("run"), &dir.join("cache.sqlite"));
    a.retain(|x| x != "--quiet");
    let (code, out, err) = redjury(a, true).await;
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        out.contains(
            "14 results: 2 scored, 1 gate-failed, 11 incomplete, 0 pending; 1 task without an output"
        ),
        "{out}"
    );
    assert!(out.contains("over 3 of 14 results; the rest have no reward yet"), "{out}");
    assert!(out.contains("incomplete: 11 rows — quorum not met"), "{out}");
    assert!(out.contains("  gate-failed: 1 row — no tracked change or comment"), "{out}");
    assert!(
        out.contains("  1 output matching no task: ") && out.contains("redline-s9-t1-g01a.docx\n"),
        "{out}"
    );
    assert!(
        out.contains("not used: ")
            && out.contains("redline-s2-t1-g01b.doc: a legacy Word 97-2003 .doc"),
        "{out}"
    );
    let md = std::fs::read_to_string(dir.join("run/summary.md")).expect("summary.md");
    let first = md.lines().nth(2).unwrap_or("");
    assert!(
        first.starts_with(
            "> **Headline over 3 of 14 results.** 11 incomplete, 1 gate-failed (scored 0), 1 task(s) without an output, 1 output(s) matching no task, 1 output(s) that could not be used"
        ),
        "{md}"
    );
    assert!(md.contains("#### Incomplete (no reward; never counted as 0)"), "{md}");
    assert!(md.contains("- 11 rows — quorum not met — claude: judge stopped: the key in E2E_ANTHROPIC_KEY is refused: judge 'claude' (anthropic): HTTP 401: bad key; gpt: judge stopped: the key in E2E_OPENAI_KEY is refused: judge 'gpt' (openai): HTTP 401: bad key\n  redline-s1-t1-g01b, "), "{md}");
    assert!(
        md.contains(
            "#### Gate failures (reward 0, counted)\n\n- 1 row — no tracked change or comment"
        ),
        "{md}"
    );
    assert!(md.contains("  redline-s1-t1-g01a"), "{md}");
    assert!(md.contains("#### Output files matching no task (1)\n\n"), "{md}");
    assert!(md.contains("redline-s9-t1-g01a"), "{md}");
    assert!(md.contains("**claude was stopped during the run:**"), "{md}");
    assert!(md.contains("#### Output files that could not be used (1)"), "{md}");
    let s = summary(&dir.join("run"));
    assert_eq!(
        s["unusable_outputs"][0]["reason"],
        "a legacy Word 97-2003 .doc: open it in Word and save it as .docx"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_from_anywhere_and_says_which_defaults_it_used() {
    let dir = temp_dir("anywhere");
    let tasks = root().join("rubrics");
    let outputs = root().join("scenarios/outputs/strong");
    // From a folder with no panel.toml: the one beside the tasks folder.
    let (code, out, err) = redjury_at(
        &dir,
        args(&[
            "score",
            "--tasks",
            &p(&tasks),
            "--outputs",
            &p(&outputs),
            "--out",
            "run",
            "--dry-run",
        ]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "panel: {} (beside the tasks folder)",
            root().join("panel.toml").display()
        )),
        "{out}"
    );
    assert!(out.contains("cache: cache.sqlite"), "{out}");
    assert!(dir.join("run/summary.json").is_file() && dir.join("cache.sqlite").is_file());
    // Tasks with nothing beside them: the built-in panel and prices.
    let lone = dir.join("tasks");
    std::fs::create_dir_all(&lone).expect("mkdir");
    std::fs::copy(tasks.join("redline-s1-t1-g01a.json"), lone.join("redline-s1-t1-g01a.json"))
        .expect("copy");
    let task = std::fs::read_to_string(lone.join("redline-s1-t1-g01a.json")).expect("read");
    let input = root().join("scenarios/s1-saas-msa/inputs/s1-t1-g01.docx");
    let expert = root().join("gold/redlines/redline-s1-t1-g01a.docx");
    std::fs::write(
        lone.join("redline-s1-t1-g01a.json"),
        task.replace("../scenarios/s1-saas-msa/inputs/s1-t1-g01.docx", &p(&input))
            .replace("../gold/redlines/redline-s1-t1-g01a.docx", &p(&expert)),
    )
    .expect("write");
    let (code, out, err) = redjury_at(
        &dir,
        args(&[
            "score",
            "--tasks",
            "tasks",
            "--outputs",
            &p(&outputs),
            "--out",
            "run2",
            "--dry-run",
        ]),
        false,
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("panel: built-in default panel")
            && out.contains("prices: built-in price table"),
        "{out}"
    );
    // One judged task: one call per judge, priced as an estimate.
    assert!(out.contains("  gpt-5.4-mini: 1 call to make (0 cached)"), "{out}");
    assert!(out.contains("(estimate)") && !out.contains("1 calls"), "{out}");
    // A panel.toml in the current folder comes before the built-in one; a flag before both.
    let local = dir.join("panel.toml");
    std::fs::copy(root().join("panel.toml"), &local).expect("copy");
    let with = |extra: &[&str]| {
        let mut a = args(&["score", "--tasks", "tasks", "--outputs", &p(&outputs)]);
        a.extend(args(&["--out", "run3", "--dry-run"]));
        a.extend(args(extra));
        a
    };
    let (code, out, err) = redjury_at(&dir, with(&[]), false).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("panel: panel.toml (current directory)"), "{out}");
    let flag = root().join("panel.toml");
    let (code, out, err) = redjury_at(&dir, with(&["--panel", &p(&flag)]), false).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("panel: {}\n", flag.display())), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_lies_of_the_command_line() {
    let dir = temp_dir("lies");
    let out = dir.join("run");
    let dry = args(&[
        "score",
        "--tasks",
        "rubrics",
        "--outputs",
        "scenarios/outputs/strong",
        "--out",
        &p(&out),
        "--dry-run",
        "--quiet",
    ]);
    let (code, stdout, err) = redjury(dry.clone(), false).await;
    assert_eq!((code, stdout.as_str()), (0, ""), "--quiet prints nothing: {err}");
    // report: --seed and --resamples belong to --compare; 0 resamples is no CI.
    let (code, _, err) = redjury(args(&["report", &p(&out), "--seed", "3"]), false).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--compare"), "{err}");
    let (code, _, err) =
        redjury(args(&["report", &p(&out), "--compare", &p(&out), "--resamples", "0"]), false)
            .await;
    assert_eq!(code, 2, "{err}");
    let (code, report, _) = redjury(args(&["report", &p(&out)]), false).await;
    assert_eq!(code, 0);
    assert!(
        !report.contains("best@0") && !report.contains(")) ") && !report.contains("1 calls"),
        "{report}"
    );
    // gate --input: an unedited turn-3 file fails as `score` would fail it.
    let input = root().join("scenarios/s1-saas-msa/inputs/s1-t3-g01.docx");
    let (code, stdout, _) =
        redjury(args(&["gate", &p(&input), "--author", "Vendor Counsel"]), false).await;
    assert_eq!(code, 0, "without --input the turn-1 changes count: {stdout}");
    let (code, stdout, _) = redjury(
        args(&["gate", &p(&input), "--author", "Vendor Counsel", "--input", &p(&input)]),
        false,
    )
    .await;
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("carried over from the input"), "{stdout}");
    // For a term sheet, --input is the template it is filled in from.
    let template = root()
        .join("scenarios/s4-distribution-agreement/inputs/s4-t4-g01-term-sheet-template.xlsx");
    let gold = root().join("gold/redlines/redline-s4-t4-g01a.xlsx");
    for (sheet, want) in [(&template, 1), (&gold, 0)] {
        let (code, stdout, _) = redjury(
            args(&["gate", &p(sheet), "--author", "Pellucid Counsel", "--input", &p(&template)]),
            false,
        )
        .await;
        assert_eq!(code, want, "{stdout}");
    }
    // A missing file names its cause once.
    let (code, _, err) = redjury(args(&["render", "no-such.docx"]), false).await;
    assert_eq!(code, 1);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_results_folder_is_replaced_whole_and_a_foreign_one_refused() {
    let dir = temp_dir("swap");
    let out = dir.join("run");
    let dry = |out: &Path, extra: &[&str]| {
        let mut a = args(&[
            "score",
            "--tasks",
            "rubrics",
            "--outputs",
            "scenarios/outputs/strong",
            "--out",
            &p(out),
            "--dry-run",
            "--quiet",
        ]);
        a.extend(args(extra));
        a
    };
    let (code, _, err) = redjury(dry(&out, &[]), false).await;
    assert_eq!(code, 0, "{err}");
    // A stale file from an earlier, killed run is gone after the next.
    std::fs::write(out.join("views/stale-task.md"), "old").expect("stale");
    let (code, _, err) = redjury(dry(&out, &["--no-views"]), false).await;
    assert_eq!(code, 0, "{err}");
    assert!(!out.join("views").exists(), "the new run's folder replaced the old one whole");
    assert!(out.join("summary.json").is_file());
    // A file a user put in a run folder survives the rerun (a report.html
    // was deleted without a word).
    std::fs::write(out.join("report.html"), "mine").expect("write");
    let (code, stdout, err) =
        redjury(dry(&out, &[]).into_iter().filter(|a| a != "--quiet").collect(), false).await;
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("what no run wrote there: report.html"), "{stdout}");
    assert_eq!(std::fs::read_to_string(out.join("report.html")).ok().as_deref(), Some("mine"));
    // A folder of something else is never replaced (exit 2: refused before any work).
    let mine = dir.join("documents");
    std::fs::create_dir_all(&mine).expect("mkdir");
    std::fs::write(mine.join("thesis.txt"), "precious").expect("write");
    let (code, _, err) = redjury(dry(&mine, &[]), false).await;
    assert_eq!(code, 2);
    assert!(
        err.contains("refusing to write results to")
            && err.contains("never replaces files it did not write"),
        "{err}"
    );
    assert!(mine.join("thesis.txt").is_file());
    // Nor the outputs (--force once deleted the user's .docx files).
    let (code, _, err) = redjury(dry(&root().join("scenarios/outputs"), &[]), false).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("an input of this run"), "{err}");
    assert!(root().join("scenarios/outputs/strong/redline-s1-t1-g01a.docx").is_file());
    let (code, _, err) = redjury(dry(&out, &["--force"]), false).await;
    assert_eq!(code, 2, "--force is gone: {err}");
    // rejudge writes the same way: never into a foreign folder, never over its own run.
    let rejudge = |to: &Path| {
        args(&[
            "rejudge",
            "--run",
            &p(&out),
            "--out",
            &p(to),
            "--cache",
            &p(&dir.join("cache.sqlite")),
            "--quiet",
        ])
    };
    let (code, _, err) = redjury(rejudge(&mine), false).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("refusing to write results to"), "{err}");
    assert!(mine.join("thesis.txt").is_file());
    let (code, _, err) = redjury(rejudge(&out), false).await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is the run being rejudged"), "{err}");
    assert!(out.join("summary.json").is_file(), "the run is intact");
    let (code, _, err) = redjury(rejudge(&dir.join("again")), false).await;
    assert_eq!(code, 0, "{err}");
    assert!(dir.join("again/summary.json").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_sharing_a_cache_send_each_call_once() {
    let slow = |provider: &'static str| -> Handler {
        let inner = stand_in(provider, "gold");
        std::sync::Arc::new(move |req: &Recorded, i| match inner(req, i) {
            Action::Respond { body, .. } => {
                Action::Later(std::time::Duration::from_millis(250), body)
            }
            other => other,
        })
    };
    let judges = Judges {
        openai: MockServer::start(slow("openai")).await,
        anthropic: MockServer::start(slow("anthropic")).await,
        gemini: MockServer::start(slow("gemini")).await,
    };
    let dir = temp_dir("two-processes");
    let panel = judges.panel(&dir, "gemini-test");
    let cache = dir.join("cache.sqlite");
    let a = redjury(score_args("gold/redlines", &panel, &dir.join("a"), &cache), true);
    let b = redjury(score_args("gold/redlines", &panel, &dir.join("b"), &cache), true);
    let ((ca, oa, ea), (cb, ob, eb)) = tokio::join!(a, b);
    assert_eq!((ca, cb), (0, 0), "{oa}{ea}{ob}{eb}");
    assert_eq!(
        judges.counts(),
        [13, 13, 13],
        "13 calls per judge, each sent once between the two processes"
    );
    assert_eq!(results(&dir.join("a")), results(&dir.join("b")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_prompt_set_judges_the_reference_view() {
    let judges = Judges::start("gold").await;
    let dir = temp_dir("reference-prompts");
    let panel = judges.panel(&dir, "gemini-test");
    let mut a = score_args("gold/redlines", &panel, &dir.join("run"), &dir.join("cache.sqlite"));
    a.extend(args(&["--prompts", "prompts/reference"]));
    let (code, out, err) = redjury(a, true).await;
    assert_eq!(code, 0, "{out}{err}");
    let body = judges.openai.requests()[0].body.replace("\\n", "\n");
    assert!(
        body.contains("You are an experienced commercial-contracts lawyer"),
        "the reference set's system prompt"
    );
    assert!(body.contains("[p-0") && !body.contains("{@"), "no author tags in the reference view");
    let view = std::fs::read_to_string(dir.join("run/views/redline-s1-t2-g01a.md")).expect("view");
    assert!(
        view.starts_with("# redline-s1-t2-g01a\n") && !view.contains("Revision summary"),
        "{view}"
    );
    assert!(summary(&dir.join("run"))["turn_weighted"].as_f64().unwrap_or(0.0) >= 0.9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_document_under_two_layouts_is_one_prompt() {
    let judges = Judges::start("gold").await;
    let dir = temp_dir("layouts-one-prompt");
    let panel = judges.panel(&dir, "gemini-test");
    let (flat, nested) = (dir.join("flat"), dir.join("nested"));
    std::fs::create_dir_all(nested.join("redline-s1-t2-g01a")).expect("mkdir");
    std::fs::create_dir_all(&flat).expect("mkdir");
    let doc = root().join("gold/redlines/redline-s1-t2-g01a.docx");
    std::fs::copy(&doc, flat.join("redline-s1-t2-g01a.docx")).expect("copy");
    std::fs::copy(&doc, nested.join("redline-s1-t2-g01a/contract.docx")).expect("copy");
    let cache = dir.join("cache.sqlite");
    let (code, _, err) = redjury(score_args(&p(&flat), &panel, &dir.join("a"), &cache), true).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) =
        redjury(score_args(&p(&nested), &panel, &dir.join("b"), &cache), true).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(judges.counts(), [1, 1, 1], "the second layout reuses every answer");
}

/// A dry run of a batch run prices the calls at the batch rates: half of
/// the live estimate at every provider of the default panel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_dry_run_is_estimated_at_the_batch_price() {
    let dir = temp_dir("batch-dry");
    let estimate = |out: &str, extra: &[&str]| {
        let mut a = args(&["score", "--tasks", "rubrics", "--outputs", "scenarios/outputs/strong"]);
        a.extend(args(&["--out", &p(&dir.join(out)), "--dry-run", "--quiet"]));
        a.extend(args(extra));
        a
    };
    let (code, _, err) = redjury(estimate("live", &[]), false).await;
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = redjury(estimate("batch", &["--batch"]), false).await;
    assert_eq!(code, 0, "{err}");
    let (live, batch) = (summary(&dir.join("live")), summary(&dir.join("batch")));
    let judges = live["judges"].as_object().unwrap();
    assert_eq!(judges.len(), 3);
    for name in judges.keys() {
        let cost = |s: &serde_json::Value| s["judges"][name]["estimate"]["max_cost_usd"].as_f64();
        let (l, b) = (cost(&live).unwrap(), cost(&batch).unwrap());
        assert!(l > 0.0 && (b - l / 2.0).abs() < 1e-9, "{name}: live {l}, batch {b}");
    }
}

/// The limits each judge's provider reported are in the summary: OpenAI's
/// and Anthropic's rate-limit headers, and none from Gemini.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_reports_the_limits_each_judge_observed() {
    let judges = Judges {
        openai: MockServer::start(sliding_window("openai", 40, Reports::OpenAi).0).await,
        anthropic: MockServer::start(sliding_window("anthropic", 40, Reports::Anthropic).0).await,
        gemini: MockServer::start(stand_in("gemini", "gold")).await,
    };
    let dir = temp_dir("observed");
    let panel = judges.panel(&dir, "gemini-test");
    let run = dir.join("run");
    let (code, out, err) =
        redjury(score_args("gold/redlines", &panel, &run, &dir.join("cache.sqlite")), true).await;
    assert_eq!(code, 0, "{out}{err}");
    let s = summary(&run);
    for judge in ["gpt", "claude"] {
        let seen = &s["judges"][judge]["observed_limits"];
        assert_eq!(seen["requests_per_minute"], 2400, "{judge}: {seen}");
    }
    let gemini = &s["judges"]["gemini"]["observed_limits"];
    assert!(gemini.is_null() || gemini["requests_per_minute"].is_null(), "{gemini}");
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(md.contains("gpt: limits reported: 2400 requests a minute"), "{md}");
    assert!(md.contains("claude: limits reported: 2400 requests a minute"), "{md}");
}

/// What a user reads after `score` and `report` on the bundled example
/// (scored by mock judges answering from the gold verdicts): stdout of both
/// and summary.md, as snapshots (`UPDATE_EXPECT=1` shows what a change
/// changed). The scratch folder's path reads `<DIR>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_score_and_report_print_and_the_summary_say() {
    let judges = Judges::start("gold").await;
    let dir = temp_dir("snapshots");
    let panel = judges.panel(&dir, "gemini-test");
    let run = dir.join("run");
    let score = score_args("scenarios/outputs/strong", &panel, &run, &dir.join("c.sqlite"));
    let score: Vec<String> = score.into_iter().filter(|a| a != "--quiet").collect();
    let (code, out, err) = redjury(score, true).await;
    assert_eq!(code, 0, "{err}");
    let shown = |text: &str| text.replace(&dir.display().to_string(), "<DIR>");
    expect_test::expect![[r#"
        panel: <DIR>/panel-gemini-test.toml
        prices: prices.toml (current directory)
        cache: <DIR>/c.sqlite
        15 results: 15 scored, 0 gate-failed, 0 incomplete, 0 pending; 0 tasks without an output
        turn-weighted reward 0.8755 (95% CI [0.7885, 0.9475]), overall 0.8755
        results in <DIR>/run
    "#]]
    .assert_eq(&shown(&out));
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    expect_test::expect![[r#"
        # redjury run summary

        | results | scored | gate failed | incomplete | pending | missing outputs |
        |---|---|---|---|---|---|
        | 15 | 15 | 0 | 0 | 0 | 0 |

        | figure | value |
        |---|---|
        | turn-weighted (headline) | 0.8755 |
        | 95% CI (reference method: cells resampled, 5000 draws, seed 0; pass --model for the reference's seed) | [0.7885, 0.9475] |
        | 95% CI (input groups resampled, seed 0, 5000 draws) | [0.8151, 0.9441] |
        | overall (mean over input groups) | 0.8755 |
        | mean per task | 0.8967 |
        | best@1 turn-weighted | 0.8755 |

        ### By turn (mean over input groups)

        | turn | reward | 95% CI (groups) |
        |---|---|---|
        | 1 | 0.8364 | [0.5263, 0.9725] |
        | 2 | 0.8974 | [0.7921, 1.0000] |
        | 3 | 0.9583 | [0.8750, 1.0000] |
        | 4 | 0.6957 | [0.6957, 0.6957] |

        ### By side (turn-weighted)

        | side | reward | 95% CI (groups) |
        |---|---|---|
        | A | 0.8601 | [0.7691, 0.9548] |
        | B | 0.8970 | [0.7895, 1.0000] |

        ### By scenario (turn-weighted)

        | scenario | reward | 95% CI (groups) |
        |---|---|---|
        | 1 | 0.9911 | [0.9732, 1.0000] |
        | 2 | 0.9855 | [0.9711, 1.0000] |
        | 3 | 0.8917 | [0.8000, 1.0000] |
        | 4 | 0.7216 | [0.5263, 0.8322] |

        ### By (scenario, turn) cell

        | cell | reward | 95% CI (groups) |
        |---|---|---|
        | 1-1 | 0.9732 | [0.9732, 0.9732] |
        | 1-2 | 1.0000 | [1.0000, 1.0000] |
        | 1-3 | 1.0000 | [1.0000, 1.0000] |
        | 2-1 | 0.9711 | [0.9711, 0.9712] |
        | 2-2 | 1.0000 | [1.0000, 1.0000] |
        | 3-1 | 0.8750 | [0.8750, 0.8750] |
        | 3-2 | 0.8000 | [0.8000, 0.8000] |
        | 3-3 | 1.0000 | [1.0000, 1.0000] |
        | 4-1 | 0.5263 | [0.5263, 0.5263] |
        | 4-2 | 0.7895 | [0.7895, 0.7895] |
        | 4-3 | 0.8750 | [0.8750, 0.8750] |
        | 4-4 | 0.6957 | [0.6957, 0.6957] |

        ### By category (pooled; penalties correct when not triggered)

        | category | reward | 95% CI (groups) |
        |---|---|---|
        | Commercial Context | 0.9543 | [0.8866, 1.0000] |
        | Counterparty Acceptance Prediction | 1.0000 | [1.0000, 1.0000] |
        | Deal-closing Orientation | 0.9496 | [0.8000, 1.0000] |
        | Legal correctness | 0.9048 | [0.7527, 1.0000] |
        | Negotiation Quality | 0.9659 | [0.9100, 1.0000] |

        ### Surgicalness (tracked-change events under 30% of their paragraph's unchanged text are inline)

        | actor | inline | block | inline share | surgicalness | documents |
        |---|---|---|---|---|---|
        | expert | 77 | 119 | 0.3929 | 0.3929 | 14 |
        | run | 46 | 70 | 0.3966 | 0.3966 | 14 |

        ### Verbosity trap (turn 1)

        | actor | redlines per task | edits per touched paragraph | average edit length (chars) | overlap with the expert | documents |
        |---|---|---|---|---|---|
        | expert | 7.33 | 1.148 | 76.1 | — | 6 |
        | run | 7.33 | 1.077 | 71.2 | 1 (over 6 tasks) | 6 |

        ### Severity of rubric failures (L0 met … L4 critical; never changes a reward)

        | level | records | share |
        |---|---|---|
        | L0 | 139 | 0.9329 |
        | L1 | 1 | 0.0067 |
        | L2 | 8 | 0.0537 |
        | L3 | 1 | 0.0067 |
        | L4 | 0 | 0 |

        Mean level 0.1342 (of failures 2); 1 of 10 failures at L3 or above (0.1).

        ### Pivotal votes (PASS and FAIL votes one apart)

        0 of 112 judge rubrics pivotal (0), holding 0 of the positive weight; if every pivotal verdict flipped, a row's reward would move by 0 on average over 13 judged rows, at most 0.

        ### Judges

        | judge | model | key | requests | cache hits | retries | failures | 429s | input tokens | cached share | output tokens | cost (USD, estimate) |
        |---|---|---|---|---|---|---|---|---|---|---|---|
        | claude | claude-test | yes | 13 | 0 | 0 | 0 | 0 | 13000 | 80% | 650 | no price |
        | gemini | gemini-test | yes | 13 | 0 | 0 | 0 | 0 | 13000 | 80% | 650 | no price |
        | gpt | gpt-test | yes | 13 | 0 | 0 | 0 | 0 | 13000 | 80% | 650 | no price |

        claude: no limits reported; paced at 5820 requests a minute at the end

        gemini: no limits reported; paced at 5820 requests a minute at the end

        gpt: no limits reported; paced at 5820 requests a minute at the end
    "#]].assert_eq(&shown(&summary));
    let (code, out, err) = redjury(args(&["report", &p(&run)]), false).await;
    assert_eq!(code, 0, "{err}");
    // Regression: summary.json's figures read back one ulp off (serde_json
    // without float_roundtrip), and `report` printed a CI bound of 0.97115
    // as 0.9711 where summary.md said 0.9712.
    assert!(out.starts_with(&summary), "report prints the figures summary.md holds");
    expect_test::expect![[r#"

        ## Judge agreement

        | pair | items both voted | agreement |
        |---|---|---|
        | claude – gemini | 112 | 100.0% |
        | claude – gpt | 112 | 100.0% |
        | gemini – gpt | 112 | 100.0% |

        Fleiss' kappa over 112 rubric items every judge voted on: 1.000

        | judge | votes | departs from the panel verdict |
        |---|---|---|
        | claude | 112 | 0.0% |
        | gemini | 112 | 0.0% |
        | gpt | 112 | 0.0% |

        The judge departing most from the panel: **claude** (0.0% of its votes).
    "#]]
    .assert_eq(&shown(&out[summary.len()..]));
}
