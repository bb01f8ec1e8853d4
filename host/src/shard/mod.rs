//! Sharding a plugin's objects across replicas: membership by one Lease per replica
//! ([`members`]) and assignment of each object to one live member by rendezvous hashing
//! ([`ring`]), so that the work and the cache of each replica shrink with their number; objects
//! move between members by a drain handshake ([`assign`]).
//!
//! Invariant: every replica computes an object's owner from the same member list the same way,
//! and a member counts as gone only once its Lease has expired by the reader's clock or been
//! released.

mod assign;
mod members;
mod ring;

pub use assign::{Move, ShardLabels, decide};
pub use members::{GROUP_LABEL, Members, member_id, member_lease};
pub use ring::Ring;
