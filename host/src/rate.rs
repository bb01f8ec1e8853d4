//! Token buckets: the overall retry limit of every workqueue and the per-plugin budgets of the
//! sandbox (writes, events, log lines, requeues) share this one implementation.
//!
//! A bucket holds up to `burst` tokens and refills at `per_second`. [`TokenBucket::reserve`]
//! always takes a token, going into debt, and says how long the caller must wait (as
//! golang.org/x/time/rate's `Reserve` does). Time is tokio's, so tests can run on a paused clock.
//!
//! Imports: the contract's `Rate` only; a leaf every rate-limited part builds on.

use std::time::Duration;

use tokio::time::Instant;
use wasmop_contract::limits::Rate;

/// One token bucket.
#[derive(Debug)]
pub struct TokenBucket {
    rate: Rate,
    tokens: f64,
    refilled: Instant,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(rate: Rate) -> Self {
        TokenBucket {
            rate,
            tokens: f64::from(rate.burst),
            refilled: Instant::now(),
        }
    }

    fn refill(&mut self) {
        let now = Instant::now();
        let elapsed = now.duration_since(self.refilled).as_secs_f64();
        self.tokens =
            (self.tokens + elapsed * self.rate.per_second).min(f64::from(self.rate.burst));
        self.refilled = now;
    }

    /// Takes a token, going into debt when the bucket is empty; returns the wait the debt implies.
    pub fn reserve(&mut self) -> Duration {
        self.refill();
        self.tokens -= 1.0;
        if self.tokens >= 0.0 || self.rate.per_second <= 0.0 {
            return Duration::ZERO;
        }
        Duration::from_nanos((-self.tokens / self.rate.per_second * 1e9).round() as u64)
    }

    /// Takes a token if one is there; otherwise takes nothing and says how long until one is.
    pub fn try_take(&mut self) -> Result<(), Duration> {
        self.refill();
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Ok(());
        }
        if self.rate.per_second <= 0.0 {
            return Err(Duration::MAX);
        }
        let missing = 1.0 - self.tokens;
        Err(Duration::from_nanos(
            (missing / self.rate.per_second * 1e9).ceil() as u64,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn try_take_never_goes_into_debt() {
        let mut bucket = TokenBucket::new(Rate::new(4.0, 2));
        assert_eq!(bucket.try_take(), Ok(()));
        assert_eq!(bucket.try_take(), Ok(()));
        assert_eq!(bucket.try_take(), Err(Duration::from_millis(250)));
        assert_eq!(
            bucket.try_take(),
            Err(Duration::from_millis(250)),
            "a refusal takes nothing"
        );
        tokio::time::advance(Duration::from_millis(250)).await;
        assert_eq!(bucket.try_take(), Ok(()));
        assert_eq!(bucket.try_take(), Err(Duration::from_millis(250)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_then_the_rate() {
        let mut bucket = TokenBucket::new(Rate::new(10.0, 3));
        assert!((0..3).all(|_| bucket.reserve().is_zero()), "the burst");
        assert_eq!(bucket.reserve(), Duration::from_millis(100));
        assert_eq!(bucket.reserve(), Duration::from_millis(200));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(
            bucket.reserve().is_zero(),
            "a second repays the debt and refills"
        );
    }
}
