//! The limits every download of a module keeps, from a URL or a registry: how long connecting
//! and the whole download may take, and how large a module may be. A download that passes one is
//! cut off, never read on.

use std::time::Duration;

/// The largest module a URL or a registry may serve.
pub const MAX_MODULE_BYTES: usize = 64 << 20;

/// How long connecting to a module's server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a whole download may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(120);
