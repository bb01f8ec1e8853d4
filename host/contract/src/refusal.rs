//! Why the host refused, dropped or slowed something a guest handed it: the reasons the
//! runtime counts per plugin and the metrics report.

/// Why the host refused or dropped something a guest handed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A malformed or oversized request: a bad name, kind, body, selector.
    Invalid,
    /// A call the plugin did not declare.
    Undeclared,
    /// A read its identity's RBAC no longer grants (identity mode).
    Revoked,
    /// A write that had to wait for the plugin's write rate.
    WriteThrottled,
    /// An event that had to wait for the plugin's event rate.
    EventThrottled,
    /// An event dropped: malformed, about an object the plugin may not read, or its queue full.
    EventDropped,
    /// A log line that had to wait for the plugin's log rate.
    LogThrottled,
    /// A requeue delayed by the plugin's requeue rate.
    RequeueThrottled,
}

impl Refusal {
    /// Every refusal, in the order [`Budget::refusals`] reports them.
    pub const ALL: [Refusal; 8] = [
        Refusal::Invalid,
        Refusal::Undeclared,
        Refusal::Revoked,
        Refusal::WriteThrottled,
        Refusal::EventThrottled,
        Refusal::EventDropped,
        Refusal::LogThrottled,
        Refusal::RequeueThrottled,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Invalid => "invalid",
            Refusal::Undeclared => "undeclared",
            Refusal::Revoked => "revoked",
            Refusal::WriteThrottled => "write_throttled",
            Refusal::EventThrottled => "event_throttled",
            Refusal::EventDropped => "event_dropped",
            Refusal::LogThrottled => "log_throttled",
            Refusal::RequeueThrottled => "requeue_throttled",
        }
    }
}
