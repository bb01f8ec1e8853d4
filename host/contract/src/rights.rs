//! What the apiserver currently lets a plugin's own identity read, as last reviewed: in identity
//! mode the shared cache lists and watches as the operator, so the plugin's cache reads are only
//! as fresh as the last review of its ServiceAccount's RBAC. The capability check
//! ([`crate::capability::check`]) refuses a read of a kind in a namespace the last review found
//! refused ([`Rights::refuses`]); whoever reviews (the host's plugin loader) replaces the refusals with
//! [`Rights::set`], at most every [`REVIEW_TTL`].
//!
//! Invariants: the check reads this synchronously on the guest's call path and never waits for
//! a review (a lock held only to copy or replace a short list, never across an `.await`); a
//! review that fails leaves the last answer in place; the reviewing task stops when these rights
//! are dropped with their plugin.

use std::fmt;
use std::sync::{Mutex, RwLock};
use std::time::Duration;

use crate::object::{self, GroupVersionKind};

/// How often a plugin identity's reads are reviewed again, and so how long a revoked identity
/// may still read the cache (the metrics listener's decisions live as long).
pub const REVIEW_TTL: Duration = Duration::from_secs(10);

/// The reads a plugin identity was last refused.
#[derive(Debug)]
pub struct Rights {
    user: String,
    /// Kinds and namespaces (empty: every namespace) it may not read.
    refused: RwLock<Vec<(GroupVersionKind, String)>>,
    reviewer: Mutex<Option<Box<dyn Reviewer>>>,
}

/// Whatever keeps reviewing a plugin identity's rights (the host's reviewing task).
pub trait Reviewer: Send + Sync + fmt::Debug {
    /// Stops reviewing.
    fn stop(&self);
}

impl Rights {
    /// Rights of the Kubernetes user `user`, refused nothing until reviewed.
    pub fn new(user: String) -> Self {
        Rights {
            user,
            refused: RwLock::default(),
            reviewer: Mutex::default(),
        }
    }

    /// The user the rights are the apiserver's answer for.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// Replaces the refused reads with the latest review's, returning whether they changed.
    pub fn set(&self, mut refused: Vec<(GroupVersionKind, String)>) -> bool {
        let order = |(k, n): &(GroupVersionKind, String)| {
            (
                k.group.clone(),
                k.version.clone(),
                k.kind.clone(),
                n.clone(),
            )
        };
        refused.sort_by_key(order);
        let mut current = self.refused.write().unwrap_or_else(|e| e.into_inner());
        let changed = *current != refused;
        *current = refused;
        changed
    }

    /// Whether a read of `kind` in `namespace` (empty: across namespaces, or cluster-scoped) is
    /// refused: the identity lost a read of the kind there, or anywhere when reading across.
    pub fn refuses(&self, kind: &GroupVersionKind, namespace: &str) -> bool {
        let refused = self.refused.read().unwrap_or_else(|e| e.into_inner());
        refused.iter().any(|(k, n)| {
            object::includes(k, kind) && (n.is_empty() || namespace.is_empty() || n == namespace)
        })
    }

    /// Stops `task`, the one reviewing these rights, when they are dropped (and a previous
    /// reviewer at once).
    pub fn reviewed_by(&self, task: Box<dyn Reviewer>) {
        let mut reviewer = self.reviewer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(previous) = reviewer.replace(task) {
            previous.stop();
        }
    }
}

impl Drop for Rights {
    fn drop(&mut self) {
        let reviewer = self.reviewer.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(task) = reviewer.take() {
            task.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmap() -> GroupVersionKind {
        GroupVersionKind::gvk("", "v1", "ConfigMap")
    }

    #[test]
    fn a_refusal_covers_its_namespace_and_reads_across_namespaces() {
        let rights = Rights::new("system:serviceaccount:a:b".to_owned());
        assert!(!rights.refuses(&configmap(), "shop"));
        assert!(rights.set(vec![(configmap(), "shop".to_owned())]));
        assert!(rights.refuses(&configmap(), "shop"));
        assert!(rights.refuses(&configmap(), ""), "a list across namespaces");
        assert!(!rights.refuses(&configmap(), "other"));
        let secret = GroupVersionKind::gvk("", "v1", "Secret");
        assert!(!rights.refuses(&secret, "shop"));
        assert!(!rights.set(vec![(configmap(), "shop".to_owned())]));
        assert!(rights.set(vec![(configmap(), String::new())]));
        assert!(rights.refuses(&configmap(), "other"), "refused everywhere");
        assert!(rights.set(Vec::new()), "restored");
        assert!(!rights.refuses(&configmap(), "shop"));
    }

    #[derive(Debug, Default)]
    struct Stopped(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl Reviewer for Stopped {
        fn stop(&self) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn a_new_reviewer_stops_the_last_and_dropping_the_rights_stops_it() {
        let rights = Rights::new("u".to_owned());
        let (first, second) = (Stopped::default(), Stopped::default());
        let (first_stops, second_stops) = (first.0.clone(), second.0.clone());
        rights.reviewed_by(Box::new(first));
        rights.reviewed_by(Box::new(second));
        assert_eq!(first_stops.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(second_stops.load(std::sync::atomic::Ordering::Relaxed), 0);
        drop(rights);
        assert_eq!(second_stops.load(std::sync::atomic::Ordering::Relaxed), 1);
    }
}
