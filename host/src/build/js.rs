//! TypeScript and JavaScript plugins: type-checked with tsc (when the project has a
//! tsconfig.json), `src/index.ts` (or `src/index.js`) bundled by esbuild into one ES module, and
//! that turned into a component by componentize-js against the world `webhook-reconciler`. The
//! component embeds the JS engine (StarlingMonkey) and imports no `wasi:http`. The tools are the
//! SDK's own, installed into `guest-sdk/js/node_modules` by `guest-sdk/js/install-toolchain`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use super::step::{self, BuildError, say};
use super::{Built, Checkout, Language, Plugin};

const HINT: &str = "run guest-sdk/js/install-toolchain (npm ci of componentize-js 0.23, jco 1.35, esbuild, TypeScript and yaml into guest-sdk/js/node_modules)";

/// Builds `plugins` with the SDK's esbuild and componentize-js.
pub(super) fn build(
    checkout: &Checkout,
    plugins: &[Plugin],
    done: &mut dyn FnMut(Built) -> Result<(), BuildError>,
) -> Result<(), BuildError> {
    let sdk = checkout.sdk(Language::Js);
    let bin = sdk.join("node_modules/.bin");
    require(&sdk, &bin)?;
    say(
        Language::Js,
        "generating TypeScript types from wit/ and checking the SDK ...",
    );
    let mut types = Command::new("node");
    types
        .arg(sdk.join("tools/wit-types.mjs"))
        .arg(checkout.root.join("wit"))
        .arg("webhook-reconciler")
        .arg(sdk.join("generated/wit"));
    step::run(Language::Js, "generating types from wit/", &sdk, &mut types)?;
    type_check(&bin, &sdk)?;
    for plugin in plugins {
        let started = Instant::now();
        say(
            Language::Js,
            format!("building {} ...", plugin.dir.display()),
        );
        type_check(&bin, &plugin.dir)?;
        let stage = step::Stage::new(&checkout.target().join("js"), &plugin.name)?;
        let mut bundle = Command::new("node");
        bundle
            .arg(sdk.join("tools/bundle.mjs"))
            .arg("component")
            .arg(&plugin.dir)
            .arg(stage.join("app.js"));
        step::run(Language::Js, "bundling", &plugin.dir, &mut bundle)?;
        // componentize-js reads the WIT from a path under its working directory.
        copy_dir(&checkout.root.join("wit"), &stage.join("wit"))?;
        let mut componentize = Command::new(bin.join("componentize-js"));
        componentize
            .args(["app.js", "--wit", "wit", "-n", "webhook-reconciler"])
            .args(["-d", "http", "fetch-event", "-o", "component.wasm"])
            .current_dir(&stage);
        step::run(
            Language::Js,
            "componentize-js",
            &plugin.dir,
            &mut componentize,
        )?;
        done(Built {
            file: stage.join("component.wasm"),
            name: format!("{}-js.wasm", plugin.name),
            took: started.elapsed(),
        })?;
    }
    Ok(())
}

/// Refuses a missing Node.js (or one older than 20) or a missing SDK tool.
fn require(sdk: &Path, bin: &Path) -> Result<(), BuildError> {
    let missing = |missing: String, hint: &str| BuildError::Toolchain {
        language: Language::Js,
        missing,
        hint: hint.to_owned(),
    };
    let major = step::output(Command::new("node").args(["-p", "process.versions.node"]))
        .ok_or_else(|| missing("Node.js is not installed".to_owned(), "install Node.js 20 or newer (e.g. apt-get install nodejs npm), then run guest-sdk/js/install-toolchain"))?;
    let major: u32 = major
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 20 {
        return Err(missing(
            format!("Node.js {major} is too old"),
            "install Node.js 20 or newer",
        ));
    }
    let tools = ["componentize-js", "esbuild", "tsc"].map(|tool| (tool, bin.join(tool)));
    let modules = [
        (
            "jco",
            sdk.join("node_modules/@bytecodealliance/jco-transpile"),
        ),
        ("yaml", sdk.join("node_modules/yaml/package.json")),
    ];
    let absent: Vec<&str> = tools
        .iter()
        .chain(&modules)
        .filter(|(_, path)| !path.exists())
        .map(|(name, _)| *name)
        .collect();
    match absent.is_empty() {
        true => Ok(()),
        false => Err(missing(
            format!("the JS guest toolchain is missing ({})", absent.join(" ")),
            HINT,
        )),
    }
}

/// Type-checks the TypeScript project in `dir`; a JavaScript-only plugin has no tsconfig.json.
fn type_check(bin: &Path, dir: &Path) -> Result<(), BuildError> {
    if !dir.join("tsconfig.json").is_file() {
        return Ok(());
    }
    let mut tsc = Command::new(bin.join("tsc"));
    tsc.arg("-p").arg(dir);
    step::run(Language::Js, "type-checking", dir, &mut tsc)
}

/// Copies the folder `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) -> Result<(), BuildError> {
    let io = step::io;
    std::fs::create_dir_all(to).map_err(io(to))?;
    for entry in std::fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if source.is_dir() {
            copy_dir(&source, &target)?;
        } else {
            std::fs::copy(&source, &target).map_err(io(&source))?;
        }
    }
    Ok(())
}
