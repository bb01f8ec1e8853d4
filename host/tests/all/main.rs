//! The host's integration tests, in one binary: one link of wasmtime, kube and the host for all of
//! them, one module per area. Every module that starts a control plane starts its own
//! (`wasmop_envtest::ControlPlane`): the tests here change cluster-wide state (CRDs, webhook
//! configurations, Leases, RBAC, a paused apiserver), so none shares one. Run one area with
//! `cargo test -p wasmop --test all <module>::`.

mod common;

// Without a cluster: the runtime against the in-memory host, the CLI, the chart, the layering.
mod bad_guests;
mod book;
mod chart;
mod dashboard;
mod handlers;
mod loading;
mod module_graph;
mod plugins;
mod scaffold;
mod suspension;
mod testing;
mod webhooks;

// The host's parts against the real control plane.
mod cache;
mod client;
mod controllers;
mod leader;
mod sharding;

// The `wasmop` binary against the real control plane.
mod admission;
mod config;
mod deploy;
mod first_reconciler;
mod hot_loading;
mod identities;
mod in_cluster;
mod metrics;
mod reconcile_logs;
mod secure_metrics;
mod shutdown;
mod stuck_kinds;

// Several replicas, and what an operator meets on its worst day.
mod failover;
mod faults;
mod fencing;
mod sharded;

// Where plugins come from.
mod modules;
mod oci;
mod plugin_dir;
mod wasm_reconcilers;

// The sandbox and the tenant model attacked (the plugin author's attacks, which measure this
// process's memory, run alone in their own binary: `host/tests/hostile`).
mod hostile_access;
mod hostile_capabilities;
mod hostile_parsing;
mod hostile_sources;
mod hostile_tenants;

// In real pods on the test node: root, the node and the release image (`make test-cluster`).
#[cfg(feature = "cluster-tests")]
mod pods;
#[cfg(feature = "cluster-tests")]
mod pods_chart;
#[cfg(feature = "cluster-tests")]
mod pods_registry;
