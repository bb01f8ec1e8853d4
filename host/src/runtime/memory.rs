//! The guest memory budget (`--guest-memory-budget`): the linear memory all instances of all
//! plugins may hold together, shared fairly. Each loaded plugin reserves a share of it (its memory
//! limit: enough for one instance at its cap) and holds at most its share plus what no plugin
//! has reserved, borrowed first come first served.
//!
//! Invariants: the shares never add up past the budget (a plugin whose share does not fit is
//! refused at load); the memory all instances hold never exceeds the budget; whatever others
//! hold or borrow, a plugin can always grow its instances to its own share, so no plugin can
//! starve another of memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A guest asked for memory the guests together may no longer have; the trap carries this.
#[derive(Debug, thiserror::Error)]
#[error(
    "guest asked for {asked} more bytes of linear memory and tables, but its plugin's instances hold {held} bytes, over its share of {share} bytes, and the rest of the host's guest memory budget of {budget} bytes is reserved or borrowed by other plugins (--guest-memory-budget)"
)]
pub struct GuestMemoryExhausted {
    /// The growth it asked for.
    pub asked: usize,
    /// What the plugin's instances held at that moment.
    pub held: usize,
    /// The plugin's reserved share.
    pub share: usize,
    /// The budget.
    pub budget: usize,
}

/// What the budget's holders hold, changed under one lock.
#[derive(Debug, Default)]
struct Totals {
    /// Linear memory all instances hold.
    held: usize,
    /// The plugins' shares together.
    reserved: usize,
    /// What instances hold beyond their plugin's share, together.
    borrowed: usize,
}

/// The linear memory all guest instances of a runtime hold together, and the most they may.
#[derive(Debug)]
pub(crate) struct GuestMemory {
    budget: usize,
    totals: Mutex<Totals>,
}

impl GuestMemory {
    /// A budget of `budget` bytes for all guests together; unbounded when `None`.
    pub(crate) fn new(budget: Option<usize>) -> Self {
        GuestMemory {
            budget: budget.unwrap_or(usize::MAX),
            totals: Mutex::default(),
        }
    }

    fn totals(&self) -> std::sync::MutexGuard<'_, Totals> {
        self.totals.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The bytes of linear memory and tables all live instances hold.
    pub(crate) fn held(&self) -> usize {
        self.totals().held
    }

    /// The budget, what the shares reserve and what instances hold, read together.
    pub(crate) fn totals_now(&self) -> (usize, usize, usize) {
        let totals = self.totals();
        (self.budget, totals.reserved, totals.held)
    }

    /// The budget no plugin has reserved.
    pub(crate) fn unreserved(&self) -> usize {
        self.budget - self.totals().reserved
    }

    /// The budget in bytes (`usize::MAX` when unbounded).
    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// Reserves `bytes` for one plugin, if the shares still fit the budget.
    pub(crate) fn reserve(self: &Arc<Self>, bytes: usize) -> Option<MemoryShare> {
        let mut totals = self.totals();
        let reserved = totals.reserved.checked_add(bytes)?;
        if reserved > self.budget {
            return None;
        }
        totals.reserved = reserved;
        Some(MemoryShare {
            memory: self.clone(),
            reserved: bytes,
            held: AtomicUsize::new(0),
        })
    }
}

/// One plugin's share of the budget and what its instances hold; dropped with its last instance.
#[derive(Debug)]
pub(crate) struct MemoryShare {
    memory: Arc<GuestMemory>,
    reserved: usize,
    /// What the plugin's instances hold; written only under the budget's lock.
    held: AtomicUsize,
}

impl MemoryShare {
    /// A share of nothing (a plugin describing itself, before it reserves one): it may only
    /// borrow.
    pub(crate) fn none(memory: &Arc<GuestMemory>) -> Self {
        memory.reserve(0).expect("an empty share always fits")
    }

    /// Takes `asked` more bytes for one of the plugin's instances: from its share, then from the
    /// budget no plugin reserved.
    pub(crate) fn take(&self, asked: usize) -> Result<(), GuestMemoryExhausted> {
        let budget = self.memory.budget;
        let mut totals = self.memory.totals();
        let held = self.held.load(Ordering::Acquire);
        let exhausted = || GuestMemoryExhausted {
            asked,
            held,
            share: self.reserved,
            budget,
        };
        let wanted = held.checked_add(asked).ok_or_else(exhausted)?;
        let more = self.borrowing(wanted) - self.borrowing(held);
        let free = budget - totals.reserved - totals.borrowed;
        if more > free {
            return Err(exhausted());
        }
        totals.borrowed += more;
        totals.held += asked;
        self.held.store(wanted, Ordering::Release);
        Ok(())
    }

    /// Gives back `bytes` an instance held.
    pub(crate) fn give(&self, bytes: usize) {
        let mut totals = self.memory.totals();
        let held = self.held.load(Ordering::Acquire);
        let left = held.saturating_sub(bytes);
        totals.borrowed -= self.borrowing(held) - self.borrowing(left);
        totals.held -= held - left;
        self.held.store(left, Ordering::Release);
    }

    /// What holding `held` bytes borrows beyond the share.
    fn borrowing(&self, held: usize) -> usize {
        held.saturating_sub(self.reserved)
    }
}

impl Drop for MemoryShare {
    fn drop(&mut self) {
        self.memory.totals().reserved -= self.reserved;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_fit_the_budget_or_are_refused_and_come_back_when_dropped() {
        let memory = Arc::new(GuestMemory::new(Some(100)));
        let first = memory.reserve(60).unwrap();
        assert!(memory.reserve(50).is_none());
        let second = memory.reserve(40).unwrap();
        assert_eq!(memory.unreserved(), 0);
        drop(first);
        assert_eq!(memory.unreserved(), 60);
        drop(second);
        assert_eq!(memory.unreserved(), 100);
    }

    #[test]
    fn a_greedy_plugin_borrows_only_the_unreserved_and_never_anothers_share() {
        let memory = Arc::new(GuestMemory::new(Some(100)));
        let greedy = memory.reserve(30).unwrap();
        let modest = memory.reserve(40).unwrap();
        greedy.take(30).unwrap();
        greedy.take(30).unwrap();
        let refused = greedy.take(1).unwrap_err();
        assert_eq!((refused.held, refused.share, refused.budget), (60, 30, 100));
        modest.take(40).unwrap();
        assert!(modest.take(1).is_err(), "the unreserved part is borrowed");
        assert_eq!(memory.held(), 100);
        greedy.give(30);
        modest.take(30).unwrap();
        assert_eq!(memory.held(), 100);
        modest.give(70);
        greedy.give(30);
        assert_eq!(memory.held(), 0);
        let fresh = MemoryShare::none(&memory);
        fresh.take(30).unwrap();
        assert!(fresh.take(1).is_err());
    }
}
