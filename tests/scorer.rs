//! The library entry point a Rust trainer uses: one `Scorer`, many outputs.
use crate::common::root;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::common::mock::*;
use redjury::Cache;
use redjury::Templates;
use redjury::load_tasks;
use redjury::{Auth, Judge};
use redjury::{JudgeConfig, Provider, Rate};
use redjury::{JudgeMode, OutputSource, Progress, Scorer};

#[derive(Default)]
struct Counting {
    planned: AtomicU64,
    finished: AtomicU64,
    cached: AtomicU64,
}

impl Progress for Counting {
    fn planned(&self, n: u64, _: u64) {
        self.planned.fetch_add(n, Ordering::Relaxed);
    }
    fn finished(&self, from_cache: bool) {
        self.finished.fetch_add(1, Ordering::Relaxed);
        self.cached.fetch_add(u64::from(from_cache), Ordering::Relaxed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_counts_judge_calls_only_and_says_which_came_from_the_cache() {
    let server = MockServer::start(answering("openai", &["r01"])).await;
    let mut c = JudgeConfig::new("gpt", Provider::Openai, "m");
    (c.base_url, c.rpm, c.tpm) =
        (format!("{}/v1", server.url()), Rate::PerMinute(6000), Rate::PerMinute(10_000_000));
    let judge = Arc::new(Judge::new(c, Auth::Key("k".into())).expect("judge"));
    let dir = crate::common::temp_dir("scorer");
    let cache = Arc::new(Cache::open(&dir.join("cache.sqlite")).expect("cache"));
    let scorer = Scorer::with_judges(vec![judge], 1, Templates::builtin(), cache, JudgeMode::Live)
        .expect("scorer");
    let tasks: Vec<Arc<_>> =
        load_tasks(&root().join("rubrics")).expect("tasks").into_iter().map(Arc::new).collect();
    let outputs = || {
        tasks
            .iter()
            .map(|t| {
                let docx = root().join(format!("scenarios/outputs/strong/{}.docx", t.name));
                let xlsx = docx.with_extension("xlsx");
                let path = if xlsx.exists() { xlsx } else { docx };
                (t.clone(), OutputSource::Path(path), "1".to_string())
            })
            .collect::<Vec<_>>()
    };
    let first = Counting::default();
    let rows = scorer.score_batch(outputs(), &first).await;
    assert_eq!(rows.len(), 15);
    assert!(rows.iter().all(|r| r.gate.passed), "{rows:?}");
    // 15 outputs, two of them check-only tasks: 13 judge calls, not 15.
    assert_eq!(
        (first.planned.load(Ordering::Relaxed), first.finished.load(Ordering::Relaxed)),
        (13, 13)
    );
    assert_eq!(first.cached.load(Ordering::Relaxed), 0);
    let again = Counting::default();
    let rerun = scorer.score_batch(outputs(), &again).await;
    assert_eq!(
        (again.planned.load(Ordering::Relaxed), again.cached.load(Ordering::Relaxed)),
        (13, 13),
        "all from the cache"
    );
    assert_eq!(rows, rerun);
    assert_eq!(server.requests().len(), 13);
    // One output at a time gives the same row as the batch form; bytes and
    // a path to the same file are one output.
    let t = tasks.iter().find(|t| t.name == "redline-s1-t2-g01a").unwrap();
    let file = root().join("scenarios/outputs/strong/redline-s1-t2-g01a.docx");
    let one = scorer.score(t.clone(), OutputSource::Path(file.clone()), "1").await;
    assert_eq!(Some(&one), rows.iter().find(|r| r.task == t.name));
    let bytes = OutputSource::Bytes(std::fs::read(&file).unwrap());
    assert_eq!(scorer.score(t.clone(), bytes, "1").await, one);
    assert_eq!(server.requests().len(), 13, "both from the cache");
}
