//! One running control plane: etcd and kube-apiserver on loopback, plus what tests need of it;
//! with a [`Node`], kube-apiserver listens on the node's network instead, for pods to reach.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::audit::{self, AuditEvent, AuditLog};
use crate::certs::{self, ADMIN_USER};
use crate::network::{self, Network};
use crate::node::{self, Joining, Node};
use crate::ports::free_ports;
use crate::supervisor::Supervised;
use crate::{Binaries, Error};

const READY_TIMEOUT: Duration = Duration::from_secs(120);
const ESTABLISHED_TIMEOUT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(200);
const START_ATTEMPTS: u32 = 3;
const FIELD_MANAGER: &str = "wasmop-envtest";

/// A running etcd + kube-apiserver pair; dropping it stops both and removes their files.
#[derive(Debug)]
pub struct ControlPlane {
    binaries: Binaries,
    dir: PathBuf,
    server: String,
    kubeconfig: PathBuf,
    apiserver: Mutex<Supervised>,
    apiserver_args: Vec<String>,
    restarts: Mutex<u32>,
    etcd: Supervised,
    etcd_port: u16,
    node: Option<Node>,
    /// Held until every server is stopped: the next node's apiserver binds the same address.
    network: Option<Network>,
}

/// Where kube-apiserver listens.
#[derive(Debug, Clone, Copy)]
enum Listen {
    /// On 127.0.0.1, at a free port.
    Loopback,
    /// On the node network's address, at the port pods are told.
    Node,
}

impl ControlPlane {
    /// Starts a new control plane and returns once kube-apiserver answers `/readyz` with `ok`.
    pub async fn start() -> Result<Self, Error> {
        Self::start_tuned(&[]).await
    }

    /// [`ControlPlane::start`] with `flags` added to kube-apiserver's command line (a tiny
    /// `--max-requests-inflight`, say).
    pub async fn start_tuned(flags: &[&str]) -> Result<Self, Error> {
        let binaries = Binaries::locate().await?;
        let mut attempt = 1;
        loop {
            match Self::start_with(binaries.clone(), flags, Listen::Loopback).await {
                Err(e) if e.is_port_clash() && attempt < START_ATTEMPTS => attempt += 1,
                result => return result,
            }
        }
    }

    /// A control plane with a node: kube-scheduler, kube-controller-manager, containerd and a
    /// kubelet (see [`Node`]), so Deployments make pods and pods run. kube-apiserver listens on
    /// the node network's address ([`network::NODE_IP`]:[`network::APISERVER_PORT`]), which pods
    /// reach and which exists only on this machine. Needs root; one runs per machine at a time.
    pub async fn start_with_node() -> Result<Self, Error> {
        let binaries = Binaries::locate_node().await?;
        let network = Network::create()?;
        // Webhooks and aggregated APIs are called at an endpoint of their Service (there is no
        // kube-proxy); the kubelet at its InternalIP (its hostname resolves nowhere).
        let flags = [
            "--enable-aggregator-routing=true",
            "--kubelet-preferred-address-types=InternalIP",
        ];
        let mut plane = Self::start_with(binaries, &flags, Listen::Node).await?;
        plane.network = Some(network);
        let joining = Joining {
            binaries: &plane.binaries,
            dir: &plane.dir,
            kubeconfig: &plane.kubeconfig,
            ca_file: plane.dir.join("ca.crt"),
            service_account_key: plane.dir.join("service-account.key"),
            client: plane.client().await?,
        };
        let node = Node::start(joining).await?;
        plane.node = Some(node);
        Ok(plane)
    }

    /// Starts kube-controller-manager running only its garbage collector against this control
    /// plane (building it first with `tests/k8s/build.sh --controller-manager` if this machine
    /// has none); it stops when the returned process is dropped.
    pub async fn start_garbage_collector(&self) -> Result<Supervised, Error> {
        let binaries = Binaries::locate_controller_manager().await?;
        let dir = tempfile::Builder::new()
            .prefix("wasmop-garbage-collector-")
            .tempdir()
            .map_err(Error::io("creating the garbage collector's directory"))?
            .keep();
        let args = [
            format!("--kubeconfig={}", self.kubeconfig.display()),
            "--controllers=garbage-collector-controller".to_owned(),
            "--leader-elect=false".to_owned(),
            "--secure-port=0".to_owned(),
            "--concurrent-gc-syncs=4".to_owned(),
        ];
        let log = self.dir.join("kube-controller-manager.log");
        Supervised::spawn(
            "kube-controller-manager",
            &binaries.kube_controller_manager(),
            &args,
            &go_env(),
            &dir,
            log,
        )
    }

    /// The node, when started with [`ControlPlane::start_with_node`].
    pub fn node(&self) -> Option<&Node> {
        self.node.as_ref()
    }

    async fn start_with(binaries: Binaries, flags: &[&str], listen: Listen) -> Result<Self, Error> {
        let started = Instant::now();
        let dir = tempfile::Builder::new()
            .prefix("wasmop-control-plane-")
            .tempdir()
            .map_err(Error::io("creating the control plane's directory"))?
            .keep();
        let [etcd_port, peer_port, free_port] = free_ports()?;
        let (host, api_port) = match listen {
            Listen::Loopback => ("127.0.0.1", free_port),
            Listen::Node => (network::NODE_IP, network::APISERVER_PORT),
        };
        let files = certs::generate(&dir, host)?;
        let etcd = Supervised::spawn(
            "etcd",
            &binaries.etcd(),
            &etcd_args(&dir, etcd_port, peer_port),
            &go_env(),
            &dir,
            dir.join("etcd.log"),
        )?;
        let mut apiserver_args = apiserver_args(&files, etcd_port, host, api_port);
        apiserver_args.extend(audit::configure(&dir)?);
        apiserver_args.extend(flags.iter().map(|flag| flag.to_string()));
        let apiserver = spawn_apiserver(&binaries, &apiserver_args, &dir, 0)?;
        let server = format!("https://{host}:{api_port}");
        let kubeconfig = dir.join("kubeconfig");
        let plane = ControlPlane {
            binaries,
            dir,
            server,
            kubeconfig,
            apiserver: Mutex::new(apiserver),
            apiserver_args,
            restarts: Mutex::new(0),
            etcd,
            etcd_port,
            node: None,
            network: None,
        };
        plane.write_kubeconfig(&files)?;
        eprintln!(
            "[control-plane] etcd on 127.0.0.1:{etcd_port}, kube-apiserver on {}",
            plane.server
        );
        plane.wait_ready().await?;
        eprintln!(
            "[control-plane] ready in {:.1} s (kubeconfig {})",
            started.elapsed().as_secs_f64(),
            plane.kubeconfig.display()
        );
        Ok(plane)
    }

    fn write_kubeconfig(&self, files: &certs::CertFiles) -> Result<(), Error> {
        let ca_file = self.dir.join("ca.crt");
        std::fs::write(&ca_file, &files.ca_pem).map_err(Error::io("writing ca.crt"))?;
        self.write_token_kubeconfig(&self.kubeconfig, ADMIN_USER, &files.admin_token)
    }

    fn write_token_kubeconfig(&self, path: &Path, user: &str, token: &str) -> Result<(), Error> {
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "wasmop-envtest", "cluster": {
                "server": self.server,
                "certificate-authority": self.dir.join("ca.crt"),
            }}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "wasmop-envtest", "context": {
                "cluster": "wasmop-envtest",
                "user": user,
            }}],
            "current-context": "wasmop-envtest",
        });
        std::fs::write(path, config.to_string())
            .map_err(Error::io(format!("writing {}", path.display())))
    }

    /// Writes a kubeconfig that authenticates as `user` with a bearer `token` (e.g. a
    /// ServiceAccount's, from `kubectl create token`) and returns its path.
    pub fn kubeconfig_for(&self, user: &str, token: &str) -> Result<PathBuf, Error> {
        let path = self.dir.join(format!("{user}.kubeconfig"));
        self.write_token_kubeconfig(&path, user, token)?;
        Ok(path)
    }

    async fn wait_ready(&self) -> Result<(), Error> {
        let client = self.client().await?;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if !self.etcd.running() {
                return Err(self.etcd.exited_error());
            }
            if let Some(exited) = self.apiserver_exited() {
                return Err(exited);
            }
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .expect("valid request");
            let last = match client.request_text(request).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => body,
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                return Err(Error::NotReady {
                    seconds: READY_TIMEOUT.as_secs(),
                    last,
                    log_tail: self.apiserver().log_tail(30),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// A new admin client bound to the calling task's tokio runtime.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        self.client_from(&self.kubeconfig).await
    }

    /// A new client speaking as the user of `kubeconfig` (see [`ControlPlane::kubeconfig_for`]).
    pub async fn client_from(&self, kubeconfig: &Path) -> Result<kube::Client, Error> {
        let kubeconfig_error = |source| Error::Kubeconfig {
            path: kubeconfig.to_owned(),
            source,
        };
        let kubeconfig = Kubeconfig::read_from(kubeconfig).map_err(kubeconfig_error)?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(kubeconfig_error)?;
        Ok(kube::Client::try_from(config)?)
    }

    /// `kubectl` at the apiserver's version, pointed at this control plane as the admin.
    pub fn kubectl(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(self.binaries.kubectl());
        command.env("KUBECONFIG", &self.kubeconfig);
        command
    }

    /// Runs `kubectl args` as the admin with `stdin` as its input; returns what it printed, or
    /// fails with its stderr.
    pub async fn run_kubectl(&self, args: &[&str], stdin: Option<&str>) -> Result<String, Error> {
        use tokio::io::AsyncWriteExt;
        let mut child = self
            .kubectl()
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(Error::io("starting kubectl"))?;
        if let Some(mut input) = child.stdin.take() {
            let written = input.write_all(stdin.unwrap_or_default().as_bytes()).await;
            written.map_err(Error::io("writing to kubectl"))?;
        }
        let output = child
            .wait_with_output()
            .await
            .map_err(Error::io("running kubectl"))?;
        if !output.status.success() {
            return Err(Error::Kubectl {
                args: args.join(" "),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
            });
        }
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    }

    /// Creates a namespace named `<prefix>-<random>` for one test's objects and returns its name.
    pub async fn create_namespace(&self, prefix: &str) -> Result<String, Error> {
        let name = format!("{prefix}-{}", certs::random_hex(4)?);
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        let api: Api<Namespace> = Api::all(self.client().await?);
        api.create(&PostParams::default(), &namespace).await?;
        Ok(name)
    }

    /// Applies every CustomResourceDefinition in the given YAML files (several documents per file
    /// allowed) and waits until each is Established. Returns the CRDs' names.
    pub async fn install_crds(&self, files: &[impl AsRef<Path>]) -> Result<Vec<String>, Error> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client().await?);
        let mut names = Vec::new();
        for file in files {
            for crd in read_crds(file.as_ref())? {
                let name = crd.metadata.name.clone().unwrap_or_default();
                let params = PatchParams::apply(FIELD_MANAGER).force();
                api.patch(&name, &params, &Patch::Apply(&crd)).await?;
                wait_established(&api, &name, file.as_ref()).await?;
                names.push(name);
            }
        }
        Ok(names)
    }

    /// Every event of the apiserver's audit log so far, oldest first (see [`AuditEvent`]).
    pub fn audit(&self) -> Result<Vec<AuditEvent>, Error> {
        self.audit_log().read_new()
    }

    /// A reader of the apiserver's audit log from its start; each [`AuditLog::read_new`] returns
    /// only the events logged since the last.
    pub fn audit_log(&self) -> AuditLog {
        AuditLog::new(audit::log_path(&self.dir))
    }

    /// The apiserver's URL, `https://127.0.0.1:<port>` (with a node, on the node's address).
    pub fn server_url(&self) -> &str {
        &self.server
    }

    /// The admin kubeconfig (valid while this control plane runs).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The directory holding certificates, etcd's data, both logs and the audit log; removed on
    /// drop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The binaries this control plane runs (and the matching `kubectl`).
    pub fn binaries(&self) -> &Binaries {
        &self.binaries
    }

    /// The pids of etcd and kube-apiserver.
    pub fn pids(&self) -> [u32; 2] {
        [self.etcd.pid(), self.apiserver().pid()]
    }

    fn apiserver(&self) -> std::sync::MutexGuard<'_, Supervised> {
        self.apiserver.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn apiserver_exited(&self) -> Option<Error> {
        let apiserver = self.apiserver();
        (!apiserver.running()).then(|| apiserver.exited_error())
    }

    /// Kills kube-apiserver with SIGKILL, as a crash would, and starts it again on the same port
    /// and etcd; returns once it is ready again. Clients reconnect on their own.
    pub async fn restart_apiserver(&self) -> Result<(), Error> {
        let restart = {
            let mut restarts = self.restarts.lock().unwrap_or_else(|e| e.into_inner());
            *restarts += 1;
            *restarts
        };
        {
            let mut apiserver = self.apiserver();
            kill(apiserver.pid(), "-KILL");
            apiserver.stop();
            *apiserver = spawn_apiserver(&self.binaries, &self.apiserver_args, &self.dir, restart)?;
        }
        eprintln!("[control-plane] kube-apiserver killed and started again");
        self.wait_ready().await
    }

    /// Compacts etcd's history up to its current revision, as the apiserver does every five
    /// minutes, so a watch resuming from an older resourceVersion gets 410 Gone; returns the
    /// revision.
    pub async fn compact_etcd(&self) -> Result<u64, Error> {
        let range = etcd_call(self.etcd_port, "/v3/kv/range", r#"{"key":"L3JlZ2lzdHJ5"}"#).await?;
        let revision: u64 = range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| etcd_error(format!("no revision in {range}")))?;
        let compaction = format!(r#"{{"revision":"{revision}","physical":true}}"#);
        etcd_call(self.etcd_port, "/v3/kv/compaction", &compaction).await?;
        eprintln!("[control-plane] etcd compacted at revision {revision}");
        Ok(revision)
    }
}

/// Starts kube-apiserver for the `restart`th time. Its supervisor removes only a directory of
/// its own when it stops, so a restart keeps etcd's data; the control plane's directory goes
/// with etcd's supervisor or on drop.
fn spawn_apiserver(
    binaries: &Binaries,
    args: &[String],
    dir: &Path,
    restart: u32,
) -> Result<Supervised, Error> {
    let scratch = dir.join(format!("kube-apiserver.{restart}"));
    std::fs::create_dir_all(&scratch).map_err(Error::io("creating kube-apiserver's directory"))?;
    let log = match restart {
        0 => dir.join("kube-apiserver.log"),
        n => dir.join(format!("kube-apiserver.{n}.log")),
    };
    Supervised::spawn(
        "kube-apiserver",
        &binaries.kube_apiserver(),
        args,
        &go_env(),
        &scratch,
        log,
    )
}

fn kill(pid: u32, signal: &str) {
    let _ = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
}

fn etcd_error(reason: String) -> Error {
    Error::Io {
        context: "calling etcd".to_owned(),
        source: std::io::Error::other(reason),
    }
}

/// POSTs `body` to etcd's JSON gateway at `path` on loopback; returns the JSON answer. HTTP/1.0
/// keeps the answer unchunked.
async fn etcd_call(port: u16, path: &str, body: &str) -> Result<serde_json::Value, Error> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(Error::io("connecting to etcd"))?;
    let request = format!(
        "POST {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(Error::io("writing to etcd"))?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .map_err(Error::io("reading etcd's answer"))?;
    let (head, answer) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    if head.split(' ').nth(1) != Some("200") {
        return Err(etcd_error(format!("{path} answered {response}")));
    }
    serde_json::from_str(answer.trim()).map_err(|e| etcd_error(format!("{path}: {e}: {answer}")))
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        drop(self.node.take());
        self.apiserver().stop();
        self.etcd.stop();
        drop(self.network.take());
        // Never recurse into what a pod mounted: a directory the node could not unmount stays.
        let mounted = node::mounts_under(&self.dir);
        if mounted.is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!(
                "[control-plane] left {} behind: still mounted: {mounted:?}",
                self.dir.display()
            );
        }
    }
}

fn read_crds(path: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let crd_error = |reason: String| Error::Crd {
        path: path.to_owned(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| crd_error(e.to_string()))?;
    let crds: Vec<CustomResourceDefinition> =
        serde_saphyr::from_multiple(&text).map_err(|e| crd_error(e.to_string()))?;
    if crds.is_empty() {
        return Err(crd_error("holds no CustomResourceDefinition".to_owned()));
    }
    Ok(crds)
}

async fn wait_established(
    api: &Api<CustomResourceDefinition>,
    name: &str,
    file: &Path,
) -> Result<(), Error> {
    let deadline = Instant::now() + ESTABLISHED_TIMEOUT;
    loop {
        let crd = api.get(name).await?;
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        if conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Crd {
                path: file.to_owned(),
                reason: format!(
                    "{name} not Established after {ESTABLISHED_TIMEOUT:?}: {conditions:?}"
                ),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The Go runtime settings etcd and kube-apiserver run with: a garbage-collection target of 400%
/// unless `GOGC` is set. With the default 100% the apiserver's collector takes about a fifth of
/// its CPU under load; on a 2-core machine memory is the cheaper resource.
fn go_env() -> Vec<(&'static str, &'static str)> {
    if std::env::var_os("GOGC").is_some() {
        Vec::new()
    } else {
        vec![("GOGC", "400")]
    }
}

fn etcd_args(dir: &Path, client_port: u16, peer_port: u16) -> Vec<String> {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    vec![
        "--name=default".into(),
        format!("--data-dir={}", dir.join("etcd").display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=default={peer}"),
        "--unsafe-no-fsync=true".into(),
        "--log-level=warn".into(),
    ]
}

fn apiserver_args(files: &certs::CertFiles, etcd_port: u16, host: &str, port: u16) -> Vec<String> {
    vec![
        format!("--etcd-servers=http://127.0.0.1:{etcd_port}"),
        format!("--bind-address={host}"),
        format!("--advertise-address={host}"),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", files.serving_cert.display()),
        format!("--tls-private-key-file={}", files.serving_key.display()),
        format!("--token-auth-file={}", files.token_file.display()),
        format!(
            "--service-account-key-file={}",
            files.service_account_public_key.display()
        ),
        format!(
            "--service-account-signing-key-file={}",
            files.service_account_key.display()
        ),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        "--service-cluster-ip-range=10.96.0.0/16".into(),
        "--endpoint-reconciler-type=none".into(),
        "--authorization-mode=RBAC".into(),
        "--allow-privileged=true".into(),
        "--profiling=false".into(),
    ]
}
