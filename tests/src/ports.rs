//! Free loopback ports for one control plane.
//!
//! Ports are found by binding `127.0.0.1:0`; the ones handed out are remembered for the life of
//! the process so two control planes started at once in one test binary never get the same port.
//! Another process may still take a port before the server binds it; the caller retries then.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Mutex;

use crate::Error;

static HANDED_OUT: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

/// Returns `N` distinct loopback ports that were free a moment ago and that this process has not
/// handed out before.
pub(crate) fn free_ports<const N: usize>() -> Result<[u16; N], Error> {
    let mut handed_out = HANDED_OUT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut listeners = Vec::with_capacity(N);
    let mut ports = [0u16; N];
    let mut found = 0;
    while found < N {
        let listener =
            TcpListener::bind("127.0.0.1:0").map_err(Error::io("binding a loopback port"))?;
        let port = listener
            .local_addr()
            .map_err(Error::io("reading a bound port"))?
            .port();
        if handed_out.insert(port) {
            ports[found] = port;
            found += 1;
        }
        listeners.push(listener);
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_never_handed_out_twice() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..20 {
            for port in free_ports::<3>().unwrap() {
                assert!(seen.insert(port), "port {port} handed out twice");
            }
        }
    }
}
