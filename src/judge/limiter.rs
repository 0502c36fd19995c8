//! Per-judge pacing: requests evenly spaced at a rate that follows the
//! provider's own rate-limit headers, a tokens-per-minute bucket fed by an
//! estimate of each call, and a concurrency cap.
//!
//! The request rate is the smaller of the configured `rpm` and the limit
//! the provider reports, times [`SAFETY`] (room for network jitter against
//! limits enforced over short windows), times an AIMD factor: halved-ish on
//! a 429, recovered a little on each success. A reply that says the budget
//! is spent holds every call until it refills, so the judge slows down
//! before the limit rather than after a 429.
//!
//! Owns: never releasing a minute's quota in one burst. Must never block a
//! call forever: a call larger than the token burst still goes, taking the
//! whole bucket, and every hold ends at the provider's reset time.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::config::Rate;
use super::headers::RateHeaders;

/// The share of a limit paced at: a request early by a few milliseconds
/// must not make a full window overflow.
pub(crate) const SAFETY: f64 = 0.97;

/// The rate an `rpm = "auto"` judge starts at until a reply reports its
/// limit (the first reply comes within a request or two).
const AUTO_START_RPM: f64 = 60.0;

/// How long later requests wait for the first one's reply at most.
const FIRST_REPLY_WAIT: Duration = Duration::from_secs(30);

/// The timer's resolution.
const TICK: Duration = Duration::from_millis(1);

/// AIMD: the factor after a 429 is this share of what it was…
const DECREASE: f64 = 0.7;
/// …and it grows back by this much per successful reply.
const INCREASE: f64 = 0.02;
/// …and this share after a reply that says the budget is spent.
const NEAR_LIMIT: f64 = 0.9;
/// The factor never falls below this.
const FLOOR: f64 = 0.05;

/// The rate limits a judge's provider reported (the largest seen) and the
/// pace the judge ended at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedLimits {
    /// Requests per minute, as reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u64>,
    /// Tokens per minute (OpenAI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<u64>,
    /// Input tokens per minute (Anthropic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens_per_minute: Option<u64>,
    /// Output tokens per minute (Anthropic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_minute: Option<u64>,
    /// Requests per minute the judge was paced at when the run ended.
    pub paced_rpm: f64,
    /// Times a 429 slowed the judge down.
    pub slowdowns: u64,
}

/// The request pace and what the provider last said.
struct Pace {
    /// When the first request went, until its reply (or its failure) is
    /// seen: until then no other request goes.
    first_out: Option<Instant>,
    /// Whether a reply (or a failure) of this judge was seen.
    replied: bool,
    /// When the last request went.
    last_at: Instant,
    next_at: Instant,
    hold_until: Option<Instant>,
    factor: f64,
    learned_rpm: Option<u64>,
    /// Tokens left until the given instant, by the provider's last word.
    token_budget: Option<(u64, Instant)>,
    /// Output tokens left until the given instant (Anthropic counts them
    /// apart from input tokens).
    output_budget: Option<(u64, Instant)>,
    observed: ObservedLimits,
}

/// Whose requests a provider's budget counts that this limiter paces:
/// its own process's only, or every process sharing a store's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BudgetScope {
    /// This process paces alone: a budget reported spent means someone
    /// else spends it too, so the pace comes down.
    Own,
    /// The processes of a shared store pace together in it: a spent budget
    /// holds them all, and the pace stays (they are the someone else).
    Shared,
}

/// One judge's pacing: requests, tokens and calls in flight.
pub(crate) struct Limiter {
    rpm: Rate,
    /// Output tokens a request may use (its `max_output_tokens`): what it
    /// needs left of a reported output-token budget to go; 0 = unchecked.
    output_reserve: u64,
    pace: Mutex<Pace>,
    tokens: Option<(DefaultDirectRateLimiter, NonZeroU32)>,
    slots: Arc<Semaphore>,
    /// Requests sent so far: numbers each [`Pass`], so a reply can tell
    /// how many went after its own request (the provider's budget in that
    /// reply does not count them yet).
    sent: AtomicU64,
    /// Wakes waiting calls when the pace quickens.
    quickened: tokio::sync::Notify,
}

/// Leave to send one request; dropping it frees the slot.
pub(crate) struct Pass {
    /// The concurrency slot held while the request is out (none for a
    /// retry that reaches no provider).
    _slot: Option<OwnedSemaphorePermit>,
    /// This request's number among the judge's requests.
    number: u64,
}

impl Limiter {
    /// Paces `rpm` requests and `tpm` tokens a minute (or what the
    /// provider's headers say), `max_concurrency` at once.
    pub(crate) fn new(rpm: Rate, tpm: Rate, max_concurrency: u32) -> Limiter {
        let tokens = tpm.per_minute().map(|tpm| {
            let one = NonZeroU32::MIN;
            // Tokens refill continuously; the bucket holds three seconds' worth.
            let per_token = Duration::from_secs_f64(60.0 / f64::from(tpm.max(1)));
            let burst = NonZeroU32::new((tpm / 20).max(1)).unwrap_or(one);
            let quota = Quota::with_period(per_token).unwrap_or(Quota::per_second(one));
            (RateLimiter::direct(quota.allow_burst(burst)), burst)
        });
        let now = Instant::now();
        Limiter {
            rpm,
            output_reserve: 0,
            pace: Mutex::new(Pace {
                first_out: None,
                replied: false,
                last_at: now,
                next_at: now,
                hold_until: None,
                factor: 1.0,
                learned_rpm: None,
                token_budget: None,
                output_budget: None,
                observed: ObservedLimits::default(),
            }),
            tokens,
            slots: Arc::new(Semaphore::new(max_concurrency.max(1) as usize)),
            sent: AtomicU64::new(0),
            quickened: tokio::sync::Notify::new(),
        }
    }

    /// Holds a request while the provider reports fewer output tokens
    /// left than one request may use (`max_output_tokens`).
    pub(crate) fn with_output_reserve(mut self, max_output_tokens: u64) -> Limiter {
        self.output_reserve = max_output_tokens;
        self
    }

    /// Waits for a concurrency slot, then for the token and request budgets.
    pub(crate) async fn acquire(&self, estimated_tokens: u64) -> Pass {
        #[allow(clippy::expect_used)]
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the limiter never closes its semaphore");
        if let Some((bucket, burst)) = &self.tokens {
            // A call larger than the bucket is charged in bucket-sized
            // pieces, so the tokens-per-minute pace holds for every size.
            let mut remaining = estimated_tokens.max(1);
            while remaining > 0 {
                let n = u32::try_from(remaining).unwrap_or(u32::MAX).min(burst.get());
                if let Some(n) = NonZeroU32::new(n) {
                    // n never exceeds the bucket, the only error until_n_ready has.
                    let _ = bucket.until_n_ready(n).await;
                }
                remaining -= u64::from(n);
            }
        }
        loop {
            // Registered before looking, so a quickening in between is seen.
            let quickened = self.quickened.notified();
            let Some(at) = self.reserve(estimated_tokens) else { break };
            tokio::select! {
                _ = tokio::time::sleep_until(at.into()) => {}
                _ = quickened => {}
            }
        }
        let number = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        Pass { _slot: Some(permit), number }
    }

    /// A pass outside the concurrency, rate and token budgets, for a retry
    /// that reaches no provider (its endpoint refuses to connect): waiting
    /// for a slot the calls queued on the budgets hold, it took minutes.
    pub(crate) fn unbudgeted(&self) -> Pass {
        let number = self.sent.fetch_add(1, Ordering::Relaxed) + 1;
        Pass { _slot: None, number }
    }

    /// Takes the next request slot if it is due (`None`), or says when to
    /// look again.
    fn reserve(&self, estimated_tokens: u64) -> Option<Instant> {
        let mut p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if let Some((left, until)) = p.token_budget {
            if until <= now {
                p.token_budget = None;
            } else if estimated_tokens > left {
                p.hold_until = Some(p.hold_until.map_or(until, |h| h.max(until)));
            }
        }
        if let Some((left, until)) = p.output_budget {
            if until <= now {
                p.output_budget = None;
            } else if self.output_reserve > left {
                p.hold_until = Some(p.hold_until.map_or(until, |h| h.max(until)));
            }
        }
        // Slow start: one request, then wait for its reply. It reports the
        // budget (another process may be spending it) and it absorbs the
        // connection's set-up time, which would otherwise bunch the first
        // requests together at the provider.
        if let (false, Some(out)) = (p.replied, p.first_out) {
            if now.saturating_duration_since(out) < FIRST_REPLY_WAIT {
                return Some(now + FIRST_REPLY_WAIT);
            }
            p.replied = true;
        }
        let due = p.hold_until.map_or(p.next_at, |h| h.max(p.next_at));
        // Timers have millisecond ticks: a task woken within one of its
        // due time takes its slot rather than sleeping another tick.
        if due > now + TICK {
            return Some(due);
        }
        p.hold_until = None;
        // The next slot follows this one's due time, not the moment this
        // task woke: a busy machine wakes timers late (a tick, or several
        // on two loaded cores), and counting from the wake-up would lose
        // that much every request — 2–3% of the pace measured. Up to half
        // an interval late still counts from the due time; a call later
        // than that (after an idle spell) counts from now, so idle time
        // never turns into a burst.
        let late = now.saturating_duration_since(due);
        let start =
            if late <= (self.interval(&p) / 2).max(2 * TICK) { due.max(p.last_at) } else { now };
        p.last_at = now;
        p.first_out.get_or_insert(now);
        p.next_at = start + self.interval(&p);
        if let Some((left, until)) = p.token_budget {
            p.token_budget = Some((left.saturating_sub(estimated_tokens), until));
        }
        if let Some((left, until)) = p.output_budget {
            p.output_budget = Some((left.saturating_sub(self.output_reserve), until));
        }
        None
    }

    /// The spacing between requests now.
    fn interval(&self, p: &Pace) -> Duration {
        Duration::from_secs_f64(60.0 / self.rate(p).max(0.001))
    }

    /// Requests per minute paced at now.
    fn rate(&self, p: &Pace) -> f64 {
        let learned = p.learned_rpm.map(|n| n as f64);
        let base = match (self.rpm.per_minute().map(f64::from), learned) {
            (Some(c), Some(l)) => c.min(l),
            (Some(c), None) => c,
            (None, Some(l)) => l,
            (None, None) => AUTO_START_RPM,
        };
        base * SAFETY * p.factor
    }

    /// The spacing between requests this limiter keeps now.
    pub(crate) fn interval_now(&self) -> Duration {
        let p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        self.interval(&p)
    }

    /// Learns from the reply to `pass`'s request: the limits and budgets
    /// its headers report, and whether it was a 429 (`rate_limited`).
    /// Returns how long the requests budget is held when the reply says
    /// it is spent (for a budget shared with other processes).
    pub(crate) fn observe(
        &self,
        pass: &Pass,
        headers: &RateHeaders,
        rate_limited: bool,
        budget: BudgetScope,
    ) -> Option<Duration> {
        let mut held = None;
        // Requests sent after this one reached the provider after its
        // budget was counted: they will spend what it says is left.
        let others = self.sent.load(Ordering::Relaxed).saturating_sub(pass.number);
        let mut p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if !p.replied {
            p.replied = true;
            // The next request goes one interval after this reply, not
            // after the first request: that one reached the provider late.
            p.next_at = now + self.interval(&p);
            self.quickened.notify_waiters();
        }
        if rate_limited {
            p.factor = (p.factor * DECREASE).max(FLOOR);
            p.observed.slowdowns += 1;
        } else {
            p.factor = (p.factor + INCREASE).min(1.0);
        }
        if let Some(r) = headers.requests {
            if let Some(limit) = r.limit {
                p.learned_rpm = Some(limit);
                p.observed.requests_per_minute = p.observed.requests_per_minute.max(Some(limit));
                // A faster pace learned (an "auto" judge's first reply)
                // applies to the next request already.
                let sooner = p.last_at + self.interval(&p);
                if sooner < p.next_at {
                    p.next_at = sooner;
                    self.quickened.notify_waiters();
                }
            }
            if let (Some(left), Some(reset)) = (r.remaining, r.reset)
                && left <= others
            {
                let one = r.limit.map(|l| Duration::from_secs_f64(60.0 / l as f64));
                let wait = one.map_or(reset, |one| one.min(reset));
                let until = now + wait;
                p.hold_until = Some(p.hold_until.map_or(until, |h| h.max(until)));
                held = Some(wait);
                // A spent budget is the signal a 429 would have been, one
                // request earlier: someone else is spending it too, so the
                // pace comes down (gently) before the provider refuses.
                if budget == BudgetScope::Own {
                    p.factor = (p.factor * NEAR_LIMIT).max(FLOOR);
                }
            }
        }
        let observed = &mut p.observed;
        for (budget, seen) in [
            (headers.tokens, &mut observed.tokens_per_minute),
            (headers.input_tokens, &mut observed.input_tokens_per_minute),
            (headers.output_tokens, &mut observed.output_tokens_per_minute),
        ] {
            if let Some(limit) = budget.and_then(|b| b.limit) {
                *seen = (*seen).max(Some(limit));
            }
        }
        let spendable = [headers.tokens, headers.input_tokens]
            .into_iter()
            .flatten()
            .filter_map(|b| Some((b.remaining?, now + b.reset?)))
            .min_by_key(|(left, _)| *left);
        if spendable.is_some() {
            p.token_budget = spendable;
        }
        if let Some((Some(left), Some(reset))) =
            headers.output_tokens.map(|b| (b.remaining, b.reset))
        {
            p.output_budget = Some((left, now + reset));
        }
        held
    }

    /// The request of `pass` got no reply (a timeout, a refused
    /// connection): the requests waiting for a first reply go on.
    pub(crate) fn unanswered(&self, _pass: &Pass) {
        let mut p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        if !p.replied {
            p.replied = true;
            self.quickened.notify_waiters();
        }
    }

    /// What the provider reported, and the pace now.
    pub(crate) fn observed(&self) -> ObservedLimits {
        let p = self.pace.lock().unwrap_or_else(|e| e.into_inner());
        ObservedLimits { paced_rpm: self.rate(&p), ..p.observed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::headers::Budget;

    fn requests(limit: u64, remaining: u64, reset_ms: u64) -> RateHeaders {
        RateHeaders {
            requests: Some(Budget {
                limit: Some(limit),
                remaining: Some(remaining),
                reset: Some(Duration::from_millis(reset_ms)),
            }),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn the_pace_follows_the_reported_limit_below_the_configured_one() {
        let l = Limiter::new(Rate::PerMinute(6000), Rate::Auto, 4);
        let pass = l.acquire(1).await;
        l.observe(&pass, &requests(600, 500, 10), false, BudgetScope::Own);
        let o = l.observed();
        assert_eq!(o.requests_per_minute, Some(600));
        assert!((o.paced_rpm - 600.0 * SAFETY).abs() < 1e-6, "{}", o.paced_rpm);
    }

    #[tokio::test]
    async fn auto_starts_slow_and_learns() {
        let l = Limiter::new(Rate::Auto, Rate::Auto, 4);
        assert!((l.observed().paced_rpm - AUTO_START_RPM * SAFETY).abs() < 1e-6);
        let pass = l.acquire(1).await;
        l.observe(&pass, &requests(3000, 2999, 20), false, BudgetScope::Own);
        assert!((l.observed().paced_rpm - 3000.0 * SAFETY).abs() < 1e-6);
    }

    #[tokio::test]
    async fn a_429_slows_down_and_successes_recover() {
        let l = Limiter::new(Rate::PerMinute(600), Rate::Auto, 4);
        let pass = l.acquire(1).await;
        l.observe(&pass, &RateHeaders::default(), true, BudgetScope::Own);
        let slowed = l.observed().paced_rpm;
        assert!((slowed - 600.0 * SAFETY * DECREASE).abs() < 1e-6);
        for _ in 0..100 {
            l.observe(&pass, &RateHeaders::default(), false, BudgetScope::Own);
        }
        assert!((l.observed().paced_rpm - 600.0 * SAFETY).abs() < 1e-6, "back to the full pace");
        assert_eq!(l.observed().slowdowns, 1);
    }

    #[tokio::test]
    async fn a_spent_budget_holds_the_next_request() {
        let l = Limiter::new(Rate::PerMinute(600_000), Rate::Auto, 4);
        let pass = l.acquire(1).await;
        l.observe(&pass, &requests(60, 0, 5000), false, BudgetScope::Own);
        let wait = l.reserve(1).expect("held");
        let held = wait.saturating_duration_since(Instant::now());
        // One request's worth of a 60-a-minute budget: about a second.
        assert!(held > Duration::from_millis(900) && held <= Duration::from_secs(1), "{held:?}");
    }

    #[tokio::test]
    async fn a_call_larger_than_the_tokens_left_waits_for_the_reset() {
        let l = Limiter::new(Rate::PerMinute(600_000), Rate::Auto, 4);
        let tokens = RateHeaders {
            tokens: Some(Budget {
                limit: Some(100_000),
                remaining: Some(500),
                reset: Some(Duration::from_millis(800)),
            }),
            ..Default::default()
        };
        let pass = l.acquire(1).await;
        l.observe(&pass, &tokens, false, BudgetScope::Own);
        assert!(l.reserve(400).is_none(), "400 of the 500 left");
        let at = l.reserve(400).expect("100 left: wait for the reset");
        assert!(at.saturating_duration_since(Instant::now()) > Duration::from_millis(500));
        assert_eq!(l.observed().tokens_per_minute, Some(100_000));
    }

    /// Anthropic's output tokens are a budget of their own: a request that
    /// may write more than is left waits for the reset.
    #[tokio::test]
    async fn a_spent_output_token_budget_holds_the_next_request() {
        let l = Limiter::new(Rate::PerMinute(600_000), Rate::Auto, 4).with_output_reserve(1024);
        let output = RateHeaders {
            output_tokens: Some(Budget {
                limit: Some(80_000),
                remaining: Some(2_500),
                reset: Some(Duration::from_millis(800)),
            }),
            ..Default::default()
        };
        let pass = l.acquire(1).await;
        l.observe(&pass, &output, false, BudgetScope::Own);
        assert!(l.reserve(1).is_none(), "1,024 of the 2,500 left");
        assert!(l.reserve(1).is_none(), "1,024 of the 1,476 left");
        let at = l.reserve(1).expect("452 left: wait for the reset");
        assert!(at.saturating_duration_since(Instant::now()) > Duration::from_millis(500));
        assert_eq!(l.observed().output_tokens_per_minute, Some(80_000));
    }
}
