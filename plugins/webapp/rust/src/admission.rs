//! The `webapp` plugin's webhooks: WebApps are refused with more than 50 replicas or an image
//! that is not a well-formed reference, get port 8080 when they name none, and convert between
//! `v1alpha1` and `v1beta1`, which calls `spec.replicas` `spec.instances`.

use serde_json::{Map, Value};
use wasmop_guest::webhooks::{AdmissionRequest, Denial, Verdict};

use super::resource::{DEFAULT_PORT, GROUP};

/// The most replicas a WebApp may ask for.
#[cfg(not(feature = "roomier"))]
pub const MAX_REPLICAS: i64 = 50;
/// The most replicas a WebApp may ask for in the 0.2.0 test build, which hot-swap tests load to
/// see a verdict change.
#[cfg(feature = "roomier")]
pub const MAX_REPLICAS: i64 = 100;

/// Admits a WebApp whose replicas are within 0..=50 and whose image is a well-formed reference.
pub fn validate(request: &AdmissionRequest) -> Verdict {
    let Some(object) = request.object.as_deref() else {
        return Verdict::allowed();
    };
    let spec = match spec_of(object) {
        Ok(spec) => spec,
        Err(message) => return Verdict::denied(message),
    };
    let replicas_field = match request.kind.version.as_str() {
        "v1beta1" => "instances",
        _ => "replicas",
    };
    if let Some(replicas) = spec.get(replicas_field) {
        match replicas.as_i64() {
            Some(n) if (0..=MAX_REPLICAS).contains(&n) => {}
            _ => {
                return Verdict::denied(format!(
                    "spec.{replicas_field} must be between 0 and {MAX_REPLICAS}, not {replicas}"
                ));
            }
        }
    }
    match spec.get("image").and_then(Value::as_str) {
        Some(image) if well_formed_image(image) => Verdict::allowed(),
        Some(image) => Verdict::denied(format!(
            "spec.image {image:?} is not a well-formed image reference"
        )),
        None => Verdict::denied("spec.image is required"),
    }
}

/// The request's WebApp with `spec.port` set to 8080 when it names none.
pub fn default(request: &AdmissionRequest) -> Result<String, Denial> {
    let object = request
        .object
        .as_deref()
        .ok_or_else(|| Denial::new("no WebApp to default"))?;
    let mut value: Value = serde_json::from_str(object).map_err(|e| Denial::new(e.to_string()))?;
    let spec = value
        .as_object_mut()
        .and_then(|o| o.get_mut("spec"))
        .and_then(Value::as_object_mut)
        .ok_or_else(|| Denial::new("a WebApp needs a spec"))?;
    spec.entry("port").or_insert(Value::from(DEFAULT_PORT));
    Ok(value.to_string())
}

/// `object` as a WebApp of `api_version` (`example.wasmop.dev/v1alpha1` or `.../v1beta1`).
pub fn convert(object: &str, api_version: &str) -> Result<String, String> {
    let mut value: Value = serde_json::from_str(object).map_err(|e| e.to_string())?;
    let (from, to) = (version_of(&value)?, version_in(api_version)?);
    let fields = value.as_object_mut().ok_or("a WebApp is a JSON object")?;
    if let Some(spec) = fields.get_mut("spec").and_then(Value::as_object_mut) {
        match (from, to) {
            ("v1alpha1", "v1beta1") => rename(spec, "replicas", "instances"),
            ("v1beta1", "v1alpha1") => rename(spec, "instances", "replicas"),
            _ => {}
        }
    }
    fields.insert("apiVersion".into(), Value::from(api_version));
    Ok(value.to_string())
}

fn spec_of(object: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_str(object).map_err(|e| e.to_string())?;
    match value.get("spec") {
        Some(Value::Object(spec)) => Ok(spec.clone()),
        _ => Err("a WebApp needs a spec".to_owned()),
    }
}

fn version_of(value: &Value) -> Result<&'static str, String> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or("the object has no apiVersion")?;
    version_in(api_version)
}

fn version_in(api_version: &str) -> Result<&'static str, String> {
    match api_version
        .strip_prefix(GROUP)
        .and_then(|v| v.strip_prefix('/'))
    {
        Some("v1alpha1") => Ok("v1alpha1"),
        Some("v1beta1") => Ok("v1beta1"),
        _ => Err(format!("{api_version} is not a WebApp version")),
    }
}

fn rename(spec: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = spec.remove(from) {
        spec.insert(to.to_owned(), value);
    }
}

/// Whether `image` is `[host[:port]/]path[:tag][@algorithm:digest]` as the distribution spec
/// writes it: lowercase path components joined by `.`, `_`, `__` or `-`, a tag of at most 128
/// word characters, dots and dashes.
pub fn well_formed_image(image: &str) -> bool {
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !well_formed_digest(d)) {
        return false;
    }
    let (name, tag) = match rest.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, Some(tag)),
        _ => (rest, None),
    };
    if tag.is_some_and(|t| !well_formed_tag(t)) || name.len() > 255 {
        return false;
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    let first = parts[0];
    if parts.len() > 1 && (first.contains(['.', ':']) || first == "localhost") {
        if !well_formed_host(first) {
            return false;
        }
        parts.remove(0);
    }
    !parts.is_empty() && parts.iter().all(|p| well_formed_component(p))
}

fn well_formed_component(part: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes: Vec<char> = part.chars().collect();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut run = 0;
    for c in bytes {
        if alnum(c) {
            run = 0;
        } else if matches!(c, '.' | '_' | '-') {
            run += 1;
            if run > 2 && c != '-' {
                return false;
            }
        } else {
            return false;
        }
    }
    true
}

fn well_formed_host(host: &str) -> bool {
    let (name, port) = match host.rsplit_once(':') {
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    };
    port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()))
        && !name.is_empty()
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

fn well_formed_tag(tag: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !tag.is_empty()
        && tag.len() <= 128
        && tag.starts_with(word)
        && tag.chars().all(|c| word(c) || c == '.' || c == '-')
}

fn well_formed_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    !algorithm.is_empty()
        && algorithm
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+._-".contains(c))
        && hex.len() >= 32
        && hex
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The request the apiserver sends to create a WebApp of `version` with `spec`.
    fn request(version: &str, spec: Value) -> AdmissionRequest {
        AdmissionRequest::create(&json!({
            "apiVersion": format!("{GROUP}/{version}"),
            "kind": "WebApp",
            "metadata": {"name": "shop", "namespace": "default"},
            "spec": spec,
        }))
    }

    fn denied(verdict: Verdict) -> String {
        match verdict {
            Verdict::Denied(denial) => denial.message,
            Verdict::Allowed(_) => panic!("allowed"),
        }
    }

    #[test]
    fn replicas_must_be_within_zero_and_fifty() {
        let ok = request("v1alpha1", json!({"image": "nginx:1.27", "replicas": 50}));
        assert_eq!(validate(&ok), Verdict::allowed());
        let many = request("v1alpha1", json!({"image": "nginx", "replicas": 51}));
        assert!(denied(validate(&many)).contains("spec.replicas must be between 0 and 50"));
        let negative = request("v1beta1", json!({"image": "nginx", "instances": -1}));
        assert!(denied(validate(&negative)).contains("spec.instances"));
    }

    #[test]
    fn images_must_be_well_formed_references() {
        for good in [
            "nginx",
            "nginx:1.27-alpine",
            "library/nginx",
            "ghcr.io/wasmop/webapp:v0.1.0",
            "localhost:5000/a/b_c__d-e",
            "registry.example.com/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert!(well_formed_image(good), "{good}");
        }
        for bad in [
            "",
            "Nginx",
            "nginx:",
            "nginx::1",
            "-nginx",
            "nginx/",
            "nginx latest",
            "nginx@sha256:xyz",
            "ghcr.io//app",
        ] {
            assert!(!well_formed_image(bad), "{bad}");
        }
        let bad = request("v1alpha1", json!({"image": "Not An Image"}));
        assert!(denied(validate(&bad)).contains("not a well-formed image reference"));
    }

    #[test]
    fn a_webapp_without_a_port_gets_8080_and_one_with_a_port_keeps_it() {
        let defaulted: Value = serde_json::from_str(
            &default(&request("v1alpha1", json!({"image": "nginx"}))).unwrap(),
        )
        .unwrap();
        assert_eq!(defaulted["spec"]["port"], 8080);
        let kept = request("v1alpha1", json!({"image": "nginx", "port": 9090}));
        let kept: Value = serde_json::from_str(&default(&kept).unwrap()).unwrap();
        assert_eq!(kept["spec"]["port"], 9090);
    }

    #[test]
    fn conversion_renames_replicas_both_ways_and_refuses_other_versions() {
        let alpha = request("v1alpha1", json!({"image": "nginx", "replicas": 3}));
        let beta = convert(
            alpha.object.as_deref().unwrap(),
            "example.wasmop.dev/v1beta1",
        )
        .unwrap();
        let beta_value: Value = serde_json::from_str(&beta).unwrap();
        assert_eq!(beta_value["apiVersion"], "example.wasmop.dev/v1beta1");
        assert_eq!(beta_value["spec"]["instances"], 3);
        assert!(beta_value["spec"].get("replicas").is_none());
        let back: Value =
            serde_json::from_str(&convert(&beta, "example.wasmop.dev/v1alpha1").unwrap()).unwrap();
        let original: Value = serde_json::from_str(alpha.object.as_deref().unwrap()).unwrap();
        assert_eq!(back, original);
        assert!(convert(&beta, "example.wasmop.dev/v2").is_err());
    }
}
