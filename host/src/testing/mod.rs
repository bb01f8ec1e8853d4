//! Offline tests of plugins: the real component in the real runtime — the same limits, boundary
//! and permission checks as in a cluster — against an in-memory cache and apiserver
//! ([`MemoryHost`]), driven by fixtures ([`Fixture`]): the objects the cache holds, the request,
//! and the outcome, writes and events expected. `wasmop test` runs a plugin against fixture files
//! and prints, for each, the difference between what was expected and what was done; `--accept`
//! edits the expectations that differ in the file's own text ([`accept()`]). `wasmop run --record`
//! writes real reconciles as fixtures ([`record`]), for replaying against a new version.
//!
//! Invariant: a fixture runs on a host holding exactly its objects; nothing one fixture writes is
//! seen by the next.
//!
//! Imports: the contract, `config` and `runtime`; nothing of the running host imports `testing` —
//! only the binary's `test` subcommand and `--record` install it.

mod accept;
mod check;
mod diff;
mod explain;
mod fixture;
mod memory;
mod outcome;
pub mod record;
mod wrap;

pub use accept::{AcceptError, accept};
pub use check::{Checked, Tester, TestingError};
pub use fixture::{
    Expected, Fixture, FixtureError, FixtureEvent, FixtureEventType, FixtureWrite, Regarding,
    Request, fixture_files,
};
pub use memory::{MemoryHost, RecordedWrite};
pub use record::Recorder;
