//! Errors: [`Error`] for a failed cache read or apiserver write, one variant per variant of the
//! WIT `error` plus the (de)serialisation failures of the typed layer; [`ReconcileError`] for a
//! failed reconcile, retryable unless made terminal.

use std::fmt;

use crate::kind::Gvk;
use crate::raw::wasmop::reconciler::types;
pub use crate::raw::wasmop::reconciler::types::{DeniedBy, Status};

/// Why a cache read or an apiserver write failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object does not exist (404).
    #[error("not found: {0}")]
    NotFound(Status),
    /// The write was based on a stale resourceVersion (409): re-read and retry.
    #[error("conflict: {0}")]
    Conflict(Status),
    /// An object with that name already exists (409).
    #[error("already exists: {0}")]
    AlreadyExists(Status),
    /// The call was not allowed (403), by the apiserver or by the plugin's declared permissions.
    #[error("forbidden by {}: {status}", denied_by_name(.denied_by))]
    Forbidden {
        /// Who refused the call.
        denied_by: DeniedBy,
        /// The refusal.
        status: Status,
    },
    /// The object or request was invalid (400, 422).
    #[error("invalid: {0}")]
    Invalid(Status),
    /// The call did not finish in time.
    #[error("timed out: {0}")]
    Timeout(Status),
    /// The apiserver or the cache is not available right now; retry later.
    #[error("unavailable: {0}")]
    Unavailable(Status),
    /// Anything else the host reported.
    #[error("failed: {0}")]
    Other(Status),
    /// An object could not be turned into JSON for the host.
    #[error("cannot serialise a {kind} object: {source}")]
    Serialize {
        /// The kind of the object.
        kind: Gvk,
        /// What serde reported.
        source: serde_json::Error,
    },
    /// The host's JSON could not be parsed as the expected type.
    #[error("cannot parse a {kind} object from the host's JSON: {source}")]
    Deserialize {
        /// The kind the JSON was parsed as.
        kind: Gvk,
        /// What serde reported.
        source: serde_json::Error,
    },
}

fn denied_by_name(denied_by: &DeniedBy) -> &'static str {
    match denied_by {
        DeniedBy::Apiserver => "the apiserver",
        DeniedBy::DeclaredPermissions => "the plugin's declared permissions",
    }
}

impl Error {
    /// The host's status for host errors; `None` for (de)serialisation errors.
    pub fn status(&self) -> Option<&Status> {
        match self {
            Self::NotFound(s)
            | Self::Conflict(s)
            | Self::AlreadyExists(s)
            | Self::Forbidden { status: s, .. }
            | Self::Invalid(s)
            | Self::Timeout(s)
            | Self::Unavailable(s)
            | Self::Other(s) => Some(s),
            Self::Serialize { .. } | Self::Deserialize { .. } => None,
        }
    }

    /// The HTTP status code, e.g. 404; 0 when there was none.
    pub fn code(&self) -> u16 {
        self.status().map_or(0, |s| s.code)
    }

    /// The machine-readable reason, e.g. `NotFound`; empty when there was none.
    pub fn reason(&self) -> &str {
        self.status().map_or("", |s| &s.reason)
    }

    /// Whether the object does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_))
    }

    /// Whether a write lost a race with another writer.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict(_))
    }

    /// Whether a create found the name taken.
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Self::AlreadyExists(_))
    }

    /// Whether the call was refused, by the apiserver or by the declared permissions.
    pub fn is_forbidden(&self) -> bool {
        matches!(self, Self::Forbidden { .. })
    }
}

impl From<types::Error> for Error {
    fn from(err: types::Error) -> Self {
        match err {
            types::Error::NotFound(s) => Self::NotFound(s),
            types::Error::Conflict(s) => Self::Conflict(s),
            types::Error::AlreadyExists(s) => Self::AlreadyExists(s),
            types::Error::Forbidden((denied_by, status)) => Self::Forbidden { denied_by, status },
            types::Error::Invalid(s) => Self::Invalid(s),
            types::Error::Timeout(s) => Self::Timeout(s),
            types::Error::Unavailable(s) => Self::Unavailable(s),
            types::Error::Other(s) => Self::Other(s),
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({} {})", self.message, self.code, self.reason)
    }
}

/// Turns a `NotFound` error into `Ok(None)`.
pub trait OptionalExt<T> {
    /// `Ok(Some(v))` for `Ok(v)`, `Ok(None)` for a not-found error, the error otherwise.
    fn optional(self) -> Result<Option<T>, Error>;
}

impl<T> OptionalExt<T> for Result<T, Error> {
    fn optional(self) -> Result<Option<T>, Error> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A failed reconcile: retried with backoff unless terminal.
///
/// Any error converts into a retryable one with `?`; make it terminal with
/// [`ReconcileError::terminal`] or [`Terminal::terminal`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconcileError {
    message: String,
    terminal: bool,
}

impl ReconcileError {
    /// A failure the host retries with per-key exponential backoff.
    pub fn retryable(message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
            terminal: false,
        }
    }

    /// A failure the host does not retry; the next event on the object reconciles it again.
    pub fn terminal(message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
            terminal: true,
        }
    }

    /// Whether the host will not retry this failure.
    pub fn is_terminal(&self) -> bool {
        self.terminal
    }

    /// What went wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ReconcileError {
    fn from(err: E) -> Self {
        Self::retryable(err)
    }
}

/// Turns any failure into a terminal [`ReconcileError`].
pub trait Terminal<T> {
    /// The value, or a terminal reconcile error carrying the failure's message.
    fn terminal(self) -> Result<T, ReconcileError>;
}

impl<T, E: fmt::Display> Terminal<T> for Result<T, E> {
    fn terminal(self) -> Result<T, ReconcileError> {
        self.map_err(ReconcileError::terminal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16, reason: &str) -> Status {
        Status {
            code,
            reason: reason.into(),
            message: format!("{reason} happened"),
        }
    }

    #[test]
    fn every_wit_error_maps_to_its_own_variant() {
        let cases = [
            (types::Error::NotFound(status(404, "NotFound")), "not found"),
            (types::Error::Conflict(status(409, "Conflict")), "conflict"),
            (
                types::Error::AlreadyExists(status(409, "AlreadyExists")),
                "already exists",
            ),
            (
                types::Error::Forbidden((DeniedBy::DeclaredPermissions, status(403, "Forbidden"))),
                "forbidden by the plugin's declared permissions",
            ),
            (types::Error::Invalid(status(422, "Invalid")), "invalid"),
            (types::Error::Timeout(status(504, "Timeout")), "timed out"),
            (
                types::Error::Unavailable(status(503, "ServiceUnavailable")),
                "unavailable",
            ),
            (types::Error::Other(status(0, "")), "failed"),
        ];
        for (wit, prefix) in cases {
            let code = match &wit {
                types::Error::Forbidden((_, s)) => s.code,
                types::Error::NotFound(s)
                | types::Error::Conflict(s)
                | types::Error::AlreadyExists(s)
                | types::Error::Invalid(s)
                | types::Error::Timeout(s)
                | types::Error::Unavailable(s)
                | types::Error::Other(s) => s.code,
            };
            let err = Error::from(wit);
            assert_eq!(err.code(), code);
            assert!(err.to_string().starts_with(prefix), "{err}");
        }
    }

    #[test]
    fn forbidden_keeps_who_denied_it() {
        let err = Error::from(types::Error::Forbidden((
            DeniedBy::Apiserver,
            status(403, "Forbidden"),
        )));
        assert!(matches!(
            err,
            Error::Forbidden {
                denied_by: DeniedBy::Apiserver,
                ..
            }
        ));
        assert_eq!(err.reason(), "Forbidden");
        assert!(err.is_forbidden());
    }

    #[test]
    fn optional_turns_only_not_found_into_none() {
        let missing: Result<(), Error> = Err(Error::NotFound(status(404, "NotFound")));
        assert!(missing.optional().unwrap().is_none());
        let conflict: Result<(), Error> = Err(Error::Conflict(status(409, "Conflict")));
        assert!(conflict.optional().is_err());
    }

    #[test]
    fn sdk_errors_become_retryable_reconcile_errors_with_question_mark() {
        fn reconcile() -> Result<(), ReconcileError> {
            Err(Error::Unavailable(status(503, "ServiceUnavailable")))?
        }
        let err = reconcile().unwrap_err();
        assert!(!err.is_terminal());
        assert!(err.message().contains("ServiceUnavailable"));
    }

    #[test]
    fn terminal_marks_any_failure_terminal() {
        let err = Err::<(), _>("bad spec").terminal().unwrap_err();
        assert!(err.is_terminal());
        assert_eq!(err.to_string(), "bad spec");
    }

    #[test]
    fn deserialise_errors_have_no_status() {
        let source = serde_json::from_str::<u8>("x").unwrap_err();
        let err = Error::Deserialize {
            kind: Gvk {
                group: String::new(),
                version: "v1".into(),
                kind: "Pod".into(),
            },
            source,
        };
        assert!(err.status().is_none());
        assert_eq!(err.code(), 0);
    }
}
