//! `wasmop-envtest`: the test control plane from the shell (`tests/control-plane up|down|env`).
//!
//! `up` (`up --node`: with a node, see [`ControlPlane::start_with_node`]) starts a control plane in the background and records it in a state directory
//! (`$WASMOP_DEV_DIR`, default `~/.cache/wasmop/dev`); `env` prints the shell lines that point
//! `kubectl` at it; `down` stops it. `serve` runs one in the foreground until SIGINT or SIGTERM.
//! With `--registry`, `up` and `serve` also run an anonymous OCI registry (see [`Registry`]) and
//! `env` exports its address as `WASMOP_REGISTRY`; a node has its own, on its bridge, which pods
//! and containerd reach, and `env` exports that one.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use wasmop_envtest::{Binaries, ControlPlane, Registry, RegistryAuth, process_running};

/// Run a real kube-apiserver and etcd on loopback for wasmop's demo and tests.
#[derive(Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a control plane in the background (building the binaries on first use).
    Up(Shape),
    /// Stop the background control plane.
    Down,
    /// Print `export` lines for KUBECONFIG and a PATH with the matching kubectl.
    Env,
    /// Run a control plane in the foreground until SIGINT or SIGTERM.
    Serve(Shape),
}

/// What the control plane includes.
#[derive(clap::Args, Clone, Copy)]
struct Shape {
    /// Add a node (kubelet, containerd, scheduler, controller-manager), so pods run; needs root.
    #[arg(long)]
    node: bool,
    /// Add an anonymous OCI registry (CNCF Distribution, plain HTTP on loopback) for Wasm
    /// artifacts; `env` exports its address as WASMOP_REGISTRY. A node brings its own.
    #[arg(long)]
    registry: bool,
}

/// The variable `env` sets to the registry's address (`127.0.0.1:<port>`, or the node's).
const REGISTRY_VARIABLE: &str = "WASMOP_REGISTRY";
/// What `wasmop` reads for the registries it speaks plain HTTP to.
const PLAIN_HTTP_VARIABLE: &str = "WASMOP_REGISTRY_PLAIN_HTTP";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let state = StateDir::from_env()?;
    match Cli::parse().command {
        Command::Up(shape) => up(&state, shape).await,
        Command::Down => down(&state).await,
        Command::Env => {
            print!(
                "{}",
                state
                    .env()
                    .context("no control plane is up: run `tests/control-plane up`")?
            );
            Ok(())
        }
        Command::Serve(shape) => serve(&state, shape).await,
    }
}

async fn up(state: &StateDir, shape: Shape) -> anyhow::Result<()> {
    if let Some(pid) = state.running_pid() {
        eprintln!("[control-plane] already up (pid {pid})");
        return Ok(());
    }
    if shape.node {
        Binaries::locate_node().await?;
    } else {
        Binaries::locate().await?;
    }
    if shape.registry && !shape.node {
        Binaries::locate_registry().await?;
    }
    std::fs::create_dir_all(&state.dir)?;
    let log = std::fs::File::create(state.log())?;
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg("serve")
        .args(shape.node.then_some("--node"))
        .args(shape.registry.then_some("--registry"))
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()?;
    loop {
        if let Ok(env) = state.env() {
            let registry = env
                .lines()
                .find_map(|line| line.strip_prefix(&format!("export {REGISTRY_VARIABLE}=")));
            if let Some(address) = registry {
                eprintln!("[control-plane] registry on http://{address}");
            }
            eprintln!(
                "[control-plane] up; point kubectl at it with: eval \"$(tests/control-plane env)\""
            );
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            let log = std::fs::read_to_string(state.log()).unwrap_or_default();
            bail!("the control plane exited ({status}) while starting:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn serve(state: &StateDir, shape: Shape) -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let plane = if shape.node {
        ControlPlane::start_with_node().await?
    } else {
        ControlPlane::start().await?
    };
    let registry = if shape.registry && !shape.node {
        Some(Registry::start(RegistryAuth::Anonymous).await?)
    } else {
        None
    };
    std::fs::create_dir_all(&state.dir)?;
    std::fs::write(state.pid(), std::process::id().to_string())?;
    let mut env = format!(
        "export KUBECONFIG={}\nexport PATH=\"{}:$PATH\"\n",
        plane.kubeconfig_path().display(),
        plane.binaries().dir().display()
    );
    if let Some(node) = plane.node() {
        // `ctr` reads it: images imported with `ctr -n k8s.io images import` reach the kubelet.
        let socket = node.containerd_socket().display();
        env.push_str(&format!("export CONTAINERD_ADDRESS={socket}\n"));
    }
    let registry_address = registry
        .as_ref()
        .or(plane.node().map(|node| node.registry()))
        .map(|registry| registry.address().to_owned());
    if let Some(address) = &registry_address {
        env.push_str(&format!("export {REGISTRY_VARIABLE}={address}\n"));
        // It serves plain HTTP: wasmop push, pull, sign and run read this for their
        // --registry-plain-http, so no command needs the flag.
        env.push_str(&format!("export {PLAIN_HTTP_VARIABLE}={address}\n"));
    }
    std::fs::write(state.env_file(), env)?;
    let [etcd, apiserver] = plane.pids();
    let registry_field = registry_address
        .map(|address| format!(" registry={address}"))
        .unwrap_or_default();
    println!(
        "ready server={} kubeconfig={} dir={} etcd-pid={etcd} apiserver-pid={apiserver}{registry_field}",
        plane.server_url(),
        plane.kubeconfig_path().display(),
        plane.dir().display()
    );
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate.recv() => {}
    }
    state.clear();
    drop(registry);
    drop(plane);
    eprintln!("[control-plane] stopped");
    Ok(())
}

async fn down(state: &StateDir) -> anyhow::Result<()> {
    let Some(pid) = state.running_pid() else {
        state.clear();
        eprintln!("[control-plane] not running");
        return Ok(());
    };
    let status = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status()?;
    if !status.success() {
        bail!("kill {pid} failed: {status}");
    }
    // A node stops its kubelet, pods and runtime first.
    for _ in 0..600 {
        if !process_running(pid) {
            state.clear();
            eprintln!("[control-plane] down");
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the control plane (pid {pid}) did not stop within 60 s")
}

/// Where the background control plane records its pid and environment.
struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    fn from_env() -> anyhow::Result<Self> {
        let dir = match std::env::var_os("WASMOP_DEV_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => {
                let home = std::env::var_os("HOME").context("HOME is not set")?;
                PathBuf::from(home).join(".cache/wasmop/dev")
            }
        };
        Ok(StateDir { dir })
    }

    fn pid(&self) -> PathBuf {
        self.dir.join("pid")
    }

    fn env_file(&self) -> PathBuf {
        self.dir.join("env")
    }

    fn log(&self) -> PathBuf {
        self.dir.join("control-plane.log")
    }

    fn env(&self) -> std::io::Result<String> {
        std::fs::read_to_string(self.env_file())
    }

    fn running_pid(&self) -> Option<u32> {
        let pid = std::fs::read_to_string(self.pid())
            .ok()?
            .trim()
            .parse()
            .ok()?;
        process_running(pid).then_some(pid)
    }

    fn clear(&self) {
        let _ = std::fs::remove_file(self.pid());
        let _ = std::fs::remove_file(self.env_file());
    }
}
