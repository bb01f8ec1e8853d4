//! Offline tests of plugins: the real component in the real runtime — the same limits, boundary
//! and permission checks as in a cluster — against an in-memory cache and apiserver
//! ([`MemoryHost`]), driven by fixtures ([`crate::fixture`]): the objects the cache holds, the request,
//! and the outcome, writes and events expected — or an admission request or a conversion and the
//! webhook's answer expected. `wasmop test` runs a plugin against fixture files
//! and prints, for each, the difference between what was expected and what was done; `--accept`
//! edits the expectations that differ in the file's own text ([`accept()`]). `wasmop test --replay`
//! runs the fixtures `wasmop run --record` wrote ([`crate::record`]) against a new version.
//!
//! Invariant: a fixture runs on a host holding exactly its objects; nothing one fixture writes is
//! seen by the next.
//!
//! Imports: the contract, `config`, `fixture`, `record`, `runtime` and `webhook` (whose reviews
//! webhook fixtures are answered with); nothing imports `testing`
//! but the binary's `test` subcommand.

mod accept;
mod check;
mod diff;
mod explain;
mod memory;
mod review;

pub use accept::{AcceptError, accept};
pub use check::{Checked, Tester, TestingError};
pub use memory::MemoryHost;
