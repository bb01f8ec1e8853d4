//! `webapp` version 0.2.0: the example plugin's unchanged source under another package version,
//! so hot-loading tests can upgrade a running `webapp` and see every owned object re-stamped
//! with `example.wasmop.dev/applied-by: webapp/0.2.0`.

#[path = "../../../../plugins/webapp/rust/src/lib.rs"]
pub mod webapp;
