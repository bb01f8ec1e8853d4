//! One review in, its answer out: the body the apiserver posted (bounded, parsed with kube's
//! admission and conversion types), the plugin's call, and the review to send back. Defaulting
//! answers carry the difference between the object sent and the object the plugin returned as a
//! JSONPatch; a conversion converts every object of the review or fails as a whole.
//!
//! A review whose object nests deeper than [`depth::MAX_DEPTH`] is measured before it is parsed and
//! answered without the plugin: an admission is refused, a conversion fails, each saying why (its
//! uid read with everything else skipped without recursion), so no depth fails a review as
//! malformed or reaches a parser's recursion limit.

use std::fmt;

use futures::future::BoxFuture;
use json_patch::Patch;
use kube::core::admission::{AdmissionRequest as Review, AdmissionResponse, AdmissionReview};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::{DynamicObject, Status};
use serde_json::Value;

use crate::runtime::{DispatchError, Plugin};
use wasmop_contract::depth;
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use wasmop_contract::{AdmissionRequest, FailurePolicy, Operation, UserInfo, Verdict};

/// The largest review body accepted: the apiserver's own request limit is 3 MiB, and an update's
/// review carries the object twice.
pub const MAX_BODY: usize = 7 << 20;

/// Which admission call a review is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// `validate`: admitted or refused.
    Validate,
    /// `default`: the object patched.
    Default,
}

/// A review that cannot be answered at all.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// The body is larger than [`MAX_BODY`].
    #[error("the review is {0} bytes, over the limit of {MAX_BODY}")]
    TooLarge(usize),
    /// The body is not a review of the expected kind.
    #[error("not a {kind}: {reason}")]
    Malformed {
        /// AdmissionReview or ConversionReview.
        kind: &'static str,
        /// Why.
        reason: Malformed,
    },
}

/// Why a body is not a review of its kind.
#[derive(Debug, thiserror::Error)]
pub enum Malformed {
    /// Not JSON of a review's shape.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A review without its request.
    #[error("it has no request")]
    NoRequest,
}

/// A review's answer: the JSON for the apiserver, and what became of the review.
#[derive(Debug)]
pub struct Answer {
    /// The review with its response.
    pub json: Vec<u8>,
    /// Whether the plugin failed to answer, and whether the admission was refused.
    pub outcome: Outcome,
}

/// One review's answer, as an [`AroundReview`] sees it.
pub type Reviewed = Result<Answer, ReviewError>;

/// Installed around every review the webhook server answers (`wasmop run --record` installs the
/// fixture recorder here): it runs the review and sees what was asked and answered.
pub trait AroundReview: Send + Sync + fmt::Debug + 'static {
    /// Runs `call`, `plugin`'s answer to the review `body` posted to its `hook` (`validate`,
    /// `default` or `convert`), and returns it.
    fn review<'a>(
        &'a self,
        plugin: &'a str,
        hook: &'a str,
        body: &'a [u8],
        call: BoxFuture<'a, Reviewed>,
    ) -> BoxFuture<'a, Reviewed>;
}

/// What became of a review, for its metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The plugin trapped, ran out of time or answered garbage (so its failure policy or a
    /// conversion failure spoke for it).
    pub plugin_failed: bool,
    /// The admission was refused, by the plugin's verdict or by the host (an object nested too
    /// deep to review), not by the failure policy of a plugin that failed.
    pub denied: bool,
}

/// Answers an AdmissionReview `body` with `plugin`'s `hook`.
pub async fn admission(
    plugin: &Plugin,
    hook: Hook,
    policy: FailurePolicy,
    body: &[u8],
) -> Result<Answer, ReviewError> {
    let malformed = |reason: Malformed| ReviewError::Malformed {
        kind: "AdmissionReview",
        reason,
    };
    bounded(body)?;
    // The object sits inside the review and its request.
    if let Err(too_deep) = depth::check("the object under review", body, 2) {
        let mut response = AdmissionResponse::invalid(too_deep);
        response.uid = uid(body).map_err(malformed)?;
        let refused = Outcome {
            plugin_failed: false,
            denied: true,
        };
        return Ok(answer(&response.into_review(), refused));
    }
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_slice(body).map_err(|e| malformed(e.into()))?;
    let review: Review<DynamicObject> = review
        .try_into()
        .map_err(|_| malformed(Malformed::NoRequest))?;
    let request = request(&review).map_err(malformed)?;
    let response = AdmissionResponse::from(&review);
    let answered = match hook {
        Hook::Validate => validated(plugin, &request, response).await,
        Hook::Default => defaulted(plugin, &request, response).await,
    };
    let (response, plugin_failed) = match answered {
        Ok(response) => (response, false),
        Err(error @ DispatchError::Refused { .. }) => (
            warned(
                AdmissionResponse::from(&review),
                vec![format!("admitted without its webhook: {error}")],
            ),
            false,
        ),
        Err(error) => (
            failed(AdmissionResponse::from(&review), &error, policy),
            true,
        ),
    };
    let denied = !plugin_failed && !response.allowed;
    let outcome = Outcome {
        plugin_failed,
        denied,
    };
    Ok(answer(&response.into_review(), outcome))
}

/// Answers a ConversionReview `body` with `plugin`'s `convert`.
pub async fn conversion(plugin: &Plugin, body: &[u8]) -> Result<Answer, ReviewError> {
    let malformed = |reason: Malformed| ReviewError::Malformed {
        kind: "ConversionReview",
        reason,
    };
    bounded(body)?;
    // The objects sit inside the review, its request and their list.
    if let Err(too_deep) = depth::check("an object to convert", body, 3) {
        let status = Status::failure(&too_deep.to_string(), "ConversionFailed");
        let mut response = ConversionResponse::invalid(status);
        response.uid = uid(body).map_err(malformed)?;
        return Ok(answer(&response.into_review(), Outcome::default()));
    }
    let review: ConversionReview = serde_json::from_slice(body).map_err(|e| malformed(e.into()))?;
    let mut request =
        ConversionRequest::from_review(review).map_err(|_| malformed(Malformed::NoRequest))?;
    let desired = request.desired_api_version.clone();
    let objects = std::mem::take(&mut request.objects);
    let response = ConversionResponse::for_request(request);
    let (response, plugin_failed) = match convert_all(plugin, &objects, &desired).await {
        Ok(converted) => (response.success(converted), false),
        Err((message, failed)) => (
            response.failure(Status::failure(&message, "ConversionFailed")),
            failed,
        ),
    };
    let outcome = Outcome {
        plugin_failed,
        denied: false,
    };
    Ok(answer(&response.into_review(), outcome))
}

/// The review to send back.
fn answer(review: &impl serde::Serialize, outcome: Outcome) -> Answer {
    Answer {
        json: serde_json::to_vec(review).expect("a review serialises"),
        outcome,
    }
}

/// The uid of a review's request, read with everything else skipped (without recursion, however
/// deep it nests).
fn uid(body: &[u8]) -> Result<String, Malformed> {
    #[derive(serde::Deserialize)]
    struct Review {
        request: Option<Request>,
    }
    #[derive(serde::Deserialize)]
    struct Request {
        uid: String,
    }
    let review: Review = serde_json::from_slice(body)?;
    let request = review.request.ok_or(Malformed::NoRequest)?;
    Ok(request.uid)
}

/// Every object converted to `desired`, or why not and whether the plugin failed to answer.
async fn convert_all(
    plugin: &Plugin,
    objects: &[Value],
    desired: &str,
) -> Result<Vec<Value>, (String, bool)> {
    let mut converted = Vec::with_capacity(objects.len());
    for object in objects {
        let key = ObjectKey::new(
            object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(""),
            object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""),
        );
        let answer = plugin
            .convert(&key, &object.to_string(), desired)
            .await
            .map_err(|e| (e.to_string(), true))?;
        let text =
            answer.map_err(|reason| (format!("plugin {}: {reason}", plugin.name()), false))?;
        converted.push(serde_json::from_str(&text).map_err(|e| (e.to_string(), true))?);
    }
    Ok(converted)
}

async fn validated(
    plugin: &Plugin,
    request: &AdmissionRequest,
    response: AdmissionResponse,
) -> Result<AdmissionResponse, DispatchError> {
    Ok(match plugin.validate(request).await? {
        Verdict::Allowed(warnings) => warned(response, warnings),
        Verdict::Denied(denial) => warned(response.deny(denial.message), denial.warnings),
    })
}

async fn defaulted(
    plugin: &Plugin,
    request: &AdmissionRequest,
    response: AdmissionResponse,
) -> Result<AdmissionResponse, DispatchError> {
    let Some(sent) = &request.object else {
        return Ok(response);
    };
    let returned = match plugin.default(request).await? {
        Ok(object) => object,
        Err(denial) => return Ok(warned(response.deny(denial.message), denial.warnings)),
    };
    let (Ok(sent), Ok(returned)) = (
        serde_json::from_str::<Value>(sent),
        serde_json::from_str::<Value>(&returned),
    ) else {
        return Ok(response.deny("the object could not be read back"));
    };
    let patch: Patch = json_patch::diff(&sent, &returned);
    if patch.0.is_empty() {
        return Ok(response);
    }
    Ok(match response.clone().with_patch(patch) {
        Ok(patched) => patched,
        Err(error) => response.deny(error.to_string()),
    })
}

/// The answer `policy` gives for a plugin that failed with `error`.
fn failed(
    response: AdmissionResponse,
    error: &DispatchError,
    policy: FailurePolicy,
) -> AdmissionResponse {
    match policy {
        FailurePolicy::Fail => response.deny(error.to_string()),
        FailurePolicy::Ignore => warned(
            response,
            vec![format!(
                "admitted without its webhook (failurePolicy Ignore): {error}"
            )],
        ),
    }
}

fn warned(mut response: AdmissionResponse, warnings: Vec<String>) -> AdmissionResponse {
    if !warnings.is_empty() {
        response.warnings = Some(warnings);
    }
    response
}

fn bounded(body: &[u8]) -> Result<(), ReviewError> {
    match body.len() > MAX_BODY {
        true => Err(ReviewError::TooLarge(body.len())),
        false => Ok(()),
    }
}

/// The plugin's view of a review's request.
fn request(review: &Review<DynamicObject>) -> Result<AdmissionRequest, Malformed> {
    let operation = match review.operation {
        kube::core::admission::Operation::Create => Operation::Create,
        kube::core::admission::Operation::Update => Operation::Update,
        kube::core::admission::Operation::Delete => Operation::Delete,
        kube::core::admission::Operation::Connect => Operation::Connect,
    };
    let json =
        |object: &Option<DynamicObject>| object.as_ref().map(serde_json::to_string).transpose();
    let user = &review.user_info;
    Ok(AdmissionRequest {
        uid: review.uid.clone(),
        kind: GroupVersionKind::gvk(&review.kind.group, &review.kind.version, &review.kind.kind),
        key: ObjectKey::new(review.namespace.as_deref().unwrap_or(""), &review.name),
        operation,
        object: json(&review.object)?,
        old_object: json(&review.old_object)?,
        user: UserInfo {
            username: user.username.clone().unwrap_or_default(),
            uid: user.uid.clone().unwrap_or_default(),
            groups: user.groups.clone().unwrap_or_default(),
        },
        dry_run: review.dry_run,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_uid_of_a_review_is_read_however_deep_its_object() {
        let body = format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{{"object":{},"uid":"u-1"}}}}"#,
            depth::nested(100_000)
        );
        assert_eq!(uid(body.as_bytes()).unwrap(), "u-1");
        let refused = depth::check("the object under review", body.as_bytes(), 2).unwrap_err();
        assert_eq!(refused.depth, 100_000);
        assert!(matches!(
            uid(br#"{"kind":"AdmissionReview"}"#),
            Err(Malformed::NoRequest)
        ));
    }
}
