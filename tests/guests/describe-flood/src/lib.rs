//! `guest-describe-flood`: `describe` returns a registration (name `guest-describe-flood`,
//! primary ConfigMap) whose `owns` list has a million kinds, every group, version and kind string
//! of which aliases one 1 MiB buffer: 3 TB for a host that copies each. The typed
//! [`Registration`](wasmop_guest::Registration) builder cannot alias strings, so this guest
//! implements the raw bindings' `Guest` trait itself. Reconciles do nothing.

// Strings that alias one buffer need `String::from_raw_parts`, and freeing them safely needs a
// global allocator that ignores frees inside that buffer (the export's post-return frees every
// returned string): the point of this guest.
#[allow(unsafe_code)]
#[path = "../../shared/alias.rs"]
mod alias;

use std::sync::OnceLock;

use alias::Pinned;
use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::raw::exports::wasmop::reconciler::webhooks;
use wasmop_guest::raw::wasmop::reconciler::plugin;
use wasmop_guest::{Gvk, ObjectKey, Registration, raw};

/// How many owned kinds `describe` returns.
pub const OWNS: usize = 1_000_000;

/// The size of the buffer every owned kind's strings alias.
pub const BUFFER_BYTES: usize = 1 << 20;

/// The reconciler whose registration floods the host.
pub struct DescribeFlood;

impl raw::Guest for DescribeFlood {
    fn describe() -> plugin::Registration {
        static BUFFER: OnceLock<Pinned> = OnceLock::new();
        let buffer = *BUFFER.get_or_init(|| Pinned::new(BUFFER_BYTES, b'g'));
        let mut registration =
            Registration::new::<ConfigMap>("guest-describe-flood", env!("CARGO_PKG_VERSION"))
                .into_raw();
        registration.owns = (0..OWNS).map(|_| aliased_gvk(buffer)).collect();
        registration
    }

    fn reconcile(_: ObjectKey) -> Result<plugin::Outcome, plugin::ReconcileError> {
        Ok(plugin::Outcome::Done)
    }

    fn map(_: Gvk, _: String) -> Vec<ObjectKey> {
        Vec::new()
    }
}

impl webhooks::Guest for DescribeFlood {
    fn describe_webhooks() -> webhooks::Registration {
        webhooks::Registration {
            validate: Vec::new(),
            default: Vec::new(),
            convert: Vec::new(),
        }
    }

    fn validate(_: webhooks::AdmissionRequest) -> webhooks::Verdict {
        webhooks::Verdict::Allowed(Vec::new())
    }

    fn default(req: webhooks::AdmissionRequest) -> Result<String, webhooks::Denial> {
        Ok(req.object.unwrap_or_default())
    }

    fn convert(obj: String, _: String) -> Result<String, String> {
        Ok(obj)
    }
}

raw::export!(DescribeFlood with_types_in wasmop_guest::raw);

// Aliases of a pinned buffer: `Pinned::alias` is `String::from_raw_parts` over shared bytes.
#[allow(unsafe_code)]
fn aliased_gvk(buffer: Pinned) -> Gvk {
    // SAFETY: nothing writes through these strings; the export's lowering only reads them, and
    // its post-return frees of them are ignored by the pinning allocator.
    unsafe {
        Gvk {
            group: buffer.alias(),
            version: buffer.alias(),
            kind: buffer.alias(),
        }
    }
}
