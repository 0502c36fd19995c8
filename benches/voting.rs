//! Vote-mode benchmark: what `[vote] mode = "decided"` saves against mode
//! all, side by side on the same mock panel, timed as the `redjury score`
//! process a user runs.
//!
//! The panel: three stand-in judges answering the bundled example's 13
//! judge tasks from the gold verdicts, claude and gemini each flipping a
//! different 1 in 12 (task, rubric) pairs, every answer 200 ms late, each
//! bill growing with what was asked (`billing_by_size`: a token of 3
//! characters of the request, and of the answer). Prices: gpt and claude
//! 1/4 USD per million, gemini 0.5/2 (the cheapest). Four runs, the first
//! three each with a cold cache: mode all; decided in the panel's order; decided with the
//! default order (cheapest first, since every judge has a price); and
//! decided on the cache mode all left. For each: wall time against mode
//! all, calls per judge, cost, and for decided the `saved_usd` it reports
//! against what mode all cost more.
//!
//! Run: `cargo bench --bench voting`. Figures go in docs/judges.md.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    dead_code,
    unused_imports
)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::e2e::*;
use common::mock::*;
use serde_json::Value;

const PRICES: &str = "[models.gpt-test]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n\n[models.claude-test]\ninput = 1.0\ncached_input = 0.1\noutput = 4.0\n\n[models.gemini-test]\ninput = 0.5\ncached_input = 0.05\noutput = 2.0\n";

struct Run {
    wall: Duration,
    calls: [usize; 3],
    judges: Value,
}

impl Run {
    fn cost(&self) -> f64 {
        ["gpt", "claude", "gemini"].iter().map(|j| self.judges[j]["cost"].as_f64().unwrap()).sum()
    }

    fn saved(&self) -> f64 {
        ["gpt", "claude", "gemini"]
            .iter()
            .filter_map(|j| self.judges[j]["saved_usd"].as_f64())
            .fold(0.0, |a, b| a + b)
    }
}

/// The panel: one set of servers for every run (a judge's cache key holds
/// its base URL, so the last run finds what mode all stored).
async fn panel() -> Judges {
    let delay = Duration::from_millis(200);
    let judge = |provider: &'static str, flip: fn(&str, &str) -> bool| {
        slowed(delay, billing_by_size(provider, stand_in_flipping(provider, "gold", flip)))
    };
    Judges::with([
        judge("openai", |_, _| false),
        judge("anthropic", claude_flips),
        judge("gemini", gemini_flips),
    ])
    .await
}

async fn run(judges: &Judges, dir: &Path, vote: &str, out: &str, cache: &str) -> Run {
    let panel = judges.panel_voting(dir, "gemini-test", vote);
    let before = judges.counts();
    let started = Instant::now();
    let (code, o, e) = score_priced(dir, &panel, out, cache).await;
    let wall = started.elapsed();
    assert_eq!(code, 0, "{o}{e}");
    let after = judges.counts();
    let calls = [0, 1, 2].map(|i| after[i] - before[i]);
    Run { wall, calls, judges: summary(&dir.join(out))["judges"].clone() }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let dir = temp_dir("bench-voting");
        std::fs::write(dir.join("prices.toml"), PRICES).unwrap();
        let judges = panel().await;
        let all = run(&judges, &dir, "", "all", "all.sqlite").await;
        let cases = [
            ("decided, panel order", "mode = \"decided\"\norder = \"panel\"", "decided-panel.sqlite"),
            ("decided, default order", "mode = \"decided\"", "decided-default.sqlite"),
            ("decided on mode all's cache", "mode = \"decided\"", "all.sqlite"),
        ];
        println!("| run | wall s | × mode all | calls gpt/claude/gemini | cost USD | saved_usd reported | mode all − this |");
        println!("|---|---|---|---|---|---|---|");
        let [g, c, m] = all.calls;
        println!("| mode all | {:.2} | 1.00 | {g}/{c}/{m} | {:.6} | – | – |", all.wall.as_secs_f64(), all.cost());
        for (n, (label, vote, cache)) in cases.into_iter().enumerate() {
            let r = run(&judges, &dir, vote, &format!("decided-{n}"), cache).await;
            let [g, c, m] = r.calls;
            println!(
                "| {label} | {:.2} | {:.2} | {g}/{c}/{m} | {:.6} | {:.6} | {:.6} |",
                r.wall.as_secs_f64(),
                r.wall.as_secs_f64() / all.wall.as_secs_f64(),
                r.cost(),
                r.saved(),
                all.cost() - r.cost()
            );
        }
    });
}
