//! The host side of the `transport` import: one raw HTTP request of a guest's own Kubernetes
//! client (client-go behind the Go SDK's `rest.Config`), read by the apiserver's request-info
//! rules ([`request_info`]), its resource resolved to a kind through discovery, checked by the
//! one capability check for every verb RBAC would ask of it, its body parsed and checked as the
//! `client` import's writes are (kind, namespace and name as the path says, owner references
//! through [`Power::Own`]), and then sent rebuilt from those parts with the body re-encoded from
//! what was parsed — so what the check saw is what the apiserver gets.
//!
//! Every request reaches the apiserver, so each waits for the plugin's write rate. An answer is
//! read into memory held from the plugin's share of the guest memory budget (what the guest will
//! hold it in), each growth of the buffer taken before it is made, up to [`MAX_ANSWER_BYTES`]:
//! an answer the plugin has no memory left for is refused as it arrives.

use std::sync::Arc;
use wasmop_contract::boundary::{self, PatchText, invalid};
use wasmop_contract::capability::Power;

use wasmop_contract::imports::{
    AnswerRoom, ApiError, ApiErrorKind, Forward, ResourceKind, Transport, Write,
};
use wasmop_contract::object::{GroupVersionKind, ObjectRef};
use wasmop_contract::request_info::{self, RequestInfo, RequestVerb, ResourceRequest};

use crate::runtime::bindings::{transport, types};
use crate::runtime::host::{StoreState, wait};
use crate::runtime::memory::Held;

/// The most of one apiserver answer the host reads for a guest: a longer list is paged
/// (`limit` and `continue`, as client-go's pager does).
const MAX_ANSWER_BYTES: usize = 32 << 20;
/// The longest method name.
const MAX_METHOD: usize = 8;
/// The longest media type.
const MAX_CONTENT_TYPE: usize = 256;

impl transport::Host for StoreState {
    async fn send(
        &mut self,
        request: transport::HttpRequest,
    ) -> Result<transport::HttpResponse, types::Error> {
        let checked = self.checked(request).await;
        let (forward, transport) = self.refused(checked)?;
        wait(self.context.budget.write_delay()).await;
        let room = Room(self.limiter.holding());
        let answer = transport.forward(forward, &room).await?;
        Ok(transport::HttpResponse {
            status: answer.status,
            content_type: answer.content_type,
            body: answer.body,
        })
    }
}

impl StoreState {
    /// `request` as the host will send it, if the plugin may, and the transport that sends it.
    async fn checked(
        &mut self,
        request: transport::HttpRequest,
    ) -> Result<(Forward, Arc<dyn Transport>), ApiError> {
        let transport = self.may(Power::Discover)?.transport.clone();
        boundary::bounded("the method", &request.method, MAX_METHOD)?;
        boundary::bounded("the content type", &request.content_type, MAX_CONTENT_TYPE)?;
        let resource = match request_info::parse(&request.method, &request.path)? {
            RequestInfo::Discovery(path) => {
                let forward = Forward {
                    method: "GET",
                    path,
                    body: None,
                };
                return match request.body.is_empty() {
                    true => Ok((forward, transport)),
                    false => Err(invalid("a GET carries no body")),
                };
            }
            RequestInfo::Resource(resource) => resource,
        };
        let found = transport
            .resource_kind(&resource.group, &resource.version, &resource.resource)
            .await?;
        let namespace = scope(&resource, &found)?;
        for verb in resource.verb.needs(resource.status) {
            self.check(*verb, &found.kind, namespace)?;
        }
        let target = ObjectRef::new(&found.kind, namespace, &resource.name);
        let body = self.body(&resource, &target, &request.content_type, request.body)?;
        let forward = Forward {
            method: resource.verb.method(),
            path: resource.path_and_query(),
            body,
        };
        Ok((forward, transport))
    }

    /// The body to send: none for a read; for a write the object or patch parsed, checked like
    /// the `client` import's and encoded again; for a delete its options as a JSON object.
    fn body(
        &self,
        request: &ResourceRequest,
        target: &ObjectRef,
        content_type: &str,
        body: Vec<u8>,
    ) -> Result<Option<(String, Vec<u8>)>, ApiError> {
        let max = self.limits().object_bytes;
        if body.len() > max {
            return Err(invalid(format!(
                "the body is {} bytes, over the limit of {max}",
                body.len()
            )));
        }
        let media = content_type.split(';').next().unwrap_or_default().trim();
        if !body.is_empty() && !media.ends_with("json") && !media.ends_with("yaml") {
            return Err(invalid(format!(
                "body of type {:?}: the transport carries JSON (a Kubernetes client's \
                 ContentType must be application/json)",
                boundary::cut(media)
            )));
        }
        let text = String::from_utf8(body).map_err(|_| invalid("the body is not UTF-8 JSON"))?;
        let json = |value: Option<&serde_json::Value>| match value {
            Some(value) => {
                let bytes = serde_json::to_vec(value).map_err(|e| invalid(e.to_string()))?;
                Ok(Some((media.to_owned(), bytes)))
            }
            None => Ok(None),
        };
        match request.verb {
            RequestVerb::Get | RequestVerb::List if text.is_empty() => Ok(None),
            RequestVerb::Get | RequestVerb::List => Err(invalid("a GET carries no body")),
            RequestVerb::Delete | RequestVerb::DeleteCollection if text.is_empty() => Ok(None),
            RequestVerb::Delete | RequestVerb::DeleteCollection => {
                json_media(media)?;
                let options = boundary::patch(PatchText::Merge(text), max)
                    .map_err(|e| invalid(format!("the delete options: {}", e.message)))?;
                json(Some(options.value()))
            }
            RequestVerb::Create | RequestVerb::Update => {
                json_media(media)?;
                let create = request.verb == RequestVerb::Create;
                let (sent, value) = boundary::object(&text, max, create)?;
                same_object(&sent, target, create)?;
                let write = match (create, request.status) {
                    (true, _) => Write::Create(value),
                    (false, false) => Write::Update(value),
                    (false, true) => Write::UpdateStatus(value),
                };
                self.owners(target, &write)?;
                json(write.body())
            }
            RequestVerb::Patch => {
                let patch = boundary::patch(patch_text(media, text, request)?, max)?;
                let write = Write::Patch {
                    patch,
                    status: request.status,
                };
                self.owners(target, &write)?;
                json(write.body())
            }
        }
    }
}

/// What an answer is read into: bytes of the plugin's share of the guest memory budget, held
/// until the answer is handed to the guest, up to [`MAX_ANSWER_BYTES`].
struct Room(Held);

impl AnswerRoom for Room {
    fn admit(&self, more: usize) -> Result<(), ApiError> {
        let unavailable = |why: String| ApiError::new(ApiErrorKind::Unavailable, why);
        if self.0.bytes().saturating_add(more) > MAX_ANSWER_BYTES {
            return Err(unavailable(format!(
                "the answer is over {MAX_ANSWER_BYTES} bytes, the most the host reads for a \
                 guest: page a list with limit and continue"
            )));
        }
        self.0
            .grow(more)
            .map_err(|e| unavailable(format!("no memory left for the answer: {e}")))
    }
}

/// The namespace the request acts in, for the check: its path's, or none for a cluster-scoped
/// kind (a `namespaces` request names the namespace as its object); a namespaced kind's single
/// object or create must name its namespace.
fn scope<'r>(request: &'r ResourceRequest, found: &ResourceKind) -> Result<&'r str, ApiError> {
    let kind = &found.kind.kind;
    let namespaces = request.group.is_empty() && request.resource == "namespaces";
    let whole = matches!(
        request.verb,
        RequestVerb::List | RequestVerb::DeleteCollection
    );
    match (found.namespaced, request.namespace.as_str()) {
        (false, _) if namespaces => Ok(""),
        (false, "") => Ok(""),
        (false, namespace) => Err(invalid(format!(
            "{kind} is cluster-scoped, but the path names namespace {namespace}"
        ))),
        (true, "") if !whole => Err(invalid(format!(
            "{kind} is namespaced: the path must name the object's namespace"
        ))),
        (true, namespace) => Ok(namespace),
    }
}

/// Checks that an object body is the one its path names: the path's kind, namespace (or none)
/// and name (a create's may be left to `generateName`).
fn same_object(sent: &ObjectRef, target: &ObjectRef, create: bool) -> Result<(), ApiError> {
    let kind = |k: &GroupVersionKind| format!("{} {}", k.api_version(), k.kind);
    if sent.kind != target.kind {
        return Err(invalid(format!(
            "the body is a {}, but the path names {}",
            kind(&sent.kind),
            kind(&target.kind)
        )));
    }
    let namespace = &sent.key.namespace;
    if !namespace.is_empty() && *namespace != target.key.namespace {
        return Err(invalid(format!(
            "the body's namespace {namespace} is not the path's {:?}",
            target.key.namespace
        )));
    }
    if !create && sent.key.name != target.key.name {
        return Err(invalid(format!(
            "the body's name {} is not the path's {}",
            sent.key.name, target.key.name
        )));
    }
    Ok(())
}

/// Refuses a body that is not JSON.
fn json_media(media: &str) -> Result<(), ApiError> {
    match media {
        "application/json" => Ok(()),
        other => Err(invalid(format!(
            "body of type {:?}: the transport carries JSON (application/json)",
            boundary::cut(other)
        ))),
    }
}

/// A patch body by its media type; a strategic merge patch is checked as the merge patch it
/// is a superset of, and an apply is JSON (which client-go sends).
fn patch_text(media: &str, text: String, request: &ResourceRequest) -> Result<PatchText, ApiError> {
    match media {
        "application/merge-patch+json" | "application/strategic-merge-patch+json" => {
            Ok(PatchText::Merge(text))
        }
        "application/json-patch+json" => Ok(PatchText::Json(text)),
        "application/apply-patch+yaml" => Ok(PatchText::Apply {
            object: text,
            force: request.flag("force"),
        }),
        other => Err(invalid(format!(
            "patch of type {:?}: the transport carries JSON merge, strategic merge, JSON and \
             apply patches",
            boundary::cut(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, path: &str) -> ResourceRequest {
        match request_info::parse(method, path) {
            Ok(RequestInfo::Resource(request)) => request,
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    fn kind(kind: &str, namespaced: bool) -> ResourceKind {
        ResourceKind {
            kind: GroupVersionKind::gvk("", "v1", kind),
            namespaced,
        }
    }

    #[test]
    fn the_checked_namespace_follows_the_kinds_scope() {
        let pods = kind("Pod", true);
        let at = |method, path, found: &ResourceKind| {
            scope(&request(method, path), found).map(str::to_owned)
        };
        assert_eq!(
            at("GET", "/api/v1/namespaces/a/pods/p", &pods),
            Ok("a".into())
        );
        assert_eq!(at("GET", "/api/v1/pods", &pods), Ok("".into()));
        let unplaced = at("GET", "/api/v1/pods/p", &pods).unwrap_err();
        assert!(
            unplaced
                .message
                .contains("must name the object's namespace")
        );
        let namespaces = kind("Namespace", false);
        assert_eq!(
            at("GET", "/api/v1/namespaces/kube-system", &namespaces),
            Ok("".into())
        );
        let nodes = kind("Node", false);
        let misplaced = at("GET", "/api/v1/namespaces/a/nodes/n", &nodes).unwrap_err();
        assert!(
            misplaced.message.contains("cluster-scoped"),
            "{}",
            misplaced.message
        );
    }

    #[test]
    fn an_object_body_must_be_the_object_its_path_names() {
        let configmap = GroupVersionKind::gvk("", "v1", "ConfigMap");
        let target = ObjectRef::new(&configmap, "a", "web");
        let sent = |kind: &GroupVersionKind, namespace: &str, name: &str| {
            ObjectRef::new(kind, namespace, name)
        };
        assert!(same_object(&sent(&configmap, "a", "web"), &target, false).is_ok());
        assert!(same_object(&sent(&configmap, "", "web"), &target, false).is_ok());
        assert!(same_object(&sent(&configmap, "", "other"), &target, true).is_ok());
        let secret = GroupVersionKind::gvk("", "v1", "Secret");
        let cases = [
            (sent(&secret, "a", "web"), "the body is a v1 Secret"),
            (sent(&configmap, "b", "web"), "namespace b"),
            (sent(&configmap, "a", "other"), "name other"),
        ];
        for (body, why) in cases {
            let refused = same_object(&body, &target, false).unwrap_err();
            assert!(refused.message.contains(why), "{}", refused.message);
        }
    }

    #[test]
    fn patches_are_read_by_their_media_type() {
        let apply = request("PATCH", "/api/v1/namespaces/a/configmaps/web?force=true");
        let text = || "{}".to_owned();
        assert!(matches!(
            patch_text("application/apply-patch+yaml", text(), &apply),
            Ok(PatchText::Apply { force: true, .. })
        ));
        assert!(matches!(
            patch_text("application/strategic-merge-patch+json", text(), &apply),
            Ok(PatchText::Merge(_))
        ));
        let cbor = patch_text("application/cbor", text(), &apply)
            .err()
            .unwrap();
        assert!(
            cbor.message.contains("\"application/cbor\""),
            "{}",
            cbor.message
        );
        assert!(json_media("application/vnd.kubernetes.protobuf").is_err());
    }
}
