//! The raw requests of a plugin's own Kubernetes client (the `transport` import), sent as the
//! runtime rebuilt and checked them: resources are resolved to kinds through discovery (kept
//! once found, so what a plugin can make the host remember is what the apiserver serves), and an
//! answer is read up to the size the runtime allows, never further.
//!
//! These requests bypass the read-your-writes overlay and the shard label of [`super`]'s writes:
//! what a plugin sends this way is what the apiserver gets.

use http_body_util::{BodyExt, Limited};
use kube::core::GroupVersion;
use kube::discovery::{self, Scope};

use super::{PluginClient, api_error};
use wasmop_contract::imports::{Answer, ApiError, ApiErrorKind, Forward, ResourceKind};
use wasmop_contract::object::GroupVersionKind;

impl PluginClient {
    /// The kind `resource` of `group`/`version` holds, from the apiserver's discovery.
    pub(super) async fn discover(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Result<ResourceKind, ApiError> {
        let key = (group.to_owned(), version.to_owned(), resource.to_owned());
        if let Some(found) = self
            .kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(found.clone());
        }
        let served = discovery::pinned_group(&self.client, &GroupVersion::gv(group, version))
            .await
            .map_err(api_error)?;
        let found = served
            .versioned_resources(version)
            .into_iter()
            .find(|(api, _)| api.plural == resource)
            .map(|(api, capabilities)| ResourceKind {
                kind: GroupVersionKind::gvk(group, version, &api.kind),
                namespaced: capabilities.scope == Scope::Namespaced,
            })
            .ok_or_else(|| {
                let group_version = GroupVersion::gv(group, version).api_version();
                ApiError::new(
                    ApiErrorKind::NotFound,
                    format!("the apiserver serves no resource {resource} in {group_version}"),
                )
            })?;
        self.kinds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, found.clone());
        Ok(found)
    }

    /// Sends `request` and reads at most `max_bytes` of the answer.
    pub(super) async fn send_raw(
        &self,
        request: Forward,
        max_bytes: usize,
    ) -> Result<Answer, ApiError> {
        let path = match request.method {
            "POST" | "PUT" | "PATCH" => with_field_manager(&request.path, &self.field_manager),
            _ => request.path.clone(),
        };
        let mut builder = ::http::Request::builder()
            .method(request.method)
            .uri(&path)
            .header(::http::header::ACCEPT, "application/json");
        let body = match request.body {
            Some((content_type, body)) => {
                builder = builder.header(::http::header::CONTENT_TYPE, content_type);
                body
            }
            None => Vec::new(),
        };
        let sent = builder
            .body(kube::client::Body::from(body))
            .map_err(|e| ApiError::new(ApiErrorKind::Invalid, e.to_string()))?;
        let answer = self.client.send(sent).await.map_err(api_error)?;
        let status = answer.status().as_u16();
        let content_type = answer
            .headers()
            .get(::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = Limited::new(answer.into_body(), max_bytes)
            .collect()
            .await
            .map_err(|e| {
                ApiError::new(
                    ApiErrorKind::Unavailable,
                    format!(
                        "reading the apiserver's answer to {} {}: {e} (at most {max_bytes} \
                         bytes are read; page a list with limit and continue)",
                        request.method, request.path
                    ),
                )
            })?
            .to_bytes()
            .into();
        Ok(Answer {
            status,
            content_type,
            body,
        })
    }
}

/// `path` with the plugin's field manager added to its query: a write is made as the plugin,
/// whatever manager its client named.
fn with_field_manager(path: &str, field_manager: &str) -> String {
    let manager = form_urlencoded::Serializer::new(String::new())
        .append_pair("fieldManager", field_manager)
        .finish();
    match path.contains('?') {
        true => format!("{path}&{manager}"),
        false => format!("{path}?{manager}"),
    }
}
