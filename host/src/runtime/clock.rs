//! The wall clock a guest reads. In a cluster it is the host's, unless the call under way froze
//! it ([`frozen_at`]: a recorded reconcile reads the instant its recording keeps, so replaying it
//! stamps the same time); an offline test sets it ([`SetClock`]), so a reconcile that stamps a
//! time (a condition's `lastTransitionTime`) writes the same bytes on every run.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use wasmtime_wasi::HostWallClock;

tokio::task_local! {
    static FROZEN: Duration;
}

/// Runs `call` with the wall clock of every guest it runs reading `since_epoch` throughout.
pub async fn frozen_at<F: Future>(since_epoch: Duration, call: F) -> F::Output {
    FROZEN.scope(since_epoch, call).await
}

/// The host's wall clock, or the instant the call under way froze it at.
#[derive(Debug, Clone, Copy, Default)]
pub struct HostClock;

impl HostWallClock for HostClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        FROZEN.try_with(|at| *at).unwrap_or_else(|_| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
        })
    }
}

/// A wall clock that reads what it was last set to, shared by every instance of a plugin.
#[derive(Debug, Clone, Default)]
pub struct SetClock {
    since_epoch: Arc<AtomicU64>,
}

impl SetClock {
    /// Makes the clock read `since_epoch` after the epoch (nanoseconds past year 2554 saturate).
    pub fn set(&self, since_epoch: Duration) {
        let nanos = u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX);
        self.since_epoch.store(nanos, Ordering::Relaxed);
    }
}

impl HostWallClock for SetClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.since_epoch.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_copy_reads_what_any_copy_set() {
        let clock = SetClock::default();
        let copy = clock.clone();
        clock.set(Duration::from_secs(1_700_000_000));
        assert_eq!(copy.now(), Duration::from_secs(1_700_000_000));
    }

    #[tokio::test]
    async fn the_host_clock_reads_the_frozen_instant_only_inside_the_call() {
        let at = Duration::from_secs(1_000_000_000);
        let inside = frozen_at(at, async {
            tokio::task::yield_now().await;
            HostClock.now()
        })
        .await;
        assert_eq!(inside, at);
        assert!(HostClock.now() > Duration::from_secs(1_700_000_000));
    }
}
