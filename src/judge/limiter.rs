//! Per-judge pacing: a smooth request limiter, a tokens-per-minute limiter
//! fed by an estimate of each call, and a concurrency cap.
//!
//! Owns: never releasing a minute's quota in one burst (providers enforce
//! their limits over short windows). Must never block a call forever: a call
//! larger than the token burst still goes, taking the whole bucket.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// One judge's pacing: requests, tokens and calls in flight.
pub struct Limiter {
    requests: DefaultDirectRateLimiter,
    tokens: DefaultDirectRateLimiter,
    token_burst: NonZeroU32,
    slots: Arc<Semaphore>,
}

impl Limiter {
    /// Paces `rpm` requests and `tpm` tokens a minute, `max_concurrency` at once.
    pub fn new(rpm: u32, tpm: u32, max_concurrency: u32) -> Limiter {
        let one = NonZeroU32::MIN;
        // One request every 60/rpm seconds, no burst: evenly spaced.
        let per_request = Duration::from_secs_f64(60.0 / f64::from(rpm.max(1)));
        let requests = RateLimiter::direct(
            Quota::with_period(per_request).unwrap_or(Quota::per_second(one)).allow_burst(one),
        );
        // Tokens refill continuously; the bucket holds three seconds' worth.
        let per_token = Duration::from_secs_f64(60.0 / f64::from(tpm.max(1)));
        let token_burst = NonZeroU32::new((tpm / 20).max(1)).unwrap_or(one);
        let tokens = RateLimiter::direct(
            Quota::with_period(per_token)
                .unwrap_or(Quota::per_second(one))
                .allow_burst(token_burst),
        );
        Limiter {
            requests,
            tokens,
            token_burst,
            slots: Arc::new(Semaphore::new(max_concurrency.max(1) as usize)),
        }
    }

    /// Waits for a concurrency slot, then for the token and request budgets.
    pub async fn acquire(&self, estimated_tokens: u64) -> OwnedSemaphorePermit {
        #[allow(clippy::expect_used)]
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the limiter never closes its semaphore");
        // A call larger than the bucket is charged in bucket-sized pieces,
        // so the tokens-per-minute pace holds for every call size.
        let mut remaining = estimated_tokens.max(1);
        while remaining > 0 {
            let n = u32::try_from(remaining).unwrap_or(u32::MAX).min(self.token_burst.get());
            if let Some(n) = NonZeroU32::new(n) {
                // n never exceeds the bucket, the only error until_n_ready has.
                let _ = self.tokens.until_n_ready(n).await;
            }
            remaining -= u64::from(n);
        }
        self.requests.until_ready().await;
        permit
    }
}
