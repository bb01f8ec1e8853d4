//! The operator's reserve: the part of a bounded resource (the instance pool, the guest memory
//! budget) that tenants' plugins never claim, so the operator's own plugins always load and
//! upgrade however many tenants fill the rest. An upgrade claims its new version's share with
//! the old version's counted as given back, because the old one goes once the new one took over.

/// Who claims a share: a tenant or the operator, and what of it they already hold in the version
/// the new one replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claimant {
    /// Whether a tenant claims it.
    pub(crate) tenant: bool,
    /// The share of the version it replaces, counted as given back.
    pub(crate) replaces: usize,
}

impl Claimant {
    /// The operator, claiming anew.
    pub(crate) const OPERATOR: Claimant = Claimant {
        tenant: false,
        replaces: 0,
    };
    /// A tenant, claiming anew.
    pub(crate) const TENANT: Claimant = Claimant {
        tenant: true,
        replaces: 0,
    };

    /// The same claimant, replacing a version holding `replaces`.
    pub(crate) fn replacing(self, replaces: usize) -> Claimant {
        Claimant { replaces, ..self }
    }
}

/// What is claimed of a resource, in all and by tenants' plugins.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claimed {
    /// By every plugin.
    pub(crate) all: usize,
    /// By tenants' plugins.
    pub(crate) tenants: usize,
}

impl Claimed {
    /// Counts `amount` more, claimed by a tenant or not.
    pub(crate) fn add(&mut self, amount: usize, tenant: bool) {
        self.all += amount;
        if tenant {
            self.tenants += amount;
        }
    }

    /// Counts `amount` given back.
    pub(crate) fn sub(&mut self, amount: usize, tenant: bool) {
        self.all -= amount;
        if tenant {
            self.tenants -= amount;
        }
    }

    /// Both claims together.
    pub(crate) fn plus(self, other: Claimed) -> Claimed {
        Claimed {
            all: self.all + other.all,
            tenants: self.tenants + other.tenants,
        }
    }
}

/// A resource of `whole`, of which tenants together may claim all but `reserve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bound {
    /// The resource.
    pub(crate) whole: usize,
    /// What only the operator's plugins may claim.
    pub(crate) reserve: usize,
}

impl Bound {
    /// A resource of `whole` keeping `reserve` (at most `whole`) for the operator.
    pub(crate) fn new(whole: usize, reserve: usize) -> Self {
        Bound {
            whole,
            reserve: reserve.min(whole),
        }
    }

    /// What tenants may claim together.
    pub(crate) fn tenants(&self) -> usize {
        self.whole - self.reserve
    }

    /// What `who` may still claim beside `claimed`.
    pub(crate) fn left(&self, claimed: Claimed, who: Claimant) -> usize {
        let left =
            |held: usize, limit: usize| limit.saturating_sub(held.saturating_sub(who.replaces));
        let all = left(claimed.all, self.whole);
        match who.tenant {
            true => all.min(left(claimed.tenants, self.tenants())),
            false => all,
        }
    }

    /// Whether `who` may claim `more` beside `claimed`.
    pub(crate) fn admits(&self, claimed: Claimed, more: usize, who: Claimant) -> bool {
        more <= self.left(claimed, who)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TENANT: Claimant = Claimant::TENANT;
    const OPERATOR: Claimant = Claimant::OPERATOR;

    #[test]
    fn tenants_never_claim_the_reserve_and_the_operator_claims_all_that_is_left() {
        let bound = Bound::new(100, 30);
        let mut claimed = Claimed::default();
        claimed.add(60, true);
        assert_eq!(bound.left(claimed, TENANT), 10);
        assert!(!bound.admits(claimed, 11, TENANT));
        assert_eq!(bound.left(claimed, OPERATOR), 40);
        claimed.add(40, false);
        assert_eq!(
            (bound.left(claimed, OPERATOR), bound.left(claimed, TENANT)),
            (0, 0)
        );
        claimed.sub(40, false);
        claimed.sub(60, true);
        assert_eq!(claimed, Claimed::default());
    }

    #[test]
    fn an_upgrade_counts_its_old_share_as_given_back_even_when_all_is_claimed() {
        let bound = Bound::new(100, 30);
        let mut claimed = Claimed::default();
        claimed.add(70, true);
        claimed.add(30, false);
        let upgrade = OPERATOR.replacing(30);
        assert!(bound.admits(claimed, 30, upgrade));
        assert!(!bound.admits(claimed, 31, upgrade));
        let tenant_upgrade = TENANT.replacing(20);
        assert_eq!(bound.left(claimed, tenant_upgrade), 20);
        claimed.add(30, false);
        assert_eq!(
            bound.left(claimed, OPERATOR),
            0,
            "overcommitted while it drains"
        );
    }

    #[test]
    fn a_reserve_past_the_whole_leaves_tenants_nothing() {
        let bound = Bound::new(10, 50);
        assert_eq!((bound.reserve, bound.tenants()), (10, 0));
        assert_eq!(bound.left(Claimed::default(), TENANT), 0);
    }
}
