//! Structured logs, written by the host's logger tagged with the plugin's name and the request.
//!
//! The macros format their arguments like `format!`: `wasmop_guest::info!("created {}", name)`.
//! [`log_with`] also takes key-value fields.

use crate::raw::wasmop::reconciler::log as raw;
pub use crate::raw::wasmop::reconciler::log::Level;

/// Writes one log line.
pub fn log(level: Level, message: &str) {
    raw::log(level, message, &[]);
}

/// Writes one log line with key-value fields.
pub fn log_with(level: Level, message: &str, fields: &[(&str, &str)]) {
    let fields: Vec<(String, String)> = fields
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    raw::log(level, message, &fields);
}

/// Logs a formatted message at trace level.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Trace, &format!($($arg)+)) };
}

/// Logs a formatted message at debug level.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Debug, &format!($($arg)+)) };
}

/// Logs a formatted message at info level.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Info, &format!($($arg)+)) };
}

/// Logs a formatted message at warn level.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Warn, &format!($($arg)+)) };
}

/// Logs a formatted message at error level.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Error, &format!($($arg)+)) };
}
