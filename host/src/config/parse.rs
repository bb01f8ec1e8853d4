//! The parsers of setting values (sizes, durations, rates, addresses, names) and of the YAML
//! files settings come in.

use std::net::SocketAddr;
use std::time::Duration;

use wasmop_contract::boundary::cut;
use wasmop_contract::{MAX_WEBHOOK_TIMEOUT, Rate};

/// A YAML document (the `--config` or `--policy` file) as JSON values; empty text is an empty
/// mapping. Aliases may replay at most as many events as the text has bytes, so an alias bomb of
/// a few hundred bytes cannot expand to megabytes.
pub(crate) fn yaml(text: &str) -> Result<serde_json::Value, String> {
    if text.trim().is_empty() {
        return Ok(serde_json::Value::Object(serde_json::Map::new()));
    }
    let options = serde_saphyr::options! {
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: text.len(),
        },
    };
    serde_saphyr::from_str_with_options(text, options).map_err(|e| format!("not valid YAML: {e}"))
}

/// The longest duration any setting takes: a year. A longer one is a typo, and one long enough
/// would overflow the deadline it is added to.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// `250ms`, `15s` or `2m`, at most [`MAX_DURATION`].
pub(crate) fn duration(value: &str) -> Result<Duration, String> {
    let split = value
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("`{}` is not a duration like 15s or 500ms", cut(value)))?;
    let seconds = match unit {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        _ => return Err(format!("`{}` needs a unit: ms, s or m", cut(value))),
    };
    if seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "`{}` is longer than the longest duration this host takes, a year",
            cut(value)
        ));
    }
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{}` is not a duration this host can wait", cut(value)))
}

/// `PER_SECOND:BURST`, e.g. `500:1000`; `PER_SECOND` alone allows a burst of one second's worth.
pub(crate) fn rate(value: &str) -> Result<Rate, String> {
    let malformed = || {
        format!(
            "`{}` is not a rate like 100:500 (per second, then burst)",
            cut(value)
        )
    };
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
pub(super) fn webhook_timeout(value: &str) -> Result<Duration, String> {
    let timeout = duration(value)?;
    match timeout >= Duration::from_millis(100) && timeout <= MAX_WEBHOOK_TIMEOUT {
        true => Ok(timeout),
        false => Err(format!("`{value}` is outside 100ms..=25s")),
    }
}

/// A listening address, or `0` for off, as controller-runtime's bind-address flags take them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

impl std::str::FromStr for BindAddress {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        if value == "0" {
            return Ok(BindAddress(None));
        }
        value
            .parse()
            .map(|a| BindAddress(Some(a)))
            .map_err(|e| format!("`{value}` is neither `0` nor an address like 0.0.0.0:8080: {e}"))
    }
}

/// `64Mi`, `1Gi`, `512Ki` or a number of bytes.
pub(crate) fn bytes(value: &str) -> Result<usize, String> {
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: usize = number
        .parse()
        .map_err(|_| format!("`{}` is not a size like 64Mi or 1Gi", cut(value)))?;
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => {
            return Err(format!(
                "`{}` has an unknown unit: use Ki, Mi or Gi",
                cut(value)
            ));
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{}` is too large", cut(value)))
}

/// A whole number of at least 1.
pub(crate) fn positive(value: &str) -> Result<u32, String> {
    match value.parse() {
        Ok(0) | Err(_) => Err(format!(
            "`{}` is not a whole number of at least 1",
            cut(value)
        )),
        Ok(number) => Ok(number),
    }
}

/// A namespace name: a DNS-1123 label.
pub(super) fn namespace(value: &str) -> Result<String, String> {
    match wasmop_contract::boundary::dns_label(value) {
        true => Ok(value.to_owned()),
        false => Err(format!(
            "`{value}` is not a namespace name (lowercase letters, digits and '-', at most 63)"
        )),
    }
}
