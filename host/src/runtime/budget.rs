//! One plugin version's budget: the token buckets that bound how fast it may write, record events,
//! log and requeue, and the count of everything refused, dropped or throttled at its boundary,
//! which the metrics report per plugin. Shared by every instance of the version.
//!
//! A tenant's plugin also draws its log lines from a bucket all tenants' plugins share
//! (`--tenant-log-rate`), so many tenants together log no faster than that.
//!
//! Over its rate a guest waits for its turn rather than being refused: a flood then costs the
//! host a sleeping task, not a spinning one, and a reconcile that waits past its deadline times
//! out as any other.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::rate::TokenBucket;
use wasmop_contract::Refusal;
use wasmop_contract::imports::Observer;
use wasmop_contract::limits::GuestLimits;

/// Rates and refusal counts of one plugin version.
pub(crate) struct Budget {
    writes: Mutex<TokenBucket>,
    events: Mutex<TokenBucket>,
    logs: Mutex<TokenBucket>,
    requeues: Mutex<TokenBucket>,
    shared_logs: Option<Arc<Mutex<TokenBucket>>>,
    refused: [AtomicU64; Refusal::ALL.len()],
    observer: Arc<dyn Observer>,
}

impl Budget {
    /// A full budget under `limits`, telling `observer` of every refusal.
    pub(crate) fn new(limits: &GuestLimits, observer: Arc<dyn Observer>) -> Self {
        Budget {
            writes: Mutex::new(TokenBucket::new(limits.writes)),
            events: Mutex::new(TokenBucket::new(limits.events)),
            logs: Mutex::new(TokenBucket::new(limits.logs)),
            requeues: Mutex::new(TokenBucket::new(limits.requeues)),
            shared_logs: None,
            refused: Default::default(),
            observer,
        }
    }

    /// This budget, its log lines also drawn from `logs`, a bucket other budgets share.
    pub(crate) fn sharing_logs(mut self, logs: Arc<Mutex<TokenBucket>>) -> Self {
        self.shared_logs = Some(logs);
        self
    }

    /// Counts one refusal.
    pub(crate) fn refuse(&self, why: Refusal) {
        self.refused[why as usize].fetch_add(1, Ordering::Relaxed);
        self.observer.refused(why);
    }

    /// How many of each refusal so far, in [`Refusal::ALL`] order.
    pub(crate) fn refusals(&self) -> [(Refusal, u64); Refusal::ALL.len()] {
        Refusal::ALL.map(|why| (why, self.refused[why as usize].load(Ordering::Relaxed)))
    }

    /// How long the next write must wait for the write rate (counted when it must).
    pub(crate) fn write_delay(&self) -> Duration {
        Self::delay(&self.writes, || self.refuse(Refusal::WriteThrottled))
    }

    /// How long the next event must wait for the event rate (counted when it must).
    pub(crate) fn event_delay(&self) -> Duration {
        Self::delay(&self.events, || self.refuse(Refusal::EventThrottled))
    }

    /// How long the next log line must wait for the log rate (counted when it must).
    pub(crate) fn log_delay(&self) -> Duration {
        let own = lock(&self.logs).reserve();
        let shared = self.shared_logs.as_deref().map(|b| lock(b).reserve());
        let delay = own.max(shared.unwrap_or_default());
        if !delay.is_zero() {
            self.refuse(Refusal::LogThrottled);
        }
        delay
    }

    /// The delay a requeue asked for `after` gets under the requeue rate.
    pub(crate) fn requeue_delay(&self, after: Duration) -> Duration {
        let turn = lock(&self.requeues).reserve();
        if turn > after {
            self.refuse(Refusal::RequeueThrottled);
        }
        after.max(turn)
    }

    fn delay(bucket: &Mutex<TokenBucket>, throttled: impl FnOnce()) -> Duration {
        let delay = lock(bucket).reserve();
        if !delay.is_zero() {
            throttled();
        }
        delay
    }
}

fn lock(bucket: &Mutex<TokenBucket>) -> std::sync::MutexGuard<'_, TokenBucket> {
    bucket.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::Rate;

    #[tokio::test(start_paused = true)]
    async fn rates_hold_per_kind_of_spending_and_waits_are_counted() {
        let limits = GuestLimits {
            events: Rate::new(1.0, 2),
            requeues: Rate::new(10.0, 1),
            ..GuestLimits::default()
        };
        let budget = Budget::new(&limits, Arc::new(()));
        let waits: Vec<Duration> = (0..4).map(|_| budget.event_delay()).collect();
        let s = Duration::from_secs;
        assert_eq!(waits, [s(0), s(0), s(1), s(2)], "the burst, then the rate");
        assert_eq!(budget.log_delay(), s(0), "logs have their own bucket");
        let ms = Duration::from_millis;
        assert_eq!(budget.requeue_delay(ms(0)), ms(0));
        assert_eq!(
            budget.requeue_delay(ms(0)),
            ms(100),
            "a hot loop slows to the rate"
        );
        assert_eq!(
            budget.requeue_delay(ms(500)),
            ms(500),
            "a longer delay stands"
        );
        let counts = budget.refusals();
        assert_eq!(
            counts[Refusal::EventThrottled as usize],
            (Refusal::EventThrottled, 2)
        );
        assert_eq!(
            counts[Refusal::RequeueThrottled as usize],
            (Refusal::RequeueThrottled, 1)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn budgets_sharing_a_log_bucket_log_no_faster_together_than_it_allows() {
        let limits = GuestLimits {
            logs: Rate::new(10.0, 10),
            ..GuestLimits::default()
        };
        let shared = Arc::new(Mutex::new(TokenBucket::new(Rate::new(1.0, 4))));
        let budgets: Vec<Budget> = (0..2)
            .map(|_| Budget::new(&limits, Arc::new(())).sharing_logs(shared.clone()))
            .collect();
        let waits: Vec<Duration> = (0..3)
            .flat_map(|_| budgets.iter().map(Budget::log_delay))
            .collect();
        let s = Duration::from_secs;
        assert_eq!(waits, [s(0), s(0), s(0), s(0), s(1), s(2)]);
        let alone = Budget::new(&limits, Arc::new(()));
        assert_eq!(
            alone.log_delay(),
            s(0),
            "an operator's plugin shares nothing"
        );
        let throttled = budgets[1].refusals()[Refusal::LogThrottled as usize];
        assert_eq!(throttled, (Refusal::LogThrottled, 1));
    }
}
