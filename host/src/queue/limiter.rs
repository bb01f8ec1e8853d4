//! controller-runtime's default rate limiter: the larger of a per-key exponential backoff
//! (5 ms doubling to 1000 s, reset by `forget`) and an overall token bucket (10 qps, burst 100).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use wasmop_contract::Rate;

use crate::rate::TokenBucket;

/// Settings of the rate limiter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    /// The first per-key retry delay.
    pub base_delay: Duration,
    /// The largest per-key retry delay.
    pub max_delay: Duration,
    /// Overall retries per second once the burst is spent.
    pub qps: f64,
    /// Retries allowed at once before the rate applies.
    pub burst: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            base_delay: Duration::from_millis(5),
            max_delay: Duration::from_secs(1000),
            qps: 10.0,
            burst: 100,
        }
    }
}

/// Per-key failure counts plus the shared token bucket.
#[derive(Debug)]
pub(crate) struct RateLimiter<K> {
    limits: RateLimits,
    failures: HashMap<K, u32>,
    bucket: TokenBucket,
}

impl<K: Eq + Hash> RateLimiter<K> {
    pub(crate) fn new(limits: RateLimits) -> Self {
        RateLimiter {
            limits,
            failures: HashMap::new(),
            bucket: TokenBucket::new(Rate::new(limits.qps, limits.burst)),
        }
    }

    /// How long `key` must wait before its next retry; counts the retry.
    pub(crate) fn when(&mut self, key: K) -> Duration {
        let failures = self.failures.entry(key).or_insert(0);
        let exponent = (*failures).min(63);
        *failures = failures.saturating_add(1);
        let backoff = self
            .limits
            .base_delay
            .saturating_mul(1u32.checked_shl(exponent).unwrap_or(u32::MAX));
        let backoff = if exponent >= 32 {
            self.limits.max_delay
        } else {
            backoff.min(self.limits.max_delay)
        };
        backoff.max(self.bucket.reserve())
    }

    /// Forgets `key`'s failures after a success.
    pub(crate) fn forget(&mut self, key: &K) {
        self.failures.remove(key);
    }

    /// How many times `key` has been retried since it last succeeded.
    pub(crate) fn retries(&self, key: &K) -> u32 {
        self.failures.get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_from_5ms_caps_at_1000s_and_resets_on_forget() {
        let mut limiter = RateLimiter::new(RateLimits {
            burst: 1000,
            ..RateLimits::default()
        });
        let delays: Vec<_> = (0..4).map(|_| limiter.when("a")).collect();
        let ms = Duration::from_millis;
        assert_eq!(delays, [ms(5), ms(10), ms(20), ms(40)]);
        assert_eq!(limiter.when("b"), ms(5), "keys back off independently");
        for _ in 0..40 {
            limiter.when("a");
        }
        assert_eq!(limiter.when("a"), Duration::from_secs(1000));
        limiter.forget(&"a");
        assert_eq!(limiter.retries(&"a"), 0);
        assert_eq!(limiter.when("a"), ms(5));
    }

    #[tokio::test(start_paused = true)]
    async fn the_bucket_allows_a_burst_of_100_then_10_per_second() {
        let mut limiter = RateLimiter::new(RateLimits::default());
        for i in 0..100 {
            assert_eq!(
                limiter.when(i),
                Duration::from_millis(5),
                "burst retry {i} waits only its backoff"
            );
        }
        assert_eq!(limiter.when(100), Duration::from_millis(100));
        assert_eq!(limiter.when(101), Duration::from_millis(200));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            limiter.when(102),
            Duration::from_millis(5),
            "a second refills ten tokens"
        );
    }
}
