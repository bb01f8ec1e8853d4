//! `webapp` version 0.2.0: the example plugin's source under another package version, so
//! hot-loading tests can upgrade a running `webapp` and see every owned object re-stamped with
//! `example.wasmop.dev/applied-by: webapp/0.2.0`; its one change of behaviour (the `roomier`
//! feature) is a validating webhook that admits up to 100 replicas instead of 50.

#[path = "../../../../plugins/webapp/rust/src/lib.rs"]
pub mod webapp;
