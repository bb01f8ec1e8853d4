//! `guest-hog`: reconcile allocates 1 MiB blocks and writes to every page of each, without end,
//! so memory really grows until the host's memory cap makes the allocation trap.

use wasmop_guest::k8s_openapi::api::core::v1::ConfigMap;
use wasmop_guest::{Outcome, ReconcileError, Reconciler, Registration, Request};

const BLOCK: usize = 1 << 20;
const PAGE: usize = 1 << 12;

/// The memory-hogging reconciler.
pub struct Hog;

wasmop_guest::export_reconciler!(Hog);

impl Reconciler for Hog {
    fn describe() -> Registration {
        Registration::new::<ConfigMap>("guest-hog", env!("CARGO_PKG_VERSION"))
            .max_concurrent_reconciles(1)
    }

    fn reconcile(_req: Request) -> Result<Outcome, ReconcileError> {
        let mut blocks: Vec<Vec<u8>> = Vec::new();
        loop {
            let mut block = vec![0u8; BLOCK];
            for byte in block.iter_mut().step_by(PAGE) {
                *byte = 1;
            }
            blocks.push(std::hint::black_box(block));
        }
    }
}
