//! Moving an object between members without two reconciling it at once: the leader's decision
//! for one object, from the member its shard label names, whether that member has been asked to
//! let it go (the drain label), and the live members.
//!
//! An object with no owner, or whose owner is gone (its Lease expired by the leader's clock, or
//! released), is labelled with its member at once: a member that cannot renew its Lease stops
//! reconciling before the Lease expires, as a leader does. An object whose live owner is no
//! longer its member is first drained: the owner, seeing the drain label, finishes what it has in
//! flight for the object, stops watching it and removes both labels; only then does the leader
//! assign it again.

use crate::shard::ring::Ring;

/// The labels sharding keeps on the objects of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardLabels {
    /// `shard.wasmop.dev/<group>`: the member that owns the object.
    pub owner: String,
    /// `drain.shard.wasmop.dev/<group>`: the owner is asked to let the object go.
    pub drain: String,
}

impl ShardLabels {
    /// The labels of `group` (the leader election's Lease name).
    pub fn new(group: &str) -> Self {
        ShardLabels {
            owner: format!("shard.wasmop.dev/{group}"),
            drain: format!("drain.shard.wasmop.dev/{group}"),
        }
    }
}

/// What the leader does with one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    /// Nothing: it is with its member, its owner is letting it go, or no member is live.
    Stay,
    /// Label it with this member.
    Assign(String),
    /// Ask its live owner to let it go.
    Drain,
}

/// The leader's move for the object `key`, owned by `owner` (its shard label), `draining` if it
/// carries the drain label.
pub fn decide(key: &str, owner: Option<&str>, draining: bool, ring: &Ring) -> Move {
    let Some(member) = ring.owner(key) else {
        return Move::Stay;
    };
    match owner {
        Some(owner) if owner == member || (draining && ring.contains(owner)) => Move::Stay,
        Some(owner) if ring.contains(owner) => Move::Drain,
        _ => Move::Assign(member.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(members: &[&str]) -> Ring {
        Ring::new(members.iter().map(|m| m.to_string()))
    }

    /// A key `ring` gives to `member`.
    fn key_of(ring: &Ring, member: &str) -> String {
        (0..)
            .map(|i| format!("default/app-{i}"))
            .find(|key| ring.owner(key) == Some(member))
            .unwrap()
    }

    #[test]
    fn a_new_object_or_one_whose_owner_is_gone_is_assigned_at_once() {
        let live = ring(&["a", "b"]);
        let key = key_of(&live, "b");
        assert_eq!(decide(&key, None, false, &live), Move::Assign("b".into()));
        assert_eq!(
            decide(&key, Some("dead"), false, &live),
            Move::Assign("b".into())
        );
        assert_eq!(
            decide(&key, Some("dead"), true, &live),
            Move::Assign("b".into())
        );
        assert_eq!(decide(&key, Some("b"), false, &live), Move::Stay);
    }

    #[test]
    fn a_live_owner_is_drained_first_and_the_object_waits_for_it() {
        let live = ring(&["a", "b"]);
        let key = key_of(&live, "b");
        assert_eq!(decide(&key, Some("a"), false, &live), Move::Drain);
        assert_eq!(decide(&key, Some("a"), true, &live), Move::Stay);
        // The owner let it go (both labels removed): now it is assigned.
        assert_eq!(decide(&key, None, false, &live), Move::Assign("b".into()));
    }

    #[test]
    fn with_no_live_member_nothing_moves() {
        let none = Ring::default();
        assert_eq!(decide("default/x", None, false, &none), Move::Stay);
        assert_eq!(decide("default/x", Some("a"), false, &none), Move::Stay);
    }
}
