//! The parsers of setting values (sizes, durations, rates, addresses, names) and of the YAML
//! files settings come in.

use std::net::SocketAddr;
use std::time::Duration;

use wasmop_contract::boundary::cut;
use wasmop_contract::{MAX_WEBHOOK_TIMEOUT, Rate};

/// A setting's value its parser refuses; the value is quoted cut to a readable length.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The text is not YAML, or replays too many aliases.
    #[error("not valid YAML: {0}")]
    Yaml(String),
    /// Not a number with a unit.
    #[error("`{0}` is not a duration like 15s or 500ms")]
    Duration(String),
    /// A number without `ms`, `s` or `m`.
    #[error("`{0}` needs a unit: ms, s or m")]
    DurationUnit(String),
    /// Longer than [`MAX_DURATION`].
    #[error("`{0}` is longer than the longest duration this host takes, a year")]
    TooLong(String),
    /// A duration no clock can wait (negative or not finite).
    #[error("`{0}` is not a duration this host can wait")]
    Unwaitable(String),
    /// Not `PER_SECOND[:BURST]`.
    #[error("`{0}` is not a rate like 100:500 (per second, then burst)")]
    Rate(String),
    /// A webhook timeout outside what the apiserver allows.
    #[error("`{0}` is outside 100ms..=25s")]
    WebhookTimeout(String),
    /// Neither `0` nor a socket address.
    #[error("`{value}` is neither `0` nor an address like 0.0.0.0:8080: {reason}")]
    BindAddress {
        /// The value.
        value: String,
        /// Why it is not an address.
        reason: String,
    },
    /// Not a number of bytes with an optional unit.
    #[error("`{0}` is not a size like 64Mi or 1Gi")]
    Size(String),
    /// A size with a unit other than `Ki`, `Mi` or `Gi`.
    #[error("`{0}` has an unknown unit: use Ki, Mi or Gi")]
    SizeUnit(String),
    /// A size past what the host can count.
    #[error("`{0}` is too large")]
    TooLarge(String),
    /// Not a whole number of at least 1.
    #[error("`{0}` is not a whole number of at least 1")]
    Positive(String),
    /// Not a DNS-1123 label.
    #[error("`{0}` is not a namespace name (lowercase letters, digits and '-', at most 63)")]
    Namespace(String),
    /// Not an `https://` URL.
    #[error("`{0}` is not an https:// URL (the apiserver calls webhooks over HTTPS only)")]
    NotHttps(String),
    /// An `https://` URL with a path, query or fragment.
    #[error(
        "`{0}` must be a base URL, `https://host:port`, without a path: the host adds one per webhook"
    )]
    NotBaseUrl(String),
    /// Not `NAMESPACE/NAME[:PORT]`.
    #[error("`{0}` is not NAMESPACE/NAME[:PORT]")]
    Service(String),
}

/// A setting of a `--config` file or a WasmReconciler's spec that is wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    /// A value its parser refuses.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A value the flag's own parser refuses: the first line of clap's message.
    #[error("{0}")]
    Flag(String),
    /// A value of a setting that is no flag, refused for what it says.
    #[error("{0}")]
    Refused(String),
    /// What is wrong under `key` (`plugins[0].file`, `spec.memoryLimit`).
    #[error("`{key}`: {problem}")]
    At {
        /// The setting as the file or spec spells it.
        key: String,
        /// What is wrong there.
        problem: Box<SettingError>,
    },
    /// A value of another shape than the one expected.
    #[error("expected {expected}, found {found}")]
    Shape {
        /// What was expected.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// A setting the place it is in does not know.
    #[error("unknown setting{name}; known: {known}")]
    Unknown {
        /// The setting, quoted with a space before it, or nothing when the key says it.
        name: String,
        /// Those known there.
        known: String,
    },
    /// A required setting is missing.
    #[error("a mapping needs `{0}`")]
    Missing(&'static str),
    /// Arguments or environment variables no instance should start with.
    #[error(transparent)]
    Environment(#[from] wasmop_contract::environment::InvalidEnvironment),
}

impl SettingError {
    /// This error, found under the setting `key`.
    pub(crate) fn at(self, key: impl Into<String>) -> Self {
        SettingError::At {
            key: key.into(),
            problem: Box::new(self),
        }
    }

    /// A value of another shape than `expected`.
    pub(crate) fn shape(expected: &'static str, found: impl std::fmt::Display) -> Self {
        SettingError::Shape {
            expected,
            found: found.to_string(),
        }
    }
}

/// A YAML document (the `--config` or `--policy` file) as JSON values; empty text is an empty
/// mapping. Aliases may replay at most as many events as the text has bytes, so an alias bomb of
/// a few hundred bytes cannot expand to megabytes.
pub(crate) fn yaml(text: &str) -> Result<serde_json::Value, ValueError> {
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    let options = serde_saphyr::options! {
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: text.len(),
        },
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|e| ValueError::Yaml(e.to_string()))
}

/// The longest duration any setting takes: a year. A longer one is a typo, and one long enough
/// would overflow the deadline it is added to.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// `250ms`, `15s` or `2m`, at most [`MAX_DURATION`].
pub(crate) fn duration(value: &str) -> Result<Duration, ValueError> {
    let split = value
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| ValueError::Duration(cut(value).to_string()))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        _ => return Err(ValueError::DurationUnit(cut(value).to_string())),
    };
    if seconds > MAX_DURATION.as_secs_f64() {
        return Err(ValueError::TooLong(cut(value).to_string()));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| ValueError::Unwaitable(cut(value).to_string()))
}

/// `PER_SECOND:BURST`, e.g. `500:1000`; `PER_SECOND` alone allows a burst of one second's worth.
pub(crate) fn rate(value: &str) -> Result<Rate, ValueError> {
    let malformed = || ValueError::Rate(cut(value).to_string());
    let (per_second, burst) = value.split_once(':').unwrap_or((value, ""));
    let per_second: f64 = per_second.parse().map_err(|_| malformed())?;
    if !per_second.is_finite() || per_second <= 0.0 {
        return Err(malformed());
    }
    let burst = match burst {
        "" => per_second.ceil().min(f64::from(u32::MAX)) as u32,
        burst => positive(burst).map_err(|_| malformed())?,
    };
    Ok(Rate::new(per_second, burst.max(1)))
}

/// A webhook call's timeout: a duration from 100ms to 25s, so the apiserver's own timeout (2 s
/// longer, at most 30 s) is never the one that answers.
pub(super) fn webhook_timeout(value: &str) -> Result<Duration, ValueError> {
    let timeout = duration(value)?;
    match timeout >= Duration::from_millis(100) && timeout <= MAX_WEBHOOK_TIMEOUT {
        true => Ok(timeout),
        false => Err(ValueError::WebhookTimeout(cut(value).to_string())),
    }
}

/// A listening address, or `0` for off, as controller-runtime's bind-address flags take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

impl std::str::FromStr for BindAddress {
    type Err = ValueError;

    fn from_str(value: &str) -> Result<Self, ValueError> {
        if value == "0" {
            return Ok(BindAddress(None));
        }
        value
            .parse()
            .map(|a| BindAddress(Some(a)))
            .map_err(|e| ValueError::BindAddress {
                value: cut(value).to_string(),
                reason: e.to_string(),
            })
    }
}

/// `64Mi`, `1Gi`, `512Ki` or a number of bytes.
pub(crate) fn bytes(value: &str) -> Result<usize, ValueError> {
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| ValueError::Size(cut(value).to_string()))?;
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => return Err(ValueError::SizeUnit(cut(value).to_string())),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| ValueError::TooLarge(cut(value).to_string()))
}

/// A whole number of at least 1.
pub(crate) fn positive(value: &str) -> Result<u32, ValueError> {
    match value.parse() {
        Ok(0) | Err(_) => Err(ValueError::Positive(cut(value).to_string())),
        Ok(number) => Ok(number),
    }
}

/// A namespace name: a DNS-1123 label.
pub(super) fn namespace(value: &str) -> Result<String, ValueError> {
    match wasmop_contract::boundary::dns_label(value) {
        true => Ok(value.to_owned()),
        false => Err(ValueError::Namespace(cut(value).to_string())),
    }
}
