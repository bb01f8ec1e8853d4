//! What the operator lets one plugin make the host spend: bytes per call, the sizes of what the
//! host forwards or keeps for it, and rates per plugin. Every figure here is enforced where the
//! guest's data enters the host ([`crate::boundary`], and the runtime's budget).

/// A rate: tokens per second and the burst allowed at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens added per second.
    pub per_second: f64,
    /// The most tokens the bucket holds.
    pub burst: u32,
}

impl Rate {
    /// `per_second` tokens a second with a burst of `burst`.
    pub const fn new(per_second: f64, burst: u32) -> Self {
        Rate { per_second, burst }
    }
}

/// The largest linear memory any plugin instance may be allowed, in bytes (1 GiB).
pub const MAX_MEMORY: usize = 1 << 30;

/// Per-plugin bounds on what a guest can make the host copy, keep, send and log.
#[derive(Debug, Clone, PartialEq)]
pub struct GuestLimits {
    /// Bytes a guest may hand the host in one call, strings and list entries together (wasmtime's
    /// hostcall fuel); a call over it traps before anything is copied past the limit.
    pub call_bytes: usize,
    /// Bytes of one object or patch body (the apiserver's own request limit is 3 MiB).
    pub object_bytes: usize,
    /// Requirements in one label or field selector.
    pub selector_requirements: usize,
    /// Bytes of one log line's message; longer ones are cut.
    pub log_bytes: usize,
    /// Fields of one log line; further ones are dropped.
    pub log_fields: usize,
    /// Bytes of an event's message (events.k8s.io/v1 caps a note at 1 KiB); longer ones are cut.
    pub event_bytes: usize,
    /// Keys one `map` call may return.
    pub map_keys: usize,
    /// Apiserver writes per second; a write over the rate waits for its turn.
    pub writes: Rate,
    /// Events per second; an event over the rate waits for its turn. Events are writes, and a
    /// reconciler records one per object it creates, so they keep pace with writes by default.
    pub events: Rate,
    /// Log lines per second; a line over the rate waits for its turn.
    pub logs: Rate,
    /// Requeues per second; a requeue over the rate is delayed until its turn.
    pub requeues: Rate,
}

impl Default for GuestLimits {
    fn default() -> Self {
        GuestLimits {
            call_bytes: 8 << 20,
            object_bytes: 3 << 20,
            selector_requirements: 32,
            log_bytes: 16 << 10,
            log_fields: 32,
            event_bytes: 1 << 10,
            map_keys: 10_000,
            writes: Rate::new(500.0, 1000),
            events: Rate::new(500.0, 1000),
            logs: Rate::new(100.0, 500),
            requeues: Rate::new(100.0, 1000),
        }
    }
}
