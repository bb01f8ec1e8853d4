//! The name of a host call's result, for guests that report what each attempt got.

use wasmop_guest::raw::wasmop::reconciler::types;

/// `ok`, or the WIT error case in kebab-case.
pub fn result_name<T>(result: &Result<T, types::Error>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(types::Error::NotFound(_)) => "not-found",
        Err(types::Error::Conflict(_)) => "conflict",
        Err(types::Error::AlreadyExists(_)) => "already-exists",
        Err(types::Error::Forbidden(_)) => "forbidden",
        Err(types::Error::Invalid(_)) => "invalid",
        Err(types::Error::Timeout(_)) => "timeout",
        Err(types::Error::Unavailable(_)) => "unavailable",
        Err(types::Error::Other(_)) => "other",
    }
}
