//! A node for the test control plane: kube-scheduler and kube-controller-manager beside the
//! apiserver, containerd, and a kubelet registered as the Node [`NODE_NAME`], its pods on the
//! [`Network`]'s bridge, and an image registry at [`REGISTRY_ADDRESS`] that containerd pulls
//! from over plain HTTP ([`Node::push_image`] puts images there, with no daemon).
//!
//! Everything lives under one directory of the control plane's: containerd's root and state (so
//! sandboxes' network namespaces too), runc's state, the kubelet's root, the pods' logs and IPAM
//! records. Outside it, only the bridge, the pods' cgroups under [`CGROUP_ROOT`], the kubelet's
//! links in `/var/log/containers` and the kernel settings the kubelet sets. Invariant: dropping
//! the node leaves none of it behind — the kubelet stops, every process in the pods' cgroups is
//! killed, containerd and its shims stop, everything mounted under the directory is unmounted,
//! the cgroups and links are removed, the kernel settings restored and the bridge deleted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node as NodeObject;
use kube::Api;

use crate::command::run;
use crate::network::{self, Network, REGISTRY_ADDRESS};
use crate::registry::Registry;
use crate::supervisor::Supervised;
use crate::{Binaries, Error};

/// The Node's name.
pub const NODE_NAME: &str = "wasmop-node";
/// The pods' cgroup root in every cgroup hierarchy (the kubelet's `cgroupRoot`).
pub const CGROUP_ROOT: &str = "wasmop-node";
/// The pod sandbox image, Kubernetes' own `pause` built by `tests/k8s/build.sh --node`.
const PAUSE_IMAGE: &str = "wasmop.dev/pause:envtest";
const ARCHIVE_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/image/archive.py");
const CGROUPS: &str = "/sys/fs/cgroup";
const CONTAINER_LOGS: &str = "/var/log/containers";
/// Where containerd 1.6 puts its shims' sockets, whatever its configured state directory.
const SHIM_SOCKETS: &str = "/run/containerd/s";
/// The kernel settings the kubelet sets on start (its `protectKernelDefaults: false`), restored
/// when the node stops.
const KUBELET_SYSCTLS: [&str; 6] = [
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
];
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(250);

/// What the node needs of the control plane it joins.
pub(crate) struct Joining<'a> {
    /// The binaries, built with `--node`.
    pub binaries: &'a Binaries,
    /// The control plane's directory; the node's goes inside it.
    pub dir: &'a Path,
    /// An admin kubeconfig for the kubelet, scheduler and controller-manager.
    pub kubeconfig: &'a Path,
    /// The CA of the apiserver's certificate, published to pods as `kube-root-ca.crt`.
    pub ca_file: PathBuf,
    /// The key that signs service-account tokens.
    pub service_account_key: PathBuf,
    /// A client to watch the Node turn Ready.
    pub client: kube::Client,
}

/// A running node; dropping it stops and removes all of it.
#[derive(Debug)]
pub struct Node {
    dir: PathBuf,
    socket: PathBuf,
    kubelet: Option<Supervised>,
    containerd: Option<Supervised>,
    registry: Option<Registry>,
    controllers: Vec<Supervised>,
    sysctls: Vec<(PathBuf, String)>,
    /// The shim sockets that were there before this node's containerd started.
    shim_sockets: Vec<PathBuf>,
}

impl Node {
    /// Starts the controllers, containerd and the kubelet, and waits for the Node to be Ready.
    pub(crate) async fn start(join: Joining<'_>) -> Result<Node, Error> {
        let started = Instant::now();
        let dir = join.dir.join("node");
        std::fs::create_dir_all(&dir).map_err(Error::io("creating the node's directory"))?;
        let mut node = Node {
            socket: dir.join("containerd/containerd.sock"),
            dir,
            kubelet: None,
            containerd: None,
            registry: None,
            controllers: Vec::new(),
            sysctls: Vec::new(),
            shim_sockets: list_dir(Path::new(SHIM_SOCKETS)),
        };
        node.controllers = node.start_controllers(&join)?;
        node.registry = Some(Registry::start_on_node(join.binaries).await?);
        node.containerd = Some(node.start_containerd(join.binaries).await?);
        node.prepare_cgroups()?;
        node.sysctls = KUBELET_SYSCTLS
            .iter()
            .map(|key| Path::new("/proc/sys").join(key))
            .filter_map(|path| Some((path.clone(), std::fs::read_to_string(path).ok()?)))
            .collect();
        node.kubelet = Some(node.start_kubelet(&join)?);
        node.wait_ready(&join.client).await?;
        eprintln!(
            "[node] {NODE_NAME} Ready at {} in {:.1} s",
            network::NODE_IP,
            started.elapsed().as_secs_f64()
        );
        Ok(node)
    }

    /// containerd's socket, for `ctr --address`.
    pub fn containerd_socket(&self) -> &Path {
        &self.socket
    }

    /// Imports a docker-archive tarball into the images the kubelet runs pods from, so a pod with
    /// `imagePullPolicy: Never` can use it.
    pub fn import_image(&self, archive: &Path) -> Result<(), Error> {
        let archive = archive.to_string_lossy();
        run("ctr", &self.ctr(&["images", "import", &archive]))?;
        Ok(())
    }

    /// Pushes a docker-archive tarball to the node's registry as `name` (`REPOSITORY:TAG`) with
    /// skopeo, and returns the reference pods pull it by (`10.213.0.1:5000/REPOSITORY:TAG`).
    pub fn push_image(&self, archive: &Path, name: &str) -> Result<String, Error> {
        let reference = format!("{REGISTRY_ADDRESS}/{name}");
        run(
            "skopeo",
            &[
                "copy",
                "--quiet",
                "--dest-tls-verify=false",
                &format!("docker-archive:{}", archive.display()),
                &format!("docker://{reference}"),
            ],
        )?;
        Ok(reference)
    }

    /// The node's image registry.
    pub fn registry(&self) -> &Registry {
        self.registry
            .as_ref()
            .expect("a started node has its registry")
    }

    fn ctr<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let socket = self.socket.to_str().expect("the node's directory is UTF-8");
        let mut all = vec!["--address", socket, "--namespace", "k8s.io"];
        all.extend_from_slice(args);
        all
    }

    fn spawn(
        &self,
        name: &'static str,
        program: &Path,
        args: &[String],
    ) -> Result<Supervised, Error> {
        let scratch = self.dir.join(format!("{name}.scratch"));
        std::fs::create_dir_all(&scratch)
            .map_err(Error::io(format!("creating {name}'s directory")))?;
        let log = self.dir.join(format!("{name}.log"));
        Supervised::spawn(name, program, args, &[], &scratch, log)
    }

    fn start_controllers(&self, join: &Joining<'_>) -> Result<Vec<Supervised>, Error> {
        let kubeconfig = format!("--kubeconfig={}", join.kubeconfig.display());
        let scheduler = self.spawn(
            "kube-scheduler",
            &join.binaries.kube_scheduler(),
            &[
                kubeconfig.clone(),
                "--leader-elect=false".into(),
                "--secure-port=0".into(),
            ],
        )?;
        let controller_manager = self.spawn(
            "kube-controller-manager",
            &join.binaries.kube_controller_manager(),
            &[
                kubeconfig,
                "--leader-elect=false".into(),
                "--secure-port=0".into(),
                format!("--root-ca-file={}", join.ca_file.display()),
                format!(
                    "--service-account-private-key-file={}",
                    join.service_account_key.display()
                ),
            ],
        )?;
        Ok(vec![scheduler, controller_manager])
    }

    async fn start_containerd(&self, binaries: &Binaries) -> Result<Supervised, Error> {
        let dir = self.dir.join("containerd");
        std::fs::create_dir_all(&dir).map_err(Error::io("creating containerd's directory"))?;
        let cni = Network::write_cni_config(&self.dir.join("cni"), &self.dir.join("ipam"))?;
        let config = containerd_config(&dir, &self.socket, cni.parent().expect("in a directory"));
        let config_path = dir.join("config.toml");
        std::fs::write(&config_path, config).map_err(Error::io("writing containerd's config"))?;
        let hosts = dir.join("certs.d").join(REGISTRY_ADDRESS);
        std::fs::create_dir_all(&hosts)
            .map_err(Error::io("creating containerd's hosts directory"))?;
        std::fs::write(hosts.join("hosts.toml"), registry_hosts())
            .map_err(Error::io("writing the registry's hosts.toml"))?;
        let containerd = self.spawn(
            "containerd",
            Path::new("containerd"),
            &["--config".into(), config_path.display().to_string()],
        )?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while run("ctr", &self.ctr(&["version"])).is_err() {
            if !containerd.running() || Instant::now() > deadline {
                return Err(node_error(
                    "containerd did not answer on its socket",
                    &containerd,
                ));
            }
            tokio::time::sleep(POLL).await;
        }
        let pause = self.dir.join("pause.tar");
        let pause_file = format!("{}:/pause", binaries.pause().display());
        run(
            "python3",
            &[
                ARCHIVE_SCRIPT,
                "--tag",
                PAUSE_IMAGE,
                "--output",
                &pause.to_string_lossy(),
                "--entrypoint",
                r#"["/pause"]"#,
                "--user",
                "65535:65535",
                &pause_file,
            ],
        )?;
        self.import_image(&pause)?;
        Ok(containerd)
    }

    /// Creates the pods' cgroup root in every hierarchy, with the cpuset its pods may use.
    fn prepare_cgroups(&self) -> Result<(), Error> {
        for hierarchy in hierarchies() {
            let root = hierarchy.join(CGROUP_ROOT);
            std::fs::create_dir_all(&root)
                .map_err(Error::io(format!("creating {}", root.display())))?;
            for file in ["cpuset.cpus", "cpuset.mems"] {
                if let Ok(value) = std::fs::read_to_string(hierarchy.join(file)) {
                    std::fs::write(root.join(file), value.trim())
                        .map_err(Error::io(format!("writing {}", root.join(file).display())))?;
                }
            }
        }
        Ok(())
    }

    fn start_kubelet(&self, join: &Joining<'_>) -> Result<Supervised, Error> {
        let root = self.dir.join("kubelet");
        let config = self.dir.join("kubelet.json");
        let settings = kubelet_config(&self.socket, &self.dir.join("pods"), &root);
        std::fs::write(&config, settings.to_string())
            .map_err(Error::io("writing the kubelet's config"))?;
        self.spawn(
            "kubelet",
            &join.binaries.kubelet(),
            &[
                format!("--config={}", config.display()),
                format!("--kubeconfig={}", join.kubeconfig.display()),
                format!("--hostname-override={NODE_NAME}"),
                format!("--node-ip={}", network::NODE_IP),
                format!("--root-dir={}", root.display()),
                format!("--cert-dir={}", root.join("pki").display()),
            ],
        )
    }

    async fn wait_ready(&self, client: &kube::Client) -> Result<(), Error> {
        let nodes: Api<NodeObject> = Api::all(client.clone());
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            for server in self.servers() {
                if !server.running() {
                    return Err(node_error("it exited", server));
                }
            }
            let ready = nodes.get_opt(NODE_NAME).await?.is_some_and(|node| {
                let conditions = node.status.and_then(|s| s.conditions).unwrap_or_default();
                conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
            });
            if ready {
                return Ok(());
            }
            if Instant::now() > deadline {
                let kubelet = self.kubelet.as_ref().expect("started");
                return Err(node_error("the Node was not Ready after 120 s", kubelet));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn servers(&self) -> impl Iterator<Item = &Supervised> {
        self.controllers
            .iter()
            .chain(&self.containerd)
            .chain(&self.kubelet)
    }

    fn stop(&mut self) {
        if let Some(mut kubelet) = self.kubelet.take() {
            kubelet.stop();
        }
        kill_cgroup_processes();
        kill_shims(&self.socket);
        if let Some(mut containerd) = self.containerd.take() {
            containerd.stop();
        }
        if let Some(mut registry) = self.registry.take() {
            registry.stop();
        }
        for mut controller in self.controllers.drain(..) {
            controller.stop();
        }
        unmount_under(&self.dir);
        remove_cgroups();
        remove_log_links(&self.dir);
        for (path, value) in self.sysctls.drain(..) {
            let _ = std::fs::write(path, value);
        }
        remove_new_entries(Path::new(SHIM_SOCKETS), &self.shim_sockets);
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop();
    }
}

fn node_error(what: &str, server: &Supervised) -> Error {
    Error::Node {
        reason: format!(
            "{what}; last lines of {}:\n{}",
            server.log().display(),
            server.log_tail(30)
        ),
    }
}

fn containerd_config(dir: &Path, socket: &Path, cni_dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#"version = 2
root = "{d}/root"
state = "{d}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[debug]
  level = "warn"

[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "{d}/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{cni}"
    max_conf_num = 1

  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{d}/certs.d"
"#,
        socket = socket.display(),
        cni = cni_dir.display(),
    )
}

/// containerd's `hosts.toml` for the node's registry: plain HTTP, pulls only.
fn registry_hosts() -> String {
    format!(
        "server = \"http://{REGISTRY_ADDRESS}\"\n\n[host.\"http://{REGISTRY_ADDRESS}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
    )
}

fn kubelet_config(socket: &Path, pod_logs: &Path, root: &Path) -> serde_json::Value {
    serde_json::json!({
        "kind": "KubeletConfiguration",
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        // This machine mounts cgroup v1 hierarchies only.
        "failCgroupV1": false,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": format!("/{CGROUP_ROOT}"),
        "failSwapOn": false,
        "containerRuntimeEndpoint": format!("unix://{}", socket.display()),
        "authentication": {"anonymous": {"enabled": true}, "webhook": {"enabled": false}},
        "authorization": {"mode": "AlwaysAllow"},
        "address": network::NODE_IP,
        "port": 10250,
        "readOnlyPort": 0,
        "healthzPort": 0,
        "podLogsDir": pod_logs,
        "volumePluginDir": root.join("volume-plugins"),
        // No eviction and no image garbage collection: a test machine's disk is not the node's.
        "evictionHard": {},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "enforceNodeAllocatable": [],
        "localStorageCapacityIsolation": false,
        "serializeImagePulls": false,
        "resolvConf": "/etc/resolv.conf",
    })
}

/// The cgroup hierarchies of this machine (`cpu`, `memory`, `pids`, the named `systemd`, and
/// the v2 `unified` one that runc also joins).
fn hierarchies() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(CGROUPS) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.path().join("cgroup.procs").is_file())
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Every cgroup under the pods' root in `hierarchy`, deepest first.
fn pod_cgroups(hierarchy: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![hierarchy.join(CGROUP_ROOT)];
    while let Some(dir) = pending.pop() {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            pending.extend(
                entries
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.path()),
            );
            found.push(dir);
        }
    }
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found
}

fn cgroup_pids() -> Vec<String> {
    let mut pids: Vec<String> = hierarchies()
        .iter()
        .flat_map(|h| pod_cgroups(h))
        .filter_map(|cgroup| std::fs::read_to_string(cgroup.join("cgroup.procs")).ok())
        .flat_map(|procs| procs.lines().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    pids.sort();
    pids.dedup();
    pids
}

/// Kills every process in the pods' cgroups, and waits (up to 10 s) until none is left.
fn kill_cgroup_processes() {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let pids = cgroup_pids();
        if pids.is_empty() || Instant::now() > deadline {
            return;
        }
        let mut args = vec!["-KILL"];
        args.extend(pids.iter().map(String::as_str));
        let _ = run("kill", &args);
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Kills the shims containerd started for this node (they outlive containerd by design).
fn kill_shims(socket: &Path) {
    let socket = socket.to_string_lossy();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("containerd-shim") && cmdline.contains(&*socket) {
            let _ = run("kill", &["-KILL", &name]);
        }
    }
}

/// The mount points at or under `dir`, deepest first.
pub(crate) fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut mounts: Vec<PathBuf> = table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|point| PathBuf::from(unescape_mount_point(point)))
        .filter(|point| point.starts_with(dir))
        .collect();
    mounts.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    mounts.dedup();
    mounts
}

/// `/proc/self/mountinfo` writes space, tab, newline and backslash as `\ooo` octal escapes.
fn unescape_mount_point(point: &str) -> String {
    let mut out = Vec::with_capacity(point.len());
    let bytes = point.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .and_then(|o| std::str::from_utf8(o).ok());
        match octal.and_then(|o| u8::from_str_radix(o, 8).ok()) {
            Some(byte) if bytes[i] == b'\\' => {
                out.push(byte);
                i += 4;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Unmounts everything under `dir` (network namespaces, volumes, snapshots, the kubelet's root).
fn unmount_under(dir: &Path) {
    for _ in 0..5 {
        let mounts = mounts_under(dir);
        if mounts.is_empty() {
            return;
        }
        for point in mounts {
            let _ = run("umount", &["--lazy", &point.to_string_lossy()]);
        }
    }
}

fn remove_cgroups() {
    for hierarchy in hierarchies() {
        for cgroup in pod_cgroups(&hierarchy) {
            let _ = std::fs::remove_dir(cgroup);
        }
    }
}

fn list_dir(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

/// Removes what appeared in `dir` since `before` was listed (the sockets of the shims this node
/// killed), then `dir` and its parent if that leaves them empty.
fn remove_new_entries(dir: &Path, before: &[PathBuf]) {
    for entry in list_dir(dir) {
        if before.binary_search(&entry).is_err() {
            let _ = std::fs::remove_file(entry);
        }
    }
    let _ = std::fs::remove_dir(dir);
    if let Some(parent) = dir.parent() {
        let _ = std::fs::remove_dir(parent);
    }
}

/// Removes the kubelet's links to this node's pod logs, and their directory once it is empty.
fn remove_log_links(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(CONTAINER_LOGS) else {
        return;
    };
    for entry in entries.flatten() {
        if std::fs::read_link(entry.path()).is_ok_and(|target| target.starts_with(dir)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    let _ = std::fs::remove_dir(CONTAINER_LOGS);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_unescaped_as_the_kernel_escaped_them() {
        assert_eq!(unescape_mount_point(r"/tmp/a\040b/c"), "/tmp/a b/c");
        assert_eq!(
            unescape_mount_point(r"/tmp/back\134slash"),
            r"/tmp/back\slash"
        );
        assert_eq!(
            unescape_mount_point(r"/tmp/trailing\04"),
            r"/tmp/trailing\04"
        );
    }

    #[test]
    fn the_root_of_this_process_is_a_mount_under_root_only() {
        assert!(mounts_under(Path::new("/")).contains(&PathBuf::from("/")));
        let dir = tempfile::tempdir().unwrap();
        assert!(mounts_under(dir.path()).is_empty());
    }
}
