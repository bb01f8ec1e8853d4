//! Sharding a plugin's objects across replicas: membership by one Lease per replica
//! ([`members`]) and assignment of each object to one live member by rendezvous hashing
//! ([`ring`]), so that the work and the cache of each replica shrink with their number; objects
//! move between members by a drain handshake ([`assign`]). The leader's [`Sharder`] labels each
//! plugin's primary objects with their member and the objects they control with their
//! primary's, watching only the metadata it needs ([`objects`]), so that each replica can watch
//! only its own label.
//!
//! Invariant: every replica computes an object's owner from the same member list the same way,
//! and a member counts as gone only once its Lease has expired by the reader's clock or been
//! released.
//!
//! Imports: `cache`, `leader` and `metrics`; never `controller` or `plugins`, which build on it.

mod assign;
mod members;
mod objects;
mod owned;
mod ring;
mod sharder;

pub use assign::{Move, ShardLabels, decide};
pub use members::{GROUP_LABEL, Members, member_id, member_lease};
pub use owned::label_controlled;
pub use ring::Ring;
pub use sharder::{ShardedKinds, Sharder};
