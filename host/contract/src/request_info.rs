//! What a raw apiserver request a guest's own HTTP client sends (the `transport` import) asks
//! for, read by the apiserver's request-info rules: the method and path give the verb, group,
//! version, resource, namespace, name and subresource; the query its options.
//!
//! Only what the host can check is read; anything else is `invalid`, and nothing is sent:
//! watches (the host's informers watch), subresources other than `status`, the legacy
//! `/api/v1/watch` and `/proxy` prefixes, escaped (`%`) or empty path segments, and query
//! parameters outside [`ALLOWED_QUERY`]. Discovery paths and `/version` are read-only. The host
//! sends [`ResourceRequest::path_and_query`] — the request rebuilt from the parts checked —
//! never the guest's text, so what was checked is what is sent.

use crate::boundary::{self, cut, invalid};
use crate::imports::ApiError;
use crate::registration::Verb;

/// The longest path and query a guest may send: selectors and continue tokens fit well within.
pub const MAX_PATH: usize = 16 << 10;

/// The query parameters the host forwards. `fieldManager` is read but replaced by the plugin's
/// own; `watch` is refused.
const ALLOWED_QUERY: [&str; 16] = [
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "timeout",
    "dryRun",
    "fieldValidation",
    "fieldManager",
    "force",
    "gracePeriodSeconds",
    "propagationPolicy",
    "orphanDependents",
    "pretty",
];

/// The subresources of a namespace that are not resources in it (the apiserver's
/// `namespaceSubresources`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// What a raw request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestInfo {
    /// A read of the API's shape: discovery or `/version`, at this path.
    Discovery(String),
    /// A request on a resource.
    Resource(ResourceRequest),
}

/// The verb of a resource request, as the apiserver names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestVerb {
    /// `GET` of one object.
    Get,
    /// `GET` of a collection.
    List,
    /// `POST` to a collection.
    Create,
    /// `PUT` of one object.
    Update,
    /// `PATCH` of one object.
    Patch,
    /// `DELETE` of one object.
    Delete,
    /// `DELETE` of a collection.
    DeleteCollection,
}

/// A request on a resource, checked part by part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// The verb.
    pub verb: RequestVerb,
    /// The API group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource (a plural, e.g. `deployments`).
    pub resource: String,
    /// The namespace the path names; empty when none (the name itself for a `namespaces` request).
    pub namespace: String,
    /// The object's name; empty for a collection.
    pub name: String,
    /// Whether it is on the `status` subresource.
    pub status: bool,
    /// The query parameters, decoded, in the order sent.
    pub query: Vec<(String, String)>,
}

impl RequestVerb {
    /// The verbs a plugin's permissions must grant for it (all of them) on the resource's kind;
    /// on the status subresource a write is [`Verb::Status`].
    pub fn needs(self, status: bool) -> &'static [Verb] {
        match (self, status) {
            (RequestVerb::Update | RequestVerb::Patch, true) => &[Verb::Status],
            (RequestVerb::Get, _) => &[Verb::Get],
            (RequestVerb::List, _) => &[Verb::List],
            (RequestVerb::Create, _) => &[Verb::Create],
            (RequestVerb::Update, _) => &[Verb::Update],
            (RequestVerb::Patch, _) => &[Verb::Patch],
            (RequestVerb::Delete, _) => &[Verb::Delete],
            (RequestVerb::DeleteCollection, _) => &[Verb::List, Verb::Delete],
        }
    }

    /// The HTTP method that sends it.
    pub fn method(self) -> &'static str {
        match self {
            RequestVerb::Get | RequestVerb::List => "GET",
            RequestVerb::Create => "POST",
            RequestVerb::Update => "PUT",
            RequestVerb::Patch => "PATCH",
            RequestVerb::Delete | RequestVerb::DeleteCollection => "DELETE",
        }
    }
}

impl ResourceRequest {
    /// The path exactly as the host sends it, rebuilt from the checked parts.
    pub fn path(&self) -> String {
        let mut path = match self.group.as_str() {
            "" => format!("/api/{}", self.version),
            group => format!("/apis/{group}/{}", self.version),
        };
        let namespaces = self.group.is_empty() && self.resource == "namespaces";
        if !self.namespace.is_empty() && !namespaces {
            path.push_str(&format!("/namespaces/{}", self.namespace));
        }
        path.push('/');
        path.push_str(&self.resource);
        if !self.name.is_empty() {
            path.push('/');
            path.push_str(&self.name);
        }
        if self.status {
            path.push_str("/status");
        }
        path
    }

    /// The path and query exactly as the host sends them: every query parameter but
    /// `fieldManager` (the client adds the plugin's own to a write), encoded again.
    pub fn path_and_query(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (key, value) in &self.query {
            if key != "fieldManager" {
                query.append_pair(key, value);
            }
        }
        match query.finish() {
            query if query.is_empty() => self.path(),
            query => format!("{}?{query}", self.path()),
        }
    }

    /// Whether the query sets `name` to `true`.
    pub fn flag(&self, name: &str) -> bool {
        self.query
            .iter()
            .any(|(key, value)| key == name && value == "true")
    }
}

/// Reads what `method` on `path` (with its query) asks for, or says why the host refuses it.
pub fn parse(method: &str, path: &str) -> Result<RequestInfo, ApiError> {
    boundary::bounded("the request's path", path, MAX_PATH)?;
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let segments = segments(path)?;
    let query = query_pairs(query)?;
    match segments.as_slice() {
        ["api"] | ["apis"] | ["version"] | ["api", _] | ["apis", _] | ["apis", _, _] => {
            discovery(method, &segments)
        }
        ["api", version, rest @ ..] => resource(method, "", version, rest, query),
        ["apis", group, version, rest @ ..] => resource(method, group, version, rest, query),
        _ => Err(invalid(format!(
            "path {:?} names no API resource: the transport sends requests on resources, \
             discovery (/api, /apis) and /version",
            cut(path)
        ))),
    }
}

/// A path's segments: absolute, none empty or escaped; one trailing `/` is ignored.
fn segments(path: &str) -> Result<Vec<&str>, ApiError> {
    let Some(inner) = path.strip_prefix('/') else {
        return Err(invalid(format!("path {:?} is not absolute", cut(path))));
    };
    let inner = inner.strip_suffix('/').unwrap_or(inner);
    let segments: Vec<&str> = inner.split('/').collect();
    let plain = |s: &&str| !s.is_empty() && *s != "." && *s != ".." && !s.contains('%');
    match segments.iter().all(plain) {
        true => Ok(segments),
        false => Err(invalid(format!(
            "path {:?} has an empty, dot or escaped (%) segment",
            cut(path)
        ))),
    }
}

/// A discovery read.
fn discovery(method: &str, segments: &[&str]) -> Result<RequestInfo, ApiError> {
    if method != "GET" {
        return Err(invalid(format!(
            "{} of a discovery path: discovery is read with GET",
            cut(method)
        )));
    }
    let malformed = match segments {
        ["apis", group, rest @ ..] => (!boundary::dns_subdomain(group))
            .then(|| format!("group {:?}", cut(group)))
            .or_else(|| {
                rest.iter()
                    .find(|v| !boundary::dns_label(v))
                    .map(|v| format!("version {:?}", cut(v)))
            }),
        ["api", version] => {
            (!boundary::dns_label(version)).then(|| format!("version {:?}", cut(version)))
        }
        _ => None,
    };
    match malformed {
        Some(what) => Err(invalid(format!("discovery path with a malformed {what}"))),
        None => Ok(RequestInfo::Discovery(format!("/{}", segments.join("/")))),
    }
}

/// A request on a resource: `rest` is what follows the group version.
fn resource(
    method: &str,
    group: &str,
    version: &str,
    rest: &[&str],
    query: Vec<(String, String)>,
) -> Result<RequestInfo, ApiError> {
    if !group.is_empty() && !boundary::dns_subdomain(group) {
        return Err(invalid(format!(
            "group {:?} is not a DNS subdomain",
            cut(group)
        )));
    }
    if !boundary::dns_label(version) {
        return Err(invalid(format!(
            "version {:?} is not a DNS label",
            cut(version)
        )));
    }
    if let [special @ ("watch" | "proxy"), ..] = rest {
        return Err(invalid(format!(
            "the /{special} path prefix is not available through the transport"
        )));
    }
    let (namespace, parts) = match rest {
        ["namespaces", namespace, next, ..] if !NAMESPACE_SUBRESOURCES.contains(next) => {
            (*namespace, &rest[2..])
        }
        ["namespaces", namespace, ..] => (*namespace, rest),
        _ => ("", rest),
    };
    let (resource, name, subresource) = match parts {
        [resource] => (*resource, "", None),
        [resource, name] => (*resource, *name, None),
        [resource, name, subresource] => (*resource, *name, Some(*subresource)),
        _ => {
            return Err(invalid(format!(
                "path {:?} names more than a resource, a name and a subresource",
                cut(&rest.join("/"))
            )));
        }
    };
    boundary::namespace(namespace)?;
    let namespaces = group.is_empty() && resource == "namespaces";
    if namespaces && namespace != name {
        return Err(invalid("a namespace is not in a namespace"));
    }
    if !boundary::dns_label(resource) {
        return Err(invalid(format!(
            "resource {:?} is not a resource name",
            cut(resource)
        )));
    }
    if !name.is_empty() {
        boundary::name(name)?;
    }
    let status = match subresource {
        None => false,
        Some("status") => true,
        Some(other) => {
            return Err(invalid(format!(
                "subresource {:?} of {resource} is not available through the transport (only \
                 status is)",
                cut(other)
            )));
        }
    };
    let verb = verb(method, !name.is_empty(), status, &query)?;
    Ok(RequestInfo::Resource(ResourceRequest {
        verb,
        group: group.to_owned(),
        version: version.to_owned(),
        resource: resource.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        status,
        query,
    }))
}

/// The verb of `method` on one object (`named`) or a collection.
fn verb(
    method: &str,
    named: bool,
    status: bool,
    query: &[(String, String)],
) -> Result<RequestVerb, ApiError> {
    let verb = match (method, named) {
        ("GET", true) => RequestVerb::Get,
        ("GET", false) => RequestVerb::List,
        ("POST", false) => RequestVerb::Create,
        ("PUT", true) => RequestVerb::Update,
        ("PATCH", true) => RequestVerb::Patch,
        ("DELETE", true) => RequestVerb::Delete,
        ("DELETE", false) => RequestVerb::DeleteCollection,
        ("POST" | "PUT" | "PATCH", _) => {
            let what = if named { "one object" } else { "a collection" };
            return Err(invalid(format!("{method} of {what} is not an API request")));
        }
        _ => {
            return Err(invalid(format!(
                "method {:?} is not GET, POST, PUT, PATCH or DELETE",
                cut(method)
            )));
        }
    };
    if status
        && !matches!(
            verb,
            RequestVerb::Get | RequestVerb::Update | RequestVerb::Patch
        )
    {
        return Err(invalid(format!("{method} of the status subresource")));
    }
    let watches = query
        .iter()
        .any(|(key, value)| key == "watch" && matches!(value.as_str(), "true" | "1"));
    if watches {
        return Err(invalid(
            "watches are not available through the transport: the host's informers watch, read \
             the cache",
        ));
    }
    Ok(verb)
}

/// The query's parameters, decoded; each a parameter the host forwards (or `watch`, refused
/// with its verb).
fn query_pairs(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    match pairs
        .iter()
        .find(|(key, _)| key != "watch" && !ALLOWED_QUERY.contains(&key.as_str()))
    {
        Some((key, _)) => Err(invalid(format!(
            "query parameter {:?} is not one the transport forwards ({})",
            cut(key),
            ALLOWED_QUERY.join(", ")
        ))),
        None => Ok(pairs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, path: &str) -> ResourceRequest {
        match parse(method, path) {
            Ok(RequestInfo::Resource(request)) => request,
            other => panic!("{method} {path}: {other:?}"),
        }
    }

    fn refused(method: &str, path: &str) -> String {
        match parse(method, path) {
            Err(error) => error.message,
            Ok(info) => panic!("{method} {path} was read as {info:?}"),
        }
    }

    #[test]
    fn paths_read_as_the_apiserver_reads_them_and_are_rebuilt_the_same() {
        let cases = [
            (
                "GET",
                "/api/v1/namespaces/default/pods/web",
                RequestVerb::Get,
                "",
                "pods",
                "default",
                "web",
                false,
            ),
            (
                "GET",
                "/api/v1/pods",
                RequestVerb::List,
                "",
                "pods",
                "",
                "",
                false,
            ),
            (
                "POST",
                "/apis/apps/v1/namespaces/a/deployments",
                RequestVerb::Create,
                "apps",
                "deployments",
                "a",
                "",
                false,
            ),
            (
                "PUT",
                "/apis/apps/v1/namespaces/a/deployments/d/status",
                RequestVerb::Update,
                "apps",
                "deployments",
                "a",
                "d",
                true,
            ),
            (
                "PATCH",
                "/apis/example.com/v1/foos/x",
                RequestVerb::Patch,
                "example.com",
                "foos",
                "",
                "x",
                false,
            ),
            (
                "DELETE",
                "/api/v1/namespaces/a/configmaps",
                RequestVerb::DeleteCollection,
                "",
                "configmaps",
                "a",
                "",
                false,
            ),
            (
                "GET",
                "/api/v1/namespaces/kube-system",
                RequestVerb::Get,
                "",
                "namespaces",
                "kube-system",
                "kube-system",
                false,
            ),
            (
                "PUT",
                "/api/v1/namespaces/a/status",
                RequestVerb::Update,
                "",
                "namespaces",
                "a",
                "a",
                true,
            ),
            (
                "GET",
                "/api/v1/namespaces",
                RequestVerb::List,
                "",
                "namespaces",
                "",
                "",
                false,
            ),
        ];
        for (method, path, verb, group, resource, namespace, name, status) in cases {
            let read = request(method, path);
            assert_eq!(
                (
                    read.verb,
                    read.group.as_str(),
                    read.resource.as_str(),
                    read.namespace.as_str(),
                    read.name.as_str(),
                    read.status
                ),
                (verb, group, resource, namespace, name, status),
                "{method} {path}"
            );
            assert_eq!(read.path(), path, "{method} {path} is sent as read");
        }
    }

    #[test]
    fn the_query_is_forwarded_encoded_again_without_a_field_manager() {
        let read = request(
            "PATCH",
            "/apis/apps/v1/namespaces/a/deployments/d?fieldManager=someone-else&force=true&dryRun=All",
        );
        assert_eq!(
            read.path_and_query(),
            "/apis/apps/v1/namespaces/a/deployments/d?force=true&dryRun=All"
        );
        assert!(read.flag("force"));
        let list = request(
            "GET",
            "/api/v1/pods?labelSelector=app%3Dweb%2Ctier+in+%28a%29&limit=5",
        );
        assert_eq!(
            list.query[0],
            ("labelSelector".into(), "app=web,tier in (a)".into())
        );
        assert_eq!(
            list.path_and_query(),
            "/api/v1/pods?labelSelector=app%3Dweb%2Ctier+in+%28a%29&limit=5"
        );
        assert_eq!(
            request("GET", "/api/v1/pods?").path_and_query(),
            "/api/v1/pods"
        );
    }

    #[test]
    fn discovery_and_version_are_reads_of_their_own_paths() {
        for path in [
            "/api",
            "/apis",
            "/api/v1",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/apis/apps/v1/",
        ] {
            match parse("GET", path) {
                Ok(RequestInfo::Discovery(read)) => assert_eq!(read, path.trim_end_matches('/')),
                other => panic!("{path}: {other:?}"),
            }
        }
        assert!(refused("POST", "/apis").contains("discovery is read with GET"));
        assert!(refused("GET", "/openapi/v2").contains("names no API resource"));
        assert!(refused("GET", "/").contains("empty"));
        assert!(refused("GET", "/apis/Bad_Group").contains("malformed group"));
    }

    #[test]
    fn what_the_host_cannot_check_is_refused_before_anything_is_sent() {
        let cases = [
            (
                "GET",
                "/api/v1/namespaces/a/pods?watch=true",
                "watches are not available",
            ),
            ("GET", "/api/v1/watch/pods", "/watch path prefix"),
            (
                "GET",
                "/api/v1/namespaces/a/services/web:80/proxy/x",
                "more than a resource",
            ),
            (
                "GET",
                "/api/v1/namespaces/a/services/web/proxy",
                "subresource \"proxy\"",
            ),
            (
                "POST",
                "/api/v1/namespaces/a/pods/web/eviction",
                "subresource \"eviction\"",
            ),
            (
                "GET",
                "/api/v1/namespaces/a/pods/%2e%2e",
                "escaped (%) segment",
            ),
            ("GET", "/api/v1/namespaces/a/pods/..", "dot or escaped"),
            ("GET", "/api/v1/namespaces/a//pods", "empty"),
            ("GET", "api/v1/pods", "not absolute"),
            ("GET", "/api/v1/namespaces/A/pods", "namespace \"A\""),
            (
                "GET",
                "/api/v1/pods?impersonate=root",
                "query parameter \"impersonate\"",
            ),
            (
                "POST",
                "/api/v1/namespaces/a/pods/web",
                "POST of one object",
            ),
            ("CONNECT", "/api/v1/pods", "method \"CONNECT\""),
            (
                "DELETE",
                "/api/v1/namespaces/a/pods/web/status",
                "DELETE of the status subresource",
            ),
            ("GET", "/apis/apps/V1/deployments", "version \"V1\""),
            (
                "PUT",
                "/api/v1/namespaces/a/namespaces/b",
                "not in a namespace",
            ),
            (
                "GET",
                "/api/v1/namespaces/a/namespaces",
                "not in a namespace",
            ),
        ];
        for (method, path, why) in cases {
            let message = refused(method, path);
            assert!(message.contains(why), "{method} {path}: {message}");
        }
        let long = format!("/api/v1/pods?labelSelector={}", "a".repeat(MAX_PATH));
        assert!(refused("GET", &long).contains("over the limit"));
    }

    #[test]
    fn each_verb_needs_what_rbac_would_ask_of_the_kind() {
        assert_eq!(RequestVerb::Patch.needs(true), [Verb::Status]);
        assert_eq!(RequestVerb::Get.needs(true), [Verb::Get]);
        assert_eq!(
            RequestVerb::DeleteCollection.needs(false),
            [Verb::List, Verb::Delete]
        );
    }
}
