//! Bounding every async test, so a deadlock fails with a message instead of hanging CI.

use std::future::Future;
use std::time::Duration;

/// Awaits `future`, panicking with `what` if it takes longer than `limit`.
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {limit:?} waiting for {what}"),
    }
}
