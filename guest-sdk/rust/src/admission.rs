//! Admission requests and reviews built as the apiserver sends them, for testing a reconciler's
//! webhooks: [`AdmissionRequest::create`], [`AdmissionRequest::update`] and
//! [`AdmissionRequest::delete`] give the request `validate` and `default` receive, to call them
//! natively in a unit test; [`AdmissionRequest::review`] and [`conversion_review`] give the
//! AdmissionReview and ConversionReview the apiserver posts, to state in a `wasmop test`
//! fixture or hand another tool. What a request leaves out is filled in as `wasmop test` fills a
//! fixture's in: the kind, namespace and name from the object, the user `wasmop-test`.

use serde::Serialize;
use serde_json::{Value, json};

use crate::kind::Gvk;
use crate::webhooks::{AdmissionRequest, Operation, UserInfo};

/// The uid and user name a built request carries unless told otherwise (its user has no uid).
const TEST_NAME: &str = "wasmop-test";

impl AdmissionRequest {
    /// A create of `object`.
    pub fn create(object: &impl Serialize) -> Self {
        Self::of(Operation::Create, Some(json_of(object)), None)
    }

    /// An update of `old` to `new`.
    pub fn update(old: &impl Serialize, new: &impl Serialize) -> Self {
        Self::of(Operation::Update, Some(json_of(new)), Some(json_of(old)))
    }

    /// A delete of `old`.
    pub fn delete(old: &impl Serialize) -> Self {
        Self::of(Operation::Delete, None, Some(json_of(old)))
    }

    /// The request sent by `username` of `groups`.
    pub fn by(mut self, username: &str, groups: &[&str]) -> Self {
        self.user_info.username = username.to_owned();
        self.user_info.groups = groups.iter().map(|g| (*g).to_owned()).collect();
        self
    }

    /// The request as a dry run, which persists nothing.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    fn of(operation: Operation, object: Option<Value>, old: Option<Value>) -> Self {
        let shown = object
            .as_ref()
            .or(old.as_ref())
            .cloned()
            .unwrap_or_default();
        let text = |pointer: &str| shown.pointer(pointer).and_then(Value::as_str).unwrap_or("");
        let api_version = text("/apiVersion");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        AdmissionRequest {
            uid: TEST_NAME.to_owned(),
            kind: Gvk {
                group: group.to_owned(),
                version: version.to_owned(),
                kind: text("/kind").to_owned(),
            },
            namespace: text("/metadata/namespace").to_owned(),
            name: text("/metadata/name").to_owned(),
            operation,
            object: object.map(|o| o.to_string()),
            old_object: old.map(|o| o.to_string()),
            user_info: UserInfo {
                username: TEST_NAME.to_owned(),
                uid: String::new(),
                groups: Vec::new(),
            },
            dry_run: false,
        }
    }

    /// The admission.k8s.io/v1 AdmissionReview the apiserver posts for this request; its
    /// `request` is what a `wasmop test` fixture states under `validate` or `default`.
    pub fn review(&self) -> Value {
        let kind = &self.kind;
        let resource = format!("{}s", kind.kind.to_lowercase());
        let mut request = json!({
            "uid": self.uid,
            "kind": {"group": kind.group, "version": kind.version, "kind": kind.kind},
            "resource": {"group": kind.group, "version": kind.version, "resource": resource},
            "name": self.name,
            "operation": operation_name(self.operation),
            "userInfo": {"username": self.user_info.username},
            "dryRun": self.dry_run,
        });
        let parsed =
            |text: &Option<String>| text.as_deref().and_then(|t| serde_json::from_str(t).ok());
        let fields = [
            (
                "namespace",
                (!self.namespace.is_empty()).then(|| json!(self.namespace)),
            ),
            ("object", parsed(&self.object)),
            ("oldObject", parsed(&self.old_object)),
        ];
        for (field, value) in fields {
            if let Some(value) = value {
                request[field] = value;
            }
        }
        if !self.user_info.uid.is_empty() {
            request["userInfo"]["uid"] = json!(self.user_info.uid);
        }
        if !self.user_info.groups.is_empty() {
            request["userInfo"]["groups"] = json!(self.user_info.groups);
        }
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
    }
}

/// The apiextensions.k8s.io/v1 ConversionReview the apiserver posts to convert `objects` to
/// `desired_api_version`; its `request` is what a `wasmop test` fixture states under `convert`.
pub fn conversion_review(desired_api_version: &str, objects: &[impl Serialize]) -> Value {
    let objects: Vec<Value> = objects.iter().map(json_of).collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": TEST_NAME, "desiredAPIVersion": desired_api_version, "objects": objects},
    })
}

/// `object` as JSON; a value that does not serialise is JSON null.
fn json_of(object: &impl Serialize) -> Value {
    serde_json::to_value(object).unwrap_or_default()
}

fn operation_name(operation: Operation) -> &'static str {
    match operation {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
        Operation::Connect => "CONNECT",
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn config_map(value: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("shop".into()),
                name: Some("settings".into()),
                ..ObjectMeta::default()
            },
            data: Some([("colour".to_owned(), value.to_owned())].into()),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_request_reads_its_kind_and_key_from_its_object() {
        let request = AdmissionRequest::update(&config_map("red"), &config_map("blue"));
        assert_eq!(request.operation, Operation::Update);
        assert_eq!(request.kind.api_version(), "v1");
        assert_eq!(request.kind.kind, "ConfigMap");
        assert_eq!(
            (request.namespace.as_str(), request.name.as_str()),
            ("shop", "settings")
        );
        let new: Value = serde_json::from_str(request.object.as_deref().unwrap()).unwrap();
        assert_eq!(new["data"]["colour"], "blue");
        let delete = AdmissionRequest::delete(&config_map("red"))
            .by("alice", &["admins"])
            .dry_run();
        assert_eq!((delete.operation, delete.object), (Operation::Delete, None));
        assert_eq!(delete.user_info.groups, ["admins"]);
        assert!(delete.dry_run);
    }

    #[test]
    fn a_review_is_what_the_apiserver_posts() {
        let review = AdmissionRequest::create(&config_map("red")).review();
        let request = &review["request"];
        assert_eq!(review["kind"], "AdmissionReview");
        assert_eq!(request["operation"], "CREATE");
        assert_eq!(
            request["resource"],
            json!({"group": "", "version": "v1", "resource": "configmaps"})
        );
        assert_eq!(request["namespace"], "shop");
        assert_eq!(request["object"]["data"]["colour"], "red");
        assert!(request.get("oldObject").is_none());
        let conversion =
            conversion_review("example.wasmop.dev/v1beta1", &[json!({"kind": "WebApp"})]);
        assert_eq!(
            conversion["request"]["desiredAPIVersion"],
            "example.wasmop.dev/v1beta1"
        );
        assert_eq!(conversion["request"]["objects"][0]["kind"], "WebApp");
    }
}
