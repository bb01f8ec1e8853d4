//! Offline tests of plugins: the real component in the real runtime — the same limits, boundary
//! and permission checks as in a cluster — against an in-memory cache and apiserver
//! ([`MemoryHost`]), driven by fixtures ([`Fixture`]): the objects the cache holds, the request,
//! and the writes and outcome expected. `wasmop test` runs a plugin against fixture files and
//! prints, for each, the difference between the writes expected and those sent. `wasmop run
//! --record` writes real reconciles as fixtures ([`record`]), for replaying against a new version.
//!
//! Invariant: a fixture runs on a host holding exactly its objects; nothing one fixture writes is
//! seen by the next.

mod check;
mod diff;
mod fixture;
mod memory;
pub mod record;

pub use check::{Checked, Tester, TestingError};
pub use fixture::{Expected, Fixture, FixtureError, FixtureWrite, Request, fixture_files};
pub use memory::{MemoryHost, RecordedWrite};
pub use record::Recorder;
