//! The check every built component passes before it is installed: a WebAssembly component that
//! validates and imports no `wasi:http` (which the host never grants); then its move into place.

use std::path::Path;

use super::step::{BuildError, NotLoadable, say};
use super::{Built, Language};

/// Checks `built` and copies it to `destination` (creating its folder), replacing what was there
/// only once the copy is whole.
pub(super) fn install(
    language: Language,
    built: &Built,
    destination: &Path,
) -> Result<(), BuildError> {
    let bytes = std::fs::read(&built.file).map_err(|source| BuildError::Io {
        path: built.file.clone(),
        source,
    })?;
    check(&bytes).map_err(|reason| BuildError::Invalid {
        language,
        path: built.file.clone(),
        reason,
    })?;
    let io = |source| BuildError::Io {
        path: destination.to_owned(),
        source,
    };
    if let Some(folder) = destination.parent() {
        std::fs::create_dir_all(folder).map_err(io)?;
    }
    let partial = destination.with_extension("wasm.tmp");
    std::fs::write(&partial, &bytes).map_err(io)?;
    std::fs::rename(&partial, destination).map_err(io)?;
    say(
        language,
        format!(
            "built {} ({}) in {} s",
            destination.display(),
            size(bytes.len()),
            built.took.as_secs()
        ),
    );
    Ok(())
}

/// Why `bytes` is not a component the host could load, if it is not.
fn check(bytes: &[u8]) -> Result<(), NotLoadable> {
    if !wasmparser::Parser::is_component(bytes) {
        return Err(NotLoadable::NotAComponent);
    }
    let mut validator = wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all());
    validator
        .validate_all(bytes)
        .map_err(NotLoadable::Invalid)?;
    let (imports, _) =
        crate::distribution::oci::component_names(bytes).map_err(NotLoadable::Unreadable)?;
    match imports.iter().find(|name| name.starts_with("wasi:http/")) {
        Some(http) => Err(NotLoadable::Ungranted(http.clone())),
        None => Ok(()),
    }
}

/// `bytes` as a size a person reads: `929KiB`, `52MiB`.
fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1}MiB", b as f64 / f64::from(1 << 20)),
        b if b >= 1 << 10 => format!("{}KiB", b >> 10),
        b => format!("{b}B"),
    }
}
