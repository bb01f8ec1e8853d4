//! The node's network: a Linux bridge on this machine that pods plug into, with addresses that
//! exist only here, and the CNI configuration that puts them there.
//!
//! The bridge's own address is the gateway of the pods' subnet, the node's address, and where
//! kube-apiserver listens when a node runs, so pods, the kubelet and the apiserver reach each other
//! without a packet leaving the machine. One node runs per machine at a time: [`Network::create`]
//! holds a lock file for as long as the bridge exists.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::command::run;

/// The bridge pods plug into.
pub const BRIDGE: &str = "wasmop0";
/// The node's address: the bridge's, the pods' gateway, and the apiserver's.
pub const NODE_IP: &str = "10.213.0.1";
/// The port kube-apiserver listens on at [`NODE_IP`] when a node runs; pods are told it with
/// `KUBERNETES_SERVICE_PORT`.
pub const APISERVER_PORT: u16 = 6443;
/// Where the node's image registry serves, plain HTTP on [`NODE_IP`]: its containerd pulls from
/// it (`hosts.toml` says so) and its pods reach it.
pub const REGISTRY_ADDRESS: &str = "10.213.0.1:5000";
const SUBNET: &str = "10.213.0.0/24";
const PREFIX: u8 = 24;
const LOCK: &str = "/run/lock/wasmop-node.lock";

/// The bridge and its address; dropping it deletes the bridge and releases the machine's lock.
#[derive(Debug)]
pub(crate) struct Network {
    _lock: File,
}

impl Network {
    /// Takes the machine's node lock (waiting for another node to stop) and creates the bridge,
    /// replacing one a killed run left behind.
    pub(crate) fn create() -> Result<Self, Error> {
        std::fs::create_dir_all(Path::new(LOCK).parent().expect("lock has a parent"))
            .map_err(Error::io("creating /run/lock"))?;
        let lock = File::create(LOCK).map_err(Error::io(format!("opening {LOCK}")))?;
        if lock.try_lock().is_err() {
            eprintln!("[node] another node runs on this machine; waiting for it to stop");
            lock.lock().map_err(Error::io(format!("locking {LOCK}")))?;
        }
        let _ = run("ip", &["link", "del", BRIDGE]);
        run("ip", &["link", "add", BRIDGE, "type", "bridge"])?;
        let address = format!("{NODE_IP}/{PREFIX}");
        run("ip", &["addr", "add", &address, "dev", BRIDGE])?;
        run("ip", &["link", "set", BRIDGE, "up"])?;
        Ok(Network { _lock: lock })
    }

    /// Writes the CNI configuration into `conf_dir`: a bridge plugin on [`BRIDGE`], addresses
    /// from host-local IPAM whose records live in `ipam_dir`.
    pub(crate) fn write_cni_config(conf_dir: &Path, ipam_dir: &Path) -> Result<PathBuf, Error> {
        std::fs::create_dir_all(conf_dir).map_err(Error::io("creating the CNI directory"))?;
        let config = serde_json::json!({
            "cniVersion": "1.0.0",
            "name": "wasmop",
            "plugins": [{
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": SUBNET, "gateway": NODE_IP}]],
                    "dataDir": ipam_dir,
                },
            }],
        });
        let path = conf_dir.join("10-wasmop.conflist");
        std::fs::write(&path, config.to_string()).map_err(Error::io("writing the CNI config"))?;
        Ok(path)
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        let _ = run("ip", &["link", "del", BRIDGE]);
    }
}
