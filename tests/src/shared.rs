//! The control plane shared by every test of one test binary, as envtest suites share one.
//!
//! It starts on first use and is never dropped: when the test binary exits, its supervisors see
//! their lifeline close and stop etcd and kube-apiserver.

use tokio::sync::OnceCell;

use crate::{ControlPlane, Error};

static SHARED: OnceCell<ControlPlane> = OnceCell::const_new();

/// The test binary's shared control plane, started by the first caller.
pub async fn shared() -> Result<&'static ControlPlane, Error> {
    SHARED.get_or_try_init(ControlPlane::start).await
}
