//! The reward service's Prometheus metrics: requests and latency by route,
//! rows by status, queue depth and rejections, and each judge's calls,
//! cache hits, retries, provider 429s and stops.
//!
//! Owns: the counters and their text exposition. Must never put anything
//! a caller sent (task names, trial ids, paths) in a label: label values
//! come from a fixed set (routes, statuses) or from the panel file (judge
//! names), so cardinality stays bounded and nothing private leaks.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::judge::Judge;
use crate::score::Status;

/// Upper bounds of the latency histogram's buckets, in seconds: from a
/// cached answer (milliseconds) to a slow judge (minutes).
const BOUNDS: [f64; 14] =
    [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 180.0];

/// The routes metrics are kept for; anything else is counted as "other".
pub(super) const ROUTES: [&str; 8] = [
    "/v1/score",
    "/v1/score/batch",
    "/openrlhf",
    "/v1/tasks",
    "/healthz",
    "/readyz",
    "/metrics",
    "other",
];

#[derive(Default, Clone)]
struct Histogram {
    buckets: [u64; BOUNDS.len()],
    sum: f64,
    count: u64,
}

/// The service's counters.
#[derive(Default)]
pub(super) struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    latency: Mutex<BTreeMap<&'static str, Histogram>>,
    rows: [AtomicU64; 4],
    queue_rejected: AtomicU64,
    deadline_exceeded: AtomicU64,
}

/// What the service reports about itself besides its counters.
pub(super) struct Gauges<'a> {
    pub queue_depth: usize,
    pub queue_capacity: usize,
    pub judges: &'a [std::sync::Arc<Judge>],
    pub ready: bool,
}

fn status_index(s: Status) -> usize {
    match s {
        Status::Scored => 0,
        Status::GateFailed => 1,
        Status::Incomplete => 2,
        Status::Pending => 3,
    }
}

const STATUSES: [&str; 4] = ["scored", "gate_failed", "incomplete", "pending"];

/// The route label for a request path.
pub(super) fn route_label(path: &str) -> &'static str {
    ROUTES.iter().find(|r| **r == path).copied().unwrap_or("other")
}

impl Metrics {
    /// Counts one answered request.
    pub(super) fn request(&self, route: &'static str, status: u16, took: Duration) {
        *self
            .requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry((route, status))
            .or_insert(0) += 1;
        let secs = took.as_secs_f64();
        let mut latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let h = latency.entry(route).or_default();
        for (i, bound) in BOUNDS.iter().enumerate() {
            if secs <= *bound {
                h.buckets[i] += 1;
            }
        }
        h.sum += secs;
        h.count += 1;
    }

    /// Counts one scored row by its status.
    pub(super) fn row(&self, status: Status) {
        self.rows[status_index(status)].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request turned away because the queue was full.
    pub(super) fn queue_rejected(&self) {
        self.queue_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a request whose deadline passed before its rows were done.
    pub(super) fn deadline_exceeded(&self) {
        self.deadline_exceeded.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub(super) fn render(&self, gauges: &Gauges<'_>) -> String {
        let mut out = String::new();
        self.render_requests(&mut out);
        header(&mut out, "redjury_rows_total", "counter", "Scored rows by status.");
        for (i, name) in STATUSES.iter().enumerate() {
            let v = self.rows[i].load(Ordering::Relaxed);
            let _ = writeln!(out, "redjury_rows_total{{status=\"{name}\"}} {v}");
        }
        let simple: [(&str, &str, &str, u64); 5] = [
            (
                "redjury_queue_depth",
                "gauge",
                "Outputs accepted and not yet answered.",
                gauges.queue_depth as u64,
            ),
            (
                "redjury_queue_capacity",
                "gauge",
                "Outputs the queue holds (--queue).",
                gauges.queue_capacity as u64,
            ),
            (
                "redjury_queue_rejected_total",
                "counter",
                "Requests answered 429 because the queue was full.",
                self.queue_rejected.load(Ordering::Relaxed),
            ),
            (
                "redjury_deadline_exceeded_total",
                "counter",
                "Requests answered 503 because their deadline passed (the work went on).",
                self.deadline_exceeded.load(Ordering::Relaxed),
            ),
            (
                "redjury_ready",
                "gauge",
                "1 when enough judges can answer to reach the quorum.",
                u64::from(gauges.ready),
            ),
        ];
        for (name, kind, help, v) in simple {
            header(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {v}");
        }
        render_judges(&mut out, gauges.judges);
        out
    }

    fn render_requests(&self, out: &mut String) {
        header(out, "redjury_http_requests_total", "counter", "HTTP requests by route and status.");
        for ((route, code), n) in self.requests.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            let _ = writeln!(
                out,
                "redjury_http_requests_total{{route=\"{route}\",code=\"{code}\"}} {n}"
            );
        }
        let name = "redjury_http_request_duration_seconds";
        header(out, name, "histogram", "Time to answer, by route.");
        let latency = self.latency.lock().unwrap_or_else(|p| p.into_inner()).clone();
        for (route, h) in latency {
            for (i, bound) in BOUNDS.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "{name}_bucket{{route=\"{route}\",le=\"{bound}\"}} {}",
                    h.buckets[i]
                );
            }
            let _ = writeln!(out, "{name}_bucket{{route=\"{route}\",le=\"+Inf\"}} {}", h.count);
            let _ = writeln!(out, "{name}_sum{{route=\"{route}\"}} {}", h.sum);
            let _ = writeln!(out, "{name}_count{{route=\"{route}\"}} {}", h.count);
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Each judge's counters, labelled by its name in the panel file.
fn render_judges(out: &mut String, judges: &[std::sync::Arc<Judge>]) {
    let snaps: Vec<(String, crate::judge::CounterSnapshot, bool)> = judges
        .iter()
        .map(|j| (label_value(&j.config.name), j.counters.snapshot(), j.stopped().is_some()))
        .collect();
    type Field = fn(&crate::judge::CounterSnapshot) -> u64;
    let series: [(&str, &str, Field); 8] = [
        (
            "redjury_judge_requests_total",
            "HTTP requests sent to the provider, retries included.",
            |c| c.requests,
        ),
        ("redjury_judge_cache_hits_total", "Judge calls answered from the cache.", |c| {
            c.cache_hits
        }),
        ("redjury_judge_retries_total", "Requests that were retries.", |c| c.retries),
        ("redjury_judge_rate_limited_total", "Provider replies with status 429.", |c| {
            c.rate_limited
        }),
        ("redjury_judge_failures_total", "Judge calls that ended without an answer.", |c| {
            c.failures
        }),
        (
            "redjury_judge_failures_remembered_total",
            "Judge calls answered at once as failed: the same call failed moments before and waits out its backoff.",
            |c| c.failures_remembered,
        ),
        ("redjury_judge_input_tokens_total", "Billed prompt tokens.", |c| c.input_tokens),
        ("redjury_judge_output_tokens_total", "Billed output tokens.", |c| c.output_tokens),
    ];
    for (name, help, field) in series {
        header(out, name, "counter", help);
        for (judge, c, _) in &snaps {
            let _ = writeln!(out, "{name}{{judge=\"{judge}\"}} {}", field(c));
        }
    }
    header(
        out,
        "redjury_judge_stopped",
        "gauge",
        "1 when the judge was stopped (bad key, no access).",
    );
    for (judge, _, stopped) in &snaps {
        let _ = writeln!(out, "redjury_judge_stopped{{judge=\"{judge}\"}} {}", u8::from(*stopped));
    }
    header(
        out,
        "redjury_judge_failures_remembered",
        "gauge",
        "Calls remembered as failed now (each waits out a backoff of 10 s doubling to 10 min before it is sent again).",
    );
    for (j, (judge, _, _)) in judges.iter().zip(&snaps) {
        let _ = writeln!(
            out,
            "redjury_judge_failures_remembered{{judge=\"{judge}\"}} {}",
            j.remembered_failures()
        );
    }
}

/// A label value escaped as the exposition format requires.
fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_are_cumulative_and_counted_once() {
        let m = Metrics::default();
        m.request("/v1/score", 200, Duration::from_millis(30));
        m.request("/v1/score", 200, Duration::from_secs(3));
        let text =
            m.render(&Gauges { queue_depth: 0, queue_capacity: 8, judges: &[], ready: true });
        let line = |needle: &str| {
            text.lines()
                .find(|l| l.starts_with(needle))
                .map(|l| l.rsplit(' ').next().unwrap_or("").to_string())
        };
        let b = "redjury_http_request_duration_seconds_bucket{route=\"/v1/score\"";
        assert_eq!(line(&format!("{b},le=\"0.025\"}}")).as_deref(), Some("0"));
        assert_eq!(line(&format!("{b},le=\"0.05\"}}")).as_deref(), Some("1"));
        assert_eq!(line(&format!("{b},le=\"5\"}}")).as_deref(), Some("2"));
        assert_eq!(line(&format!("{b},le=\"+Inf\"}}")).as_deref(), Some("2"));
        assert_eq!(
            line("redjury_http_requests_total{route=\"/v1/score\",code=\"200\"}").as_deref(),
            Some("2")
        );
    }

    #[test]
    fn unknown_paths_share_one_label() {
        assert_eq!(route_label("/v1/score"), "/v1/score");
        assert_eq!(route_label("/v1/score/../../etc"), "other");
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
