//! The raw requests of a plugin's own Kubernetes client (the `transport` import), sent as the
//! runtime rebuilt and checked them: resources are resolved to kinds through discovery (kept
//! once found, so what a plugin can make the host remember is what the apiserver serves), and an
//! answer is read up to the size the runtime allows, never further.
//!
//! These requests bypass the read-your-writes overlay and the shard label of [`super`]'s writes:
//! what a plugin sends this way is what the apiserver gets.

use http_body_util::BodyExt;
use kube::core::GroupVersion;
use kube::discovery::{self, Scope};

use super::{PluginClient, api_error};
use wasmop_contract::imports::{Answer, AnswerRoom, ApiError, ApiErrorKind, Forward, ResourceKind};
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

    /// Sends `request` and reads the answer into bytes `room` admits, each before it is taken.
    pub(super) async fn send_raw(
        &self,
        request: Forward,
        room: &dyn AnswerRoom,
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
        let reading = |e: String| {
            ApiError::new(
                ApiErrorKind::Unavailable,
                format!(
                    "reading the apiserver's answer to {} {}: {e}",
                    request.method, request.path
                ),
            )
        };
        let body = read_admitted(answer.into_body(), room, reading).await?;
        Ok(Answer {
            status,
            content_type,
            body,
        })
    }
}

/// `body` read whole into a buffer each growth of which `room` admits before it is made: what is
/// admitted is the buffer's capacity, as the allocator holds it. The buffer starts at the
/// length the answer announces and doubles as it grows, but never past what `room` admits: when
/// the doubled buffer has no room, it grows by exactly what the next frame needs.
async fn read_admitted<B>(
    mut body: B,
    room: &dyn AnswerRoom,
    reading: impl Fn(String) -> ApiError,
) -> Result<Vec<u8>, ApiError>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let mut read: Vec<u8> = Vec::new();
    let announced = usize::try_from(body.size_hint().lower()).unwrap_or(usize::MAX);
    grow(&mut read, announced, room)?;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| reading(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let needed = read.len().saturating_add(data.len());
        grow(&mut read, needed, room)?;
        read.extend_from_slice(&data);
    }
    Ok(read)
}

/// `read`'s capacity made at least `needed`, doubled when `room` admits that and exactly
/// `needed` when it admits only that.
fn grow(read: &mut Vec<u8>, needed: usize, room: &dyn AnswerRoom) -> Result<(), ApiError> {
    let held = read.capacity();
    if needed <= held {
        return Ok(());
    }
    let doubled = held.saturating_mul(2);
    let capacity = match doubled > needed && room.admit(doubled - held).is_ok() {
        true => doubled,
        false => {
            room.admit(needed - held)?;
            needed
        }
    };
    read.reserve_exact(capacity - read.len());
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use std::sync::Mutex;

    use bytes::Bytes;
    use http_body_util::StreamBody;
    use hyper::body::Frame;

    /// A room of `most` bytes that counts what it admitted.
    struct Counted {
        admitted: Mutex<usize>,
        most: usize,
    }

    impl AnswerRoom for Counted {
        fn admit(&self, more: usize) -> Result<(), ApiError> {
            let mut admitted = self.admitted.lock().unwrap();
            if *admitted + more > self.most {
                return Err(ApiError::new(ApiErrorKind::Unavailable, "no room"));
            }
            *admitted += more;
            Ok(())
        }
    }

    async fn read_chunks(
        chunks: &[&'static [u8]],
        most: usize,
    ) -> (Result<Vec<u8>, ApiError>, usize) {
        let frames = chunks
            .iter()
            .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from_static(c))));
        let body = StreamBody::new(futures::stream::iter(frames.collect::<Vec<_>>()));
        let room = Counted {
            admitted: Mutex::new(0),
            most,
        };
        let read = read_admitted(body, &room, |e| ApiError::new(ApiErrorKind::Unavailable, e));
        let read = read.await;
        let admitted = *room.admitted.lock().unwrap();
        (read, admitted)
    }

    #[tokio::test]
    async fn every_growth_of_an_answer_is_admitted_before_it_is_made() {
        let chunks: [&[u8]; 4] = [b"{\"items\"", b":[", b"1,2,3,4,5,6,7,8,9", b"]}"];
        let (read, admitted) = read_chunks(&chunks, 1000).await;
        let read = read.unwrap();
        assert_eq!(read, chunks.concat());
        assert_eq!(
            admitted,
            read.capacity(),
            "the buffer's capacity is what was admitted"
        );

        let (refused, admitted) = read_chunks(&chunks, 12).await;
        assert_eq!(refused.unwrap_err().message, "no room");
        assert!(
            admitted <= 12,
            "nothing past the room was taken: {admitted}"
        );
    }

    #[tokio::test]
    async fn an_answer_fits_a_room_just_larger_than_itself() {
        let chunks: [&[u8]; 5] = [b"{\"items\"", b":[", b"1,2,3,4,5,6,7,8,9", b",10,11", b"]}"];
        let length: usize = chunks.iter().map(|c| c.len()).sum();
        let (read, admitted) = read_chunks(&chunks, length + 1).await;
        assert_eq!(read.unwrap(), chunks.concat());
        assert!(
            admitted <= length + 1,
            "the room was kept: {admitted} admitted"
        );
    }

    #[tokio::test]
    async fn an_announced_length_is_taken_at_once() {
        let answer = Bytes::from_static(b"{\"kind\":\"ConfigMap\",\"data\":{}}");
        let room = Counted {
            admitted: Mutex::new(0),
            most: answer.len(),
        };
        let body = http_body_util::Full::new(answer.clone());
        let read = read_admitted(body, &room, |e| ApiError::new(ApiErrorKind::Unavailable, e));
        let read = read.await.unwrap();
        assert_eq!(read, answer);
        assert_eq!(*room.admitted.lock().unwrap(), answer.len());

        let room = Counted {
            admitted: Mutex::new(0),
            most: answer.len() - 1,
        };
        let body = http_body_util::Full::new(answer);
        let read = read_admitted(body, &room, |e| ApiError::new(ApiErrorKind::Unavailable, e));
        assert_eq!(read.await.unwrap_err().message, "no room");
        assert_eq!(*room.admitted.lock().unwrap(), 0, "nothing was taken");
    }
}
