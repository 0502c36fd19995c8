//! The progress bar: judge calls only (tasks made only of checks need
//! none), and how many came from the cache; a line per change of a
//! judge's batches.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use redjury::{BatchReport, Progress};

pub struct Bar {
    bar: Option<indicatif::ProgressBar>,
    cached: AtomicU64,
    /// Batch lines are printed unless --quiet.
    batch_lines: bool,
    last_batch: Mutex<HashMap<String, BatchReport>>,
}

impl Bar {
    /// A bar on stderr when it is a terminal and `shown`.
    pub fn new(shown: bool) -> Bar {
        let bar = (shown && std::io::stderr().is_terminal()).then(|| {
            let bar = indicatif::ProgressBar::new(0);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} judge calls · {msg} · ETA {eta}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Bar { bar, cached: AtomicU64::new(0), batch_lines: shown, last_batch: Mutex::default() }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn planned(&self, n: u64, _cached: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(n);
        }
    }

    fn finished(&self, from_cache: bool) {
        let cached = if from_cache {
            self.cached.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.cached.load(Ordering::Relaxed)
        };
        if let Some(bar) = &self.bar {
            bar.inc(1);
            bar.set_message(format!("{cached} from the cache"));
        }
    }

    fn batch(&self, judge: &str, r: &BatchReport) {
        let mut last = self.last_batch.lock().unwrap_or_else(|p| p.into_inner());
        if !self.batch_lines || last.get(judge) == Some(r) || r.calls == 0 {
            return;
        }
        last.insert(judge.to_string(), r.clone());
        let line = format!(
            "batch {judge}: {} of {} batches ended; {} calls: {} answered, {} failed{}",
            r.ended,
            r.batches,
            r.calls,
            r.answered,
            r.failed,
            if r.provider.is_empty() { String::new() } else { format!(" · {}", r.provider) }
        );
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }
}
