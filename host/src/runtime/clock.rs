//! The wall clock a guest reads. In a cluster it is the host's; an offline test sets it, so a
//! reconcile that stamps a time (a condition's `lastTransitionTime`) writes the same bytes on
//! every run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use wasmtime_wasi::HostWallClock;

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
}
