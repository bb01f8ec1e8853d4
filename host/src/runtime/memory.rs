//! The guest memory budget (`--guest-memory-budget`): the linear memory all instances of all
//! plugins may hold together, shared fairly. Each loaded plugin reserves a share of it (its memory
//! limit: enough for one instance at its cap) and holds at most its share plus what no plugin
//! has reserved or borrowed, borrowed first come first served. Tenants' plugins reserve and
//! borrow only what leaves the operator's reserve (`--operator-reserved-memory`, [`Bound`]).
//!
//! Invariants: the shares and what is borrowed never add up past the budget (a plugin whose share
//! does not fit is refused at load; an upgrade counts the share of the version it replaces as
//! given back, so both versions may hold past it while the old one drains); tenants' shares and
//! borrowing never add up past the budget less the reserve; whatever others hold or borrow, a
//! plugin can always grow its instances to its own share, so no plugin can starve another of
//! memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::reserve::{Bound, Claimant, Claimed};

/// A guest asked for memory the guests together may no longer have; the trap carries this.
#[derive(Debug, thiserror::Error)]
#[error(
    "guest asked for {asked} more bytes of linear memory and tables, but its plugin's instances hold {held} bytes, over its share of {share} bytes, and the rest of the host's guest memory budget of {budget} bytes is reserved or borrowed by other plugins or kept for the operator's plugins (--guest-memory-budget, --operator-reserved-memory)"
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
    reserved: Claimed,
    /// What instances hold beyond their plugin's share, together.
    borrowed: Claimed,
}

impl Totals {
    /// What shares and borrowing take of the budget.
    fn committed(&self) -> Claimed {
        self.reserved.plus(self.borrowed)
    }
}

/// The linear memory all guest instances of a runtime hold together, and the most they may.
#[derive(Debug)]
pub(crate) struct GuestMemory {
    bound: Bound,
    totals: Mutex<Totals>,
}

impl GuestMemory {
    /// A budget of `budget` bytes for all guests together (unbounded when `None`), of which
    /// tenants' plugins may not take `reserve`.
    pub(crate) fn new(budget: Option<usize>, reserve: usize) -> Self {
        GuestMemory {
            bound: Bound::new(budget.unwrap_or(usize::MAX), reserve),
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

    /// The budget, what the shares reserve (all and tenants') and what instances hold, read
    /// together.
    pub(crate) fn totals_now(&self) -> (usize, Claimed, usize) {
        let totals = self.totals();
        (self.bound.whole, totals.reserved, totals.held)
    }

    /// What `who` could still reserve.
    pub(crate) fn unreserved(&self, who: Claimant) -> usize {
        self.bound.left(self.totals().committed(), who)
    }

    /// The budget in bytes (`usize::MAX` when unbounded), and what only the operator's plugins
    /// may take of it.
    pub(crate) fn bound(&self) -> Bound {
        self.bound
    }

    /// Reserves `bytes` for one plugin, if its share fits what `who` may still take.
    pub(crate) fn reserve(self: &Arc<Self>, bytes: usize, who: Claimant) -> Option<MemoryShare> {
        let mut totals = self.totals();
        if !self.bound.admits(totals.committed(), bytes, who) {
            return None;
        }
        totals.reserved.add(bytes, who.tenant);
        Some(MemoryShare {
            memory: self.clone(),
            reserved: bytes,
            tenant: who.tenant,
            held: AtomicUsize::new(0),
        })
    }
}

/// One plugin's share of the budget and what its instances hold; dropped with its last instance.
#[derive(Debug)]
pub(crate) struct MemoryShare {
    memory: Arc<GuestMemory>,
    reserved: usize,
    tenant: bool,
    /// What the plugin's instances hold, and what the host holds for them ([`Held`]); written
    /// only under the budget's lock.
    held: AtomicUsize,
}

impl MemoryShare {
    /// A share of nothing for the operator (`wasmop rbac` reading what a plugin declares): it
    /// may only borrow.
    pub(crate) fn none(memory: &Arc<GuestMemory>) -> Self {
        memory
            .reserve(0, Claimant::OPERATOR)
            .expect("an empty share always fits")
    }

    /// The bytes reserved for it.
    pub(crate) fn reserved(&self) -> usize {
        self.reserved
    }

    /// Takes `asked` more bytes for one of the plugin's instances: from its share, then from the
    /// budget no plugin reserved or borrowed (a tenant's: outside the operator's reserve).
    pub(crate) fn take(&self, asked: usize) -> Result<(), GuestMemoryExhausted> {
        let memory = &self.memory;
        let mut totals = memory.totals();
        let held = self.held.load(Ordering::Acquire);
        let exhausted = || GuestMemoryExhausted {
            asked,
            held,
            share: self.reserved,
            budget: memory.bound.whole,
        };
        let wanted = held.checked_add(asked).ok_or_else(exhausted)?;
        let more = self.borrowing(wanted) - self.borrowing(held);
        if more > 0
            && !memory
                .bound
                .admits(totals.committed(), more, self.claimant())
        {
            return Err(exhausted());
        }
        totals.borrowed.add(more, self.tenant);
        totals.held += asked;
        self.held.store(wanted, Ordering::Release);
        Ok(())
    }

    /// An empty hold on the share, for what the host reads on one of the plugin's instances'
    /// behalf (a transport answer) before handing it over: it grows as [`take`](Self::take)
    /// would, and what it holds is given back when it is dropped.
    pub(crate) fn holding(self: &Arc<Self>) -> Held {
        Held {
            share: self.clone(),
            bytes: AtomicUsize::new(0),
        }
    }

    /// Gives back `bytes` an instance held.
    pub(crate) fn give(&self, bytes: usize) {
        let mut totals = self.memory.totals();
        let held = self.held.load(Ordering::Acquire);
        let left = held.saturating_sub(bytes);
        let returned = self.borrowing(held) - self.borrowing(left);
        totals.borrowed.sub(returned, self.tenant);
        totals.held -= held - left;
        self.held.store(left, Ordering::Release);
    }

    /// Who claims the share: a tenant or the operator.
    fn claimant(&self) -> Claimant {
        Claimant {
            tenant: self.tenant,
            ..Claimant::OPERATOR
        }
    }

    /// What holding `held` bytes borrows beyond the share.
    fn borrowing(&self, held: usize) -> usize {
        held.saturating_sub(self.reserved)
    }
}

/// Bytes of a plugin's share the host holds for reading on its behalf; given back when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    share: Arc<MemoryShare>,
    bytes: AtomicUsize,
}

impl Held {
    /// Takes `more` bytes of the share into the hold.
    pub(crate) fn grow(&self, more: usize) -> Result<(), GuestMemoryExhausted> {
        self.share.take(more)?;
        self.bytes.fetch_add(more, Ordering::AcqRel);
        Ok(())
    }

    /// The bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.share.give(self.bytes());
    }
}

impl Drop for MemoryShare {
    fn drop(&mut self) {
        self.memory
            .totals()
            .reserved
            .sub(self.reserved, self.tenant);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPERATOR: Claimant = Claimant::OPERATOR;
    const TENANT: Claimant = Claimant::TENANT;

    #[test]
    fn the_host_holds_for_an_answer_only_what_the_plugin_could_take_and_gives_it_back() {
        let memory = Arc::new(GuestMemory::new(Some(100), 30));
        let tenant = Arc::new(memory.reserve(20, TENANT).unwrap());
        tenant.take(15).unwrap();
        let held = tenant.holding();
        held.grow(40)
            .expect("5 of its share and 35 of the 50 tenants may borrow");
        held.grow(15).expect("the rest tenants may borrow");
        assert!(
            held.grow(1).is_err(),
            "the operator's reserve is not a tenant's to hold"
        );
        assert_eq!(held.bytes(), 55);
        assert!(
            tenant.take(1).is_err(),
            "what is held counts as the plugin's"
        );
        let operator = memory.reserve(0, OPERATOR).unwrap();
        operator
            .take(30)
            .expect("the operator's reserve is untouched");
        drop(held);
        tenant.take(5).expect("the held bytes came back");
        assert_eq!(memory.held(), 50);
    }

    #[test]
    fn shares_fit_the_budget_or_are_refused_and_come_back_when_dropped() {
        let memory = Arc::new(GuestMemory::new(Some(100), 0));
        let first = memory.reserve(60, OPERATOR).unwrap();
        assert!(memory.reserve(50, OPERATOR).is_none());
        let second = memory.reserve(40, OPERATOR).unwrap();
        assert_eq!(memory.unreserved(OPERATOR), 0);
        drop(first);
        assert_eq!(memory.unreserved(OPERATOR), 60);
        drop(second);
        assert_eq!(memory.unreserved(OPERATOR), 100);
    }

    #[test]
    fn a_greedy_plugin_borrows_only_the_unreserved_and_never_anothers_share() {
        let memory = Arc::new(GuestMemory::new(Some(100), 0));
        let greedy = memory.reserve(30, OPERATOR).unwrap();
        let modest = memory.reserve(40, OPERATOR).unwrap();
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

    #[test]
    fn a_share_reserved_after_others_borrowed_never_lets_anyone_borrow_past_the_budget() {
        let memory = Arc::new(GuestMemory::new(Some(100), 0));
        let borrower = memory.reserve(30, OPERATOR).unwrap();
        borrower.take(100).unwrap();
        assert!(
            memory.reserve(70, OPERATOR).is_none(),
            "the borrowed 70 is taken"
        );
        borrower.give(70);
        let late = memory.reserve(70, OPERATOR).unwrap();
        late.take(70).unwrap();
        assert!(borrower.take(1).is_err() && late.take(1).is_err());
        assert_eq!(memory.held(), 100);
    }

    #[test]
    fn tenants_reserve_and_borrow_only_outside_the_operators_reserve() {
        let memory = Arc::new(GuestMemory::new(Some(100), 40));
        let tenant = memory.reserve(50, TENANT).unwrap();
        assert!(memory.reserve(11, TENANT).is_none());
        tenant.take(60).unwrap();
        assert!(
            tenant.take(1).is_err(),
            "the reserve is not lent to tenants"
        );
        assert_eq!(memory.unreserved(TENANT), 0);
        let describing = memory.reserve(0, TENANT).unwrap();
        assert!(describing.take(1).is_err());
        let operator = memory.reserve(40, OPERATOR).unwrap();
        let upgrade = OPERATOR.replacing(operator.reserved());
        let new_version = memory
            .reserve(40, upgrade)
            .expect("the old share counts as given back");
        drop(operator);
        assert_eq!(memory.unreserved(OPERATOR), 0);
        drop(new_version);
        tenant.give(60);
        drop(tenant);
        assert_eq!(memory.unreserved(TENANT), 60);
    }
}
