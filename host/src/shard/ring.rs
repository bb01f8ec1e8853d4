//! Which replica owns which object: rendezvous (highest-random-weight) hashing over the live
//! members. Every replica computes the same owner from the same member list, whatever order it
//! lists them in; when a member joins or leaves, only the objects it gains or held change owner,
//! about `1 / members` of them. The weight is a prefix of SHA-256, so replicas of different
//! builds (a rolling update) agree.

use sha2::{Digest, Sha256};

/// The live members, ready to assign keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ring {
    members: Vec<String>,
}

impl Ring {
    /// A ring of `members` (duplicates count once).
    pub fn new(members: impl IntoIterator<Item = String>) -> Self {
        let mut members: Vec<String> = members.into_iter().collect();
        members.sort();
        members.dedup();
        Ring { members }
    }

    /// The members, sorted.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// Whether `member` is live.
    pub fn contains(&self, member: &str) -> bool {
        self.members
            .binary_search_by(|m| m.as_str().cmp(member))
            .is_ok()
    }

    /// The member that owns `key`; `None` when there are no members.
    pub fn owner(&self, key: &str) -> Option<&str> {
        self.members
            .iter()
            .max_by_key(|member| (weight(member, key), member.as_str()))
            .map(String::as_str)
    }
}

/// The weight of `member` for `key`: the first eight bytes of SHA-256 over both, length-prefixed
/// so that no two pairs hash the same bytes.
fn weight(member: &str, key: &str) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update((member.len() as u64).to_be_bytes());
    hasher.update(member.as_bytes());
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    u64::from_be_bytes(digest[..8].try_into().expect("eight bytes"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn ring(members: &[&str]) -> Ring {
        Ring::new(members.iter().map(|m| m.to_string()))
    }

    fn keys() -> impl Iterator<Item = String> {
        (0..3000).map(|i| format!("default/webapp-{i}"))
    }

    #[test]
    fn every_key_has_one_owner_whatever_order_the_members_are_listed_in() {
        let one = ring(&["a", "b", "c"]);
        let other = ring(&["c", "a", "b", "a"]);
        assert_eq!(one, other);
        for key in keys() {
            assert_eq!(one.owner(&key), other.owner(&key));
        }
        assert_eq!(Ring::default().owner("default/x"), None);
    }

    #[test]
    fn keys_spread_evenly_over_three_members() {
        let ring = ring(&["replica-0", "replica-1", "replica-2"]);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for key in keys() {
            *counts.entry(ring.owner(&key).unwrap()).or_default() += 1;
        }
        assert_eq!(counts.len(), 3);
        for (member, count) in counts {
            assert!(
                (850..=1150).contains(&count),
                "{member} owns {count} of 3000"
            );
        }
    }

    #[test]
    fn a_member_leaving_moves_only_its_own_keys_and_joining_takes_only_new_ones() {
        let three = ring(&["a", "b", "c"]);
        let two = ring(&["a", "c"]);
        for key in keys() {
            let before = three.owner(&key).unwrap();
            let after = two.owner(&key).unwrap();
            assert!(
                before == after || before == "b",
                "{key} moved from {before} to {after}"
            );
        }
        let four = ring(&["a", "b", "c", "d"]);
        let moved = keys()
            .filter(|key| {
                let after = four.owner(key).unwrap();
                assert!(after == three.owner(key).unwrap() || after == "d");
                after == "d"
            })
            .count();
        assert!(
            (600..=900).contains(&moved),
            "{moved} of 3000 moved to the new member"
        );
    }
}
