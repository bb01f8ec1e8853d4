//! The Wasm OCI artifact layout (CNCF TAG Runtime, Wasm working group): an OCI image manifest
//! whose config is [`CONFIG_MEDIA_TYPE`] — the component's top-level imports and exports — and
//! whose one layer, [`LAYER_MEDIA_TYPE`], is the component. Pushing builds one; pulling takes a
//! manifest only if it is one. A pushed artifact names no creation time, so pushing the same
//! component twice gives the same digest.
//!
//! `wasmop push --precompile` adds a layer of wasmop's own, [`PRECOMPILED_MEDIA_TYPE`]: the
//! component compiled ahead of time for the engine its [`ENGINE_ANNOTATION`] names. Tools of the
//! convention read the component layer and pass it by; the host uses it only when the engine is
//! its own and a key the operator trusts signed the manifest, and so the layer.

use hyper::header::HeaderValue;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use serde_json::json;

use super::{MAX_MANIFEST_BYTES, MAX_MODULE_BYTES, OciError, OciRef};
use crate::distribution::digest;

/// The media type of a Wasm artifact's config.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";

/// The media type of a Wasm artifact's component layer.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";

/// The media type of a component compiled ahead of time for one engine.
pub const PRECOMPILED_MEDIA_TYPE: &str = "application/vnd.wasmop.component.precompiled.v1";

/// The annotation of a precompiled layer naming the engine it was compiled for.
pub const ENGINE_ANNOTATION: &str = "dev.wasmop.engine";

/// The most precompiled layers (one per engine) an artifact may have.
const MAX_PRECOMPILED_LAYERS: usize = 4;

/// The largest precompiled component a pull takes.
pub const MAX_PRECOMPILED_BYTES: usize = 256 << 20;

/// A component compiled ahead of time, and the engine it was compiled for.
pub struct Precompiled {
    /// The engine's fingerprint (`Runtime::engine_fingerprint`).
    pub engine: String,
    /// The artifact.
    pub artifact: Vec<u8>,
}

/// The manifest types a pull accepts.
pub(super) const MANIFEST_MEDIA_TYPES: &[&str] = &[OCI_IMAGE_MEDIA_TYPE];

/// An artifact ready to push: its blobs and its manifest's bytes.
pub(super) struct Artifact {
    blobs: Vec<Vec<u8>>,
    pub manifest: Vec<u8>,
}

impl Artifact {
    /// The artifact of the component `module`, with its `precompiled` form if given.
    pub fn of(module: Vec<u8>, precompiled: Option<Precompiled>) -> Result<Self, OciError> {
        if !wasmparser::Parser::is_component(&module) {
            return Err(OciError::NotAComponent);
        }
        let (imports, exports) = component_names(&module)?;
        let layer_digest = digest(&module);
        let config = json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [layer_digest],
            "component": {"imports": imports, "exports": exports},
        });
        let config = serde_json::to_vec(&config).map_err(|e| OciError::Client(e.to_string()))?;
        let mut layers = vec![descriptor(LAYER_MEDIA_TYPE, &module)];
        let mut blobs = vec![config, module];
        if let Some(precompiled) = precompiled {
            let mut layer = descriptor(PRECOMPILED_MEDIA_TYPE, &precompiled.artifact);
            layer.annotations = Some([(ENGINE_ANNOTATION.to_owned(), precompiled.engine)].into());
            layers.push(layer);
            blobs.push(precompiled.artifact);
        }
        let manifest = OciImageManifest {
            schema_version: 2,
            media_type: Some(OCI_IMAGE_MEDIA_TYPE.to_owned()),
            config: descriptor(CONFIG_MEDIA_TYPE, &blobs[0]),
            layers,
            ..OciImageManifest::default()
        };
        let manifest =
            serde_json::to_vec(&manifest).map_err(|e| OciError::Client(e.to_string()))?;
        Ok(Artifact { blobs, manifest })
    }

    /// The blobs to push before the manifest, and the manifest.
    pub fn into_parts(self) -> (Vec<Vec<u8>>, Vec<u8>) {
        (self.blobs, self.manifest)
    }

    /// The manifest's digest: what a reference pins.
    pub fn digest(&self) -> String {
        digest(&self.manifest)
    }
}

/// The `Content-Type` a manifest is pushed with.
pub(super) fn content_type() -> HeaderValue {
    HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE)
}

fn descriptor(media_type: &str, bytes: &[u8]) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_owned(),
        digest: digest(bytes),
        size: bytes.len() as i64,
        ..OciDescriptor::default()
    }
}

/// The component layer of the manifest `raw`, once `raw` is shown to be the one `reference`
/// pins and a Wasm artifact of one component no larger than a module may be.
pub(super) fn component_layer(reference: &OciRef, raw: &[u8]) -> Result<OciDescriptor, OciError> {
    if raw.len() > MAX_MANIFEST_BYTES {
        return Err(OciError::TooLarge("manifest", MAX_MANIFEST_BYTES));
    }
    let found = digest(raw);
    if found != reference.digest() {
        let found = format!("its bytes hash to {found}");
        return Err(OciError::digest("manifest", reference.digest(), found));
    }
    let manifest: OciImageManifest =
        serde_json::from_slice(raw).map_err(|_| OciError::Layout("not an OCI image manifest"))?;
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(OciError::Layout(
            "its config is not application/vnd.wasm.config.v0+json (push it with wasmop push)",
        ));
    }
    let (components, others): (Vec<_>, Vec<_>) = manifest
        .layers
        .into_iter()
        .partition(|layer| layer.media_type == LAYER_MEDIA_TYPE);
    let [layer] = <[OciDescriptor; 1]>::try_from(components)
        .map_err(|_| OciError::Layout("a Wasm artifact has exactly one application/wasm layer"))?;
    let precompiled = |l: &OciDescriptor| l.media_type == PRECOMPILED_MEDIA_TYPE;
    if others.len() > MAX_PRECOMPILED_LAYERS || !others.iter().all(precompiled) {
        return Err(OciError::Layout(
            "its other layers must be at most 4 precompiled components",
        ));
    }
    if !(1..=MAX_MODULE_BYTES as i64).contains(&layer.size) {
        return Err(OciError::TooLarge("component", MAX_MODULE_BYTES));
    }
    let hex = layer.digest.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(OciError::Layout("its layer's digest is not sha256"));
    }
    Ok(layer)
}

/// The layer of the manifest `raw` (already checked by [`component_layer`]) that holds the
/// component precompiled for `engine`, if it has one of a size the host takes.
pub(super) fn precompiled_layer(raw: &[u8], engine: &str) -> Option<OciDescriptor> {
    let manifest: OciImageManifest = serde_json::from_slice(raw).ok()?;
    manifest.layers.into_iter().find(|layer| {
        let named = layer
            .annotations
            .as_ref()
            .and_then(|a| a.get(ENGINE_ANNOTATION));
        layer.media_type == PRECOMPILED_MEDIA_TYPE
            && named.is_some_and(|named| named == engine)
            && (1..=MAX_PRECOMPILED_BYTES as i64).contains(&layer.size)
    })
}

/// The names of the component's own (top-level) imports and exports.
pub fn component_names(module: &[u8]) -> Result<(Vec<String>, Vec<String>), OciError> {
    use wasmparser::Payload;
    let (mut imports, mut exports) = (Vec::new(), Vec::new());
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        match payload.map_err(|_| OciError::NotAComponent)? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let import = import.map_err(|_| OciError::NotAComponent)?;
                    imports.push(import.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 0 => {
                for export in reader {
                    let export = export.map_err(|_| OciError::NotAComponent)?;
                    exports.push(export.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok((imports, exports))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn webapp() -> Vec<u8> {
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/components/webapp.wasm"
        );
        std::fs::read(file).expect("build the guests first with `make guests`")
    }

    #[test]
    fn an_artifact_is_one_component_layer_under_a_wasm_config() {
        let artifact = Artifact::of(webapp(), None).unwrap();
        let manifest: serde_json::Value = serde_json::from_slice(&artifact.manifest).unwrap();
        assert_eq!(manifest["config"]["mediaType"], CONFIG_MEDIA_TYPE);
        assert_eq!(manifest["layers"][0]["mediaType"], LAYER_MEDIA_TYPE);
        assert_eq!(manifest["layers"][0]["digest"], digest(&webapp()));
        let config: serde_json::Value = serde_json::from_slice(&artifact.blobs[0]).unwrap();
        let exports = config["component"]["exports"].as_array().unwrap();
        assert!(
            exports
                .iter()
                .any(|e| e.as_str().unwrap().starts_with("wasmop:reconciler/"))
        );
        assert_eq!(
            Artifact::of(webapp(), None).unwrap().digest(),
            artifact.digest()
        );
        let reference = format!("r.example/webapp@{}", artifact.digest());
        let reference = OciRef::parse(&reference).unwrap();
        let layer = component_layer(&reference, &artifact.manifest).unwrap();
        assert_eq!(layer.digest, digest(&webapp()));
        let elsewhere = format!("r.example/webapp@{}", digest(b"another manifest"));
        let moved = component_layer(&OciRef::parse(&elsewhere).unwrap(), &artifact.manifest);
        assert!(
            matches!(
                moved,
                Err(OciError::Digest {
                    what: "manifest",
                    ..
                })
            ),
            "{moved:?}"
        );
        let precompiled = Precompiled {
            engine: "wasmop-test/engine".into(),
            artifact: b"native code".to_vec(),
        };
        let both = Artifact::of(webapp(), Some(precompiled)).unwrap();
        let pinned = OciRef::parse(&format!("r.example/webapp@{}", both.digest())).unwrap();
        assert_eq!(
            component_layer(&pinned, &both.manifest).unwrap().digest,
            digest(&webapp())
        );
        let found = precompiled_layer(&both.manifest, "wasmop-test/engine").unwrap();
        assert_eq!(found.digest, digest(b"native code"));
        assert!(precompiled_layer(&both.manifest, "wasmop-other/engine").is_none());
        assert!(matches!(
            Artifact::of(b"\0asm\x01\0\0\0".to_vec(), None),
            Err(OciError::NotAComponent)
        ));
    }
}
