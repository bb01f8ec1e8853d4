//! Webhook calls recorded as fixtures: a review the webhook server answers while `wasmop run
//! --record` runs becomes a fixture in `DIR/<plugin>/`, beside the plugin's reconciles — the
//! objects its cache reads returned, the wall clock, the review's request as a fixture states it
//! (under `validate`, `default` or `convert`) and the answer it got, as expected. `wasmop test
//! --replay` asks a new version the same and shows where its answer differs.
//!
//! A review of a Secret is not recorded, so no Secret's content reaches a recording (the log
//! says so); neither is one whose body or answer does not read as a review.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::fixture::{Expected, Fixture, Stated, answered, stated};
use crate::record::{self, MAX_RECORDED_BYTES, Recorder, Recording, file_part};
use crate::webhook::{AroundReview, Reviewed};

impl AroundReview for Recorder {
    fn review<'a>(
        &'a self,
        plugin: &'a str,
        hook: &'a str,
        body: &'a [u8],
        call: BoxFuture<'a, Reviewed>,
    ) -> BoxFuture<'a, Reviewed> {
        Box::pin(async move {
            let (answer, recording) = record::recording(call).await;
            if let Ok(answer) = &answer {
                self.save_review(plugin, hook, body, &answer.json, recording)
                    .await;
            }
            answer
        })
    }
}

impl Recorder {
    /// Writes the review `body` posted to `plugin`'s `hook`, answered with `answer`, as a fixture
    /// file; one that cannot or may not be recorded is logged.
    async fn save_review(
        &self,
        plugin: &str,
        hook: &str,
        body: &[u8],
        answer: &[u8],
        recording: Recording,
    ) {
        let fixture = match recording.review_fixture(plugin, hook, body, answer) {
            Ok(fixture) => fixture,
            Err(why) => {
                tracing::warn!(plugin, hook, "webhook call not recorded: {why}");
                return;
            }
        };
        // Named after the object asked about (a conversion's first).
        let request = fixture.validate.as_ref().or(fixture.default.as_ref());
        let object = request.map(|r| &r["object"]).filter(|o| !o.is_null());
        let object = object.or_else(|| request.map(|r| &r["oldObject"]));
        let object = object.or_else(|| fixture.convert.as_ref()?.objects.first());
        let text = |field: &str| {
            let found = object.and_then(|o| o["metadata"][field].as_str());
            file_part(found.unwrap_or_default())
        };
        let call = match hook {
            "validate" => "validating",
            "default" => "defaulting",
            _ => "converting",
        };
        let name = format!("{call}-{}-{}", text("namespace"), text("name"));
        self.store(plugin, &name, &fixture).await;
    }
}

impl Recording {
    /// The fixture of `plugin`'s `hook` answering the review `body` with `answer`, or why it is
    /// not recorded.
    fn review_fixture(
        self,
        plugin: &str,
        hook: &str,
        body: &[u8],
        answer: &[u8],
    ) -> Result<Fixture, String> {
        if self.overflowed {
            return Err(format!(
                "it read over {MAX_RECORDED_BYTES} bytes of objects"
            ));
        }
        let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
        let answer: Value = serde_json::from_slice(answer).map_err(|e| e.to_string())?;
        let asked = stated(&review).ok_or("the review has no request")?;
        let now = k8s_openapi::jiff::Timestamp::from_duration(
            self.now
                .try_into()
                .map_err(|_| "the clock is out of range")?,
        )
        .map_err(|e| e.to_string())?;
        let mut expect = answered(&answer);
        let mut fixture = Fixture {
            name: Some(format!("{plugin} answering {hook}")),
            now: Some(now.to_string()),
            objects: self.objects,
            request: None,
            validate: None,
            default: None,
            convert: None,
            expect: Expected::default(),
        };
        match (asked, hook) {
            (Stated::Admission(request), _) if of_secret(&request) => {
                return Err("a review of a Secret is not recorded".into());
            }
            (Stated::Admission(request), "validate") => {
                expect.patch = None;
                fixture.validate = Some(request);
            }
            (Stated::Admission(request), _) => fixture.default = Some(request),
            (Stated::Convert(conversion), _) => fixture.convert = Some(conversion),
        }
        fixture.expect = expect;
        Ok(fixture)
    }
}

/// Whether an admission request is of the core Secret.
fn of_secret(request: &Value) -> bool {
    let kind = &request["kind"];
    kind["group"].as_str().unwrap_or_default().is_empty() && kind["kind"] == "Secret"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(kind: &str, group: &str) -> Vec<u8> {
        let object = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "s"}, "data": {"k": "c2VjcmV0"}});
        let request = json!({"uid": "u", "kind": {"group": group, "version": "v1", "kind": kind},
            "operation": "CREATE", "object": object});
        json!({"kind": "AdmissionReview", "request": request})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn a_review_of_a_secret_is_not_recorded_and_others_are() {
        let answer = br#"{"kind":"AdmissionReview","response":{"uid":"u","allowed":true}}"#;
        let secret =
            Recording::default().review_fixture("p", "validate", &review("Secret", ""), answer);
        assert_eq!(secret.unwrap_err(), "a review of a Secret is not recorded");
        let map =
            Recording::default().review_fixture("p", "validate", &review("ConfigMap", ""), answer);
        let fixture = map.unwrap();
        assert_eq!(fixture.expect.allowed, Some(true));
        assert_eq!(fixture.expect.patch, None);
        let request = fixture.validate.as_ref().expect("a validate fixture");
        assert!(
            request.get("uid").is_none(),
            "the uid is the apiserver's: {request}"
        );
        let text = fixture.to_yaml();
        assert_eq!(
            crate::fixture::Fixture::parse(&text)
                .unwrap()
                .expect
                .allowed,
            Some(true)
        );
    }
}
