//! The bindings `wit-bindgen` generates from the `wasmop:reconciler` WIT package, unchanged.
//!
//! Everything else in this crate is built on these. Use them directly to make a call the typed
//! layer does not offer, e.g. `raw::wasmop::reconciler::client::create` with arbitrary text.
#![allow(unsafe_code, missing_docs, clippy::all)]

wit_bindgen::generate!({
    world: "webhook-reconciler",
    path: "../../wit",
    additional_derives: [PartialEq, Eq],
    pub_export_macro: true,
    export_macro_name: "export",
    default_bindings_module: "wasmop_guest::raw",
    generate_all,
});
