//! Rust plugins: each crate (or every member of a workspace) built for wasm32-wasip2 in release
//! mode into `<package>.wasm`, in `<checkout>/target/guests` (or `WASMOP_GUEST_TARGET_DIR`, for a
//! build with other settings). The toolchain is rustup's wasm32-wasip2 target when it is
//! installed; otherwise Debian's rustc-web, which builds the standard library from rust-web-src
//! (`-Zbuild-std`). `WASMOP_GUEST_TOOLCHAIN=rustup|debian` forces one.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::step::{self, BuildError, say};
use super::{Built, Checkout, Language, Plugin};

const TARGET: &str = "wasm32-wasip2";

/// Guests start with heap room, so a fresh instance's first allocations need no `memory.grow`
/// (a 4 KiB cache get in a fresh instance: ~63 µs without, ~44 µs with). Untouched pages of the
/// initial memory cost nothing: the host maps them copy-on-write.
const INITIAL_MEMORY: usize = 4 << 20;

const HINT: &str = "install either rustup's target (rustup target add wasm32-wasip2) or Debian's toolchain (apt-get install rustc-web cargo-web rust-web-src lld-22 wasi-libc); guest-sdk/rust/install-toolchain installs one";

/// A toolchain that builds wasm32-wasip2: the cargo to run, its arguments and environment.
struct Toolchain {
    cargo: PathBuf,
    args: Vec<String>,
    env: Vec<(String, std::ffi::OsString)>,
    described: String,
}

/// Builds `plugins`; with `single`, refuses a workspace that would build more than one.
pub(super) fn build(
    checkout: &Checkout,
    plugins: &[Plugin],
    single: bool,
    done: &mut dyn FnMut(Built) -> Result<(), BuildError>,
) -> Result<(), BuildError> {
    let target_dir = std::env::var_os("WASMOP_GUEST_TARGET_DIR")
        .map_or_else(|| checkout.target().join("guests"), PathBuf::from);
    let toolchain = toolchain(&target_dir)?;
    for plugin in plugins {
        let started = Instant::now();
        let (scope, packages) = packages(&toolchain, &plugin.dir)?;
        if single && packages.len() != 1 {
            return Err(BuildError::OutputNeedsOne);
        }
        let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        let dir = plugin.dir.display();
        say(
            Language::Rust,
            format!(
                "building {dir} ({}) with {}",
                names.join(", "),
                toolchain.described
            ),
        );
        let mut cargo = Command::new(&toolchain.cargo);
        cargo
            .args(&toolchain.args)
            .args(&scope)
            .envs(toolchain.env.iter().map(|(k, v)| (k, v)))
            .env("CARGO_TARGET_DIR", &target_dir)
            .current_dir(&plugin.dir);
        step::run(Language::Rust, "cargo build", &plugin.dir, &mut cargo)?;
        for name in names {
            let file = target_dir
                .join(TARGET)
                .join("release")
                .join(format!("{}.wasm", name.replace('-', "_")));
            done(Built {
                file,
                name: format!("{name}.wasm"),
                took: started.elapsed(),
            })?;
        }
    }
    Ok(())
}

/// rustup's toolchain when its target is installed, else Debian's, as `WASMOP_GUEST_TOOLCHAIN`
/// allows.
fn toolchain(target_dir: &Path) -> Result<Toolchain, BuildError> {
    let missing = |missing: String| BuildError::Toolchain {
        language: Language::Rust,
        missing,
        hint: HINT.to_owned(),
    };
    let forced = std::env::var("WASMOP_GUEST_TOOLCHAIN").unwrap_or_default();
    let rustflags = |more: &str| {
        let own = format!("-C link-arg=--initial-memory={INITIAL_MEMORY}{more}");
        match std::env::var("RUSTFLAGS") {
            Ok(flags) if !flags.is_empty() => format!("{flags} {own}"),
            _ => own,
        }
    };
    let build = ["build", "--release", "--target", TARGET].map(str::to_owned);
    match forced.as_str() {
        "" | "rustup" if rustup_ready() => Ok(Toolchain {
            cargo: PathBuf::from("cargo"),
            args: build.to_vec(),
            env: vec![("RUSTFLAGS".into(), rustflags("").into())],
            described: format!("rustup ({TARGET} target)"),
        }),
        "rustup" => Err(missing(format!(
            "WASMOP_GUEST_TOOLCHAIN=rustup but the {TARGET} target is not installed"
        ))),
        "" | "debian" => {
            let wasm_ld = debian_missing().map_err(|what| missing(what.join(", ")))?;
            let bin = target_dir.join("wasm-bin");
            link_wasm_ld(&bin, &wasm_ld)?;
            let mut args = build.to_vec();
            args.push("-Zbuild-std=std,panic_abort".to_owned());
            Ok(Toolchain {
                cargo: PathBuf::from("/usr/bin/cargo"),
                args,
                env: vec![
                    ("PATH".into(), step::path_with(&bin)),
                    ("RUSTC".into(), "/usr/bin/rustc".into()),
                    ("RUSTC_BOOTSTRAP".into(), "1".into()),
                    // A wrapper set for rustup's rustc (clippy-driver, say) cannot drive Debian's.
                    ("RUSTC_WORKSPACE_WRAPPER".into(), "".into()),
                    (
                        "RUSTFLAGS".into(),
                        rustflags(" -L /usr/lib/wasm32-wasi").into(),
                    ),
                ],
                described: "Debian rustc (-Zbuild-std)".to_owned(),
            })
        }
        other => Err(missing(format!(
            "WASMOP_GUEST_TOOLCHAIN must be rustup or debian, not '{other}'"
        ))),
    }
}

fn rustup_ready() -> bool {
    step::output(Command::new("rustup").args(["target", "list", "--installed"]))
        .is_some_and(|installed| installed.lines().any(|line| line == TARGET))
}

/// Debian's wasm-ld, or what of Debian's toolchain is missing.
fn debian_missing() -> Result<PathBuf, Vec<&'static str>> {
    let mut missing = Vec::new();
    let mut need = |present: bool, what| {
        if !present {
            missing.push(what);
        }
    };
    need(
        Path::new("/usr/bin/rustc").is_file(),
        "/usr/bin/rustc (rustc-web)",
    );
    need(
        Path::new("/usr/bin/cargo").is_file(),
        "/usr/bin/cargo (cargo-web)",
    );
    let sources = Path::new("/usr/lib/rustlib/src/rust/library").is_dir();
    need(sources, "the std sources (rust-web-src)");
    let libc = Path::new("/usr/lib/wasm32-wasi/libc.a").is_file();
    need(libc, "/usr/lib/wasm32-wasi/libc.a (wasi-libc)");
    let wasm_ld = debian_wasm_ld();
    need(wasm_ld.is_some(), "wasm-ld (lld-22)");
    match (missing.is_empty(), wasm_ld) {
        (true, Some(wasm_ld)) => Ok(wasm_ld),
        _ => Err(missing),
    }
}

/// Debian's wasm-ld, which is versioned (`wasm-ld-22`).
fn debian_wasm_ld() -> Option<PathBuf> {
    let plain = PathBuf::from("/usr/bin/wasm-ld");
    if plain.is_file() {
        return Some(plain);
    }
    (20..30)
        .map(|version| PathBuf::from(format!("/usr/bin/wasm-ld-{version}")))
        .find(|candidate| candidate.is_file())
}

/// `bin/wasm-ld` pointing at `wasm_ld`: rustc looks for plain `wasm-ld` on PATH.
fn link_wasm_ld(bin: &Path, wasm_ld: &Path) -> Result<(), BuildError> {
    let link = bin.join("wasm-ld");
    let io = |source| BuildError::Io {
        path: link.clone(),
        source,
    };
    std::fs::create_dir_all(bin).map_err(io)?;
    if std::fs::read_link(&link).ok().as_deref() == Some(wasm_ld) {
        return Ok(());
    }
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(wasm_ld, &link).map_err(io)
}

/// A package of a plugin's manifest.
#[derive(Debug, serde::Deserialize)]
struct Package {
    name: String,
    manifest_path: PathBuf,
}

/// The packages `dir` builds, with cargo's arguments for them: its own (`--package`), when its
/// manifest is a package's, else every member of its workspace (`--workspace`).
fn packages(toolchain: &Toolchain, dir: &Path) -> Result<(Vec<String>, Vec<Package>), BuildError> {
    #[derive(serde::Deserialize)]
    struct Metadata {
        packages: Vec<Package>,
    }
    let failed = || BuildError::Step {
        language: Language::Rust,
        step: "cargo metadata".to_owned(),
        dir: dir.to_owned(),
    };
    let mut metadata = Command::new(&toolchain.cargo);
    metadata
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .envs(toolchain.env.iter().map(|(k, v)| (k, v)))
        .current_dir(dir);
    let text = step::output(&mut metadata).ok_or_else(failed)?;
    let metadata: Metadata = serde_json::from_str(&text).map_err(|_| failed())?;
    let mut packages = metadata.packages;
    if let Some(at) = packages.iter().position(|package| own(dir, package)) {
        let own = packages.swap_remove(at);
        return Ok((vec!["--package".to_owned(), own.name.clone()], vec![own]));
    }
    match packages.is_empty() {
        true => Err(BuildError::NoPlugin {
            dir: dir.to_owned(),
            only: Some(Language::Rust),
        }),
        false => Ok((vec!["--workspace".to_owned()], packages)),
    }
}

/// Whether `package` is the one whose manifest is `dir`'s.
fn own(dir: &Path, package: &Package) -> bool {
    let manifest = dir.join("Cargo.toml");
    package.manifest_path == manifest
        || package.manifest_path.canonicalize().ok() == manifest.canonicalize().ok()
}
