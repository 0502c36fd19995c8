//! The memory of calls that failed recently: a rollout whose judges keep
//! failing (a reply the judge cannot give, a provider error past every
//! retry) is not sent again on every request that names it, each costing
//! a worker seconds; it is answered at once as a failure, with the reason,
//! until its backoff ends, and then tried again.
//!
//! Owns: which calls are remembered, for how long, and the bound on how
//! many. Must never remember a call the judge answered, never grow past
//! its bound, and never hold anything but the reason (no prompt, no key).

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Calls remembered at most; the ones whose backoff ends soonest go first.
const MAX_REMEMBERED: usize = 10_000;
/// The first wait after a failure; it doubles with each failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_secs(10);
/// The longest wait.
const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// One call's recent failures.
#[derive(Debug, Clone)]
struct Failed {
    reason: String,
    /// Failures in a row.
    strikes: u32,
    /// When the call may be tried again.
    until: Instant,
}

/// Recent failures by call digest.
#[derive(Debug, Default)]
pub(crate) struct FailureMemory {
    calls: HashMap<String, Failed>,
}

/// What the memory says of a call that may not be sent yet.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Remembered {
    /// Why it failed last.
    pub reason: String,
    /// Failures in a row.
    pub strikes: u32,
    /// How long until it is tried again.
    pub retry_in: Duration,
}

impl FailureMemory {
    /// The failure a call is still waiting out, if any.
    pub(crate) fn waiting(&self, digest: &str, now: Instant) -> Option<Remembered> {
        let f = self.calls.get(digest)?;
        (f.until > now).then(|| Remembered {
            reason: f.reason.clone(),
            strikes: f.strikes,
            retry_in: f.until - now,
        })
    }

    /// Records a failure: the wait doubles with each one in a row.
    pub(crate) fn failed(&mut self, digest: &str, reason: &str, now: Instant) {
        let strikes = self.calls.get(digest).map_or(1, |f| f.strikes.saturating_add(1));
        let wait = FIRST_BACKOFF.saturating_mul(1 << strikes.saturating_sub(1).min(16));
        if !self.calls.contains_key(digest) && self.calls.len() >= MAX_REMEMBERED {
            self.make_room(now);
        }
        self.calls.insert(
            digest.to_string(),
            Failed { reason: reason.to_string(), strikes, until: now + wait.min(MAX_BACKOFF) },
        );
    }

    /// Forgets a call the judge has now answered.
    pub(crate) fn answered(&mut self, digest: &str) {
        self.calls.remove(digest);
    }

    /// Calls remembered now (waiting or not).
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    /// Drops every entry whose wait is over, and if that is not enough,
    /// the one that would be retried soonest.
    fn make_room(&mut self, now: Instant) {
        self.calls.retain(|_, f| f.until > now);
        if self.calls.len() >= MAX_REMEMBERED
            && let Some(first) =
                self.calls.iter().min_by_key(|(_, f)| f.until).map(|(k, _)| k.clone())
        {
            self.calls.remove(&first);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_failure_waits_a_doubling_backoff_and_an_answer_forgets_it() {
        let mut m = FailureMemory::default();
        let t0 = Instant::now();
        assert_eq!(m.waiting("a", t0), None);
        m.failed("a", "the reply was not JSON", t0);
        let w = m.waiting("a", t0).unwrap();
        assert_eq!((w.strikes, w.retry_in), (1, Duration::from_secs(10)));
        assert_eq!(w.reason, "the reply was not JSON");
        assert_eq!(m.waiting("a", t0 + Duration::from_secs(10)), None, "tried again after it");
        m.failed("a", "again", t0 + Duration::from_secs(10));
        assert_eq!(
            m.waiting("a", t0 + Duration::from_secs(10)).unwrap().retry_in,
            Duration::from_secs(20)
        );
        for _ in 0..20 {
            m.failed("a", "again", t0);
        }
        assert_eq!(m.waiting("a", t0).unwrap().retry_in, MAX_BACKOFF);
        m.answered("a");
        assert_eq!(m.waiting("a", t0), None);
    }

    #[test]
    fn the_memory_never_grows_past_its_bound() {
        let mut m = FailureMemory::default();
        let t0 = Instant::now();
        for i in 0..MAX_REMEMBERED + 50 {
            m.failed(&format!("call-{i}"), "down", t0 + Duration::from_millis(i as u64));
        }
        assert_eq!(m.len(), MAX_REMEMBERED);
        // The newest failures are the ones kept.
        assert!(m.waiting(&format!("call-{}", MAX_REMEMBERED + 49), t0).is_some());
        assert!(m.waiting("call-0", t0).is_none());
    }
}
