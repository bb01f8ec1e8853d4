//! What one reconcile changed: the writes the apiserver took and the events recorded, counted
//! where the host makes them and read by whoever ran the reconcile. The count is task-local, so
//! it follows the reconcile through its guest call and no other reconcile can touch it; a change
//! made outside [`counted`] (a webhook call, a test's direct dispatch) is counted nowhere.

use std::cell::Cell;
use std::future::Future;

tokio::task_local! {
    static CHANGES: Cell<u32>;
}

/// Runs `reconcile`, returning what it returned and how many changes it made.
pub async fn counted<F: Future>(reconcile: F) -> (F::Output, u32) {
    let run = async move {
        let output = reconcile.await;
        (output, CHANGES.with(Cell::get))
    };
    CHANGES.scope(Cell::new(0), run).await
}

/// Counts one change of the reconcile in progress, if there is one.
pub(super) fn noted() {
    let _ = CHANGES.try_with(|changes| changes.set(changes.get().saturating_add(1)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn changes_count_within_their_reconcile_only() {
        noted();
        let ((), none) = counted(async {}).await;
        assert_eq!(none, 0);
        let ((), two) = counted(async {
            noted();
            tokio::task::yield_now().await;
            noted();
        })
        .await;
        assert_eq!(two, 2);
    }
}
