//! Fuzzes the reading of a guest's raw apiserver request (`host/contract/src/request_info.rs`):
//! what it accepts is sent as [`ResourceRequest::path_and_query`], which must read back as the
//! same request (so the request checked is the request sent), parse as an HTTP URI whose path
//! is exactly the rebuilt one, and carry only validated namespaces and names.

use proptest::prelude::*;

use super::{fuzz, hostile_text, mangled, parse, short_error};
use wasmop_contract::boundary;
use wasmop_contract::request_info::{self, RequestInfo, ResourceRequest};

#[test]
fn fuzz_raw_requests_read_back_as_sent() {
    fuzz("raw-requests", (method(), path()), |(method, path)| {
        let read = parse(method.len() + path.len(), || {
            request_info::parse(&method, &path)
        })?;
        match read {
            Err(error) => short_error(&error.message),
            Ok(RequestInfo::Discovery(sent)) => {
                let again = request_info::parse("GET", &sent);
                prop_assert_eq!(again, Ok(RequestInfo::Discovery(sent.clone())));
                Ok(())
            }
            Ok(RequestInfo::Resource(request)) => sent_as_read(&method, &request),
        }
    });
}

/// The request as the host sends it reads back as `request` (without a field manager), is a URI
/// whose path is the rebuilt one, and names a valid namespace and name.
fn sent_as_read(method: &str, request: &ResourceRequest) -> Result<(), TestCaseError> {
    let sent = request.path_and_query();
    let mut expected = request.clone();
    expected.query.retain(|(key, _)| key != "fieldManager");
    prop_assert_eq!(
        request_info::parse(method, &sent),
        Ok(RequestInfo::Resource(expected))
    );
    let uri: http::Uri = sent
        .parse()
        .map_err(|e| TestCaseError::fail(format!("{sent:?} is not a URI: {e}")))?;
    prop_assert_eq!(uri.path(), request.path());
    prop_assert!(boundary::namespace(&request.namespace).is_ok());
    prop_assert!(request.name.is_empty() || boundary::name(&request.name).is_ok());
    prop_assert!(boundary::dns_label(&request.resource));
    Ok(())
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(&["GET", "POST", "PUT", "PATCH", "DELETE"][..]).prop_map(str::to_owned),
        1 => hostile_text(),
    ]
}

/// Paths near the apiserver's shapes, mangled now and then, with queries of forwarded and
/// hostile parameters.
fn path() -> impl Strategy<Value = String> {
    let start = prop::sample::select(
        &[
            "/api/v1",
            "/apis/apps/v1",
            "/apis/example.com/v1alpha1",
            "/api",
            "/apis",
            "",
            "/version",
        ][..],
    );
    let segment = prop_oneof![
        3 => prop::sample::select(&["namespaces", "default", "pods", "configmaps", "status", "scale", "proxy", "watch", "web"][..]).prop_map(str::to_owned),
        1 => hostile_text(),
    ];
    let key = prop_oneof![
        3 => prop::sample::select(&["labelSelector", "fieldSelector", "limit", "continue", "watch", "fieldManager", "dryRun", "force"][..]).prop_map(str::to_owned),
        1 => hostile_text(),
    ];
    let query = prop::collection::vec((key, hostile_text()), 0..4);
    let raw = (start, prop::collection::vec(segment, 0..6), query).prop_map(
        |(start, segments, query)| {
            let mut path = start.to_owned();
            for segment in segments {
                path.push('/');
                path.push_str(&segment);
            }
            if !query.is_empty() {
                let pairs: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
                path.push('?');
                path.push_str(&pairs.join("&"));
            }
            path
        },
    );
    mangled(raw)
}
