//! A real Kubernetes control plane for tests: `kube-apiserver` and `etcd` on loopback.
//!
//! This is wasmop's envtest. [`ControlPlane::start`] builds (once per machine) or reuses the pinned
//! binaries, starts etcd and kube-apiserver on free loopback ports with freshly generated
//! certificates, an admin token, service-account signing keys and the RBAC authorizer, waits for
//! `/readyz`, and writes a kubeconfig. Dropping it stops both processes and removes its directory.
//! kube-apiserver keeps an audit log of every request, read back with [`ControlPlane::audit`] or,
//! only what is new each time, with an [`AuditLog`].
//!
//! Invariant: no process outlives its owner. Each server runs under a small supervisor whose
//! stdin is a pipe from the owning process; when that pipe closes — on drop, on panic, or because
//! the owner was killed — the supervisor stops the server and removes its files. Tests run the
//! operators they check under a [`Supervised`] too.
//!
//! [`ControlPlane::start_with_node`] adds a node: kube-scheduler, kube-controller-manager,
//! containerd and a kubelet, so Deployments make pods and pods run, on a bridge of this machine.
//!
//! Tests share one control plane per test binary through [`shared`] (or one per group of tests
//! through [`shared_by`]) and isolate themselves with [`ControlPlane::create_namespace`]; a test
//! that must restart the apiserver starts its own.
//!
//! [`Registry::start`] runs a real OCI registry (CNCF Distribution) on loopback for tests that
//! push and pull Wasm OCI artifacts: anonymous over plain HTTP, or over TLS with a fresh CA and
//! one htpasswd user ([`RegistryAuth`]).

mod audit;
mod binaries;
mod certs;
mod command;
mod control_plane;
mod error;
mod network;
mod node;
mod ports;
pub mod record;
mod registry;
mod shared;
mod supervisor;
mod timeout;
mod token;

pub use audit::{AuditEvent, AuditLog};
pub use binaries::{Binaries, kubernetes_version};
pub use control_plane::ControlPlane;
pub use error::Error;
pub use network::{APISERVER_PORT, BRIDGE, NODE_IP, REGISTRY_ADDRESS};
pub use node::{CGROUP_ROOT, NODE_NAME, Node};
pub use registry::{Registry, RegistryAuth};
pub use shared::{shared, shared_by};
pub use supervisor::{Supervised, process_running};
pub use timeout::within;
