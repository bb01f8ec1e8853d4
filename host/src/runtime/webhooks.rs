//! A plugin's admission and conversion webhooks, as the runtime sees them: what the plugin declared
//! it serves (`describe-webhooks`, checked when it loads), and the calls that validate, default
//! and convert one object in its sandbox, with the same instances, memory cap and budget as its
//! reconciles and a deadline of their own, short enough to answer inside the apiserver's timeout.
//!
//! Whatever the guest answers is checked before the host uses it: an object must be a JSON object
//! of at most the plugin's object bound, nested at most [`wasmop_contract::depth::MAX_DEPTH`] levels; messages and warnings are cut to a bounded length and
//! count. A guest that traps, loops or answers garbage yields a [`DispatchError`]; what the
//! apiserver is told then is the webhook server's business (its failure policy).

use std::time::Duration;

use crate::runtime::bindings::{types, webhooks as wit};
use crate::runtime::error::{DispatchError, TrapKind};
use crate::runtime::plugin::Plugin;
use wasmop_contract::Refusal;
use wasmop_contract::boundary::{self, MAX_SHORT_TEXT};
use wasmop_contract::capability::{self, Power};
use wasmop_contract::object::{GroupVersionKind, ObjectKey};
use wasmop_contract::webhook::{
    AdmissionRequest, Denial, FailurePolicy, MAX_MESSAGE, MAX_WARNINGS, Operation, Rule, Verdict,
    WebhookRegistration,
};

impl From<wit::Registration> for WebhookRegistration {
    fn from(r: wit::Registration) -> Self {
        let rules = |rules: Vec<wit::Rule>| {
            rules
                .into_iter()
                .map(|rule| Rule {
                    kind: rule.kind.into(),
                    operations: rule.operations.into_iter().map(Into::into).collect(),
                })
                .collect()
        };
        WebhookRegistration {
            validate: rules(r.validate),
            default: rules(r.default),
            convert: r.convert.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<wit::Operation> for Operation {
    fn from(op: wit::Operation) -> Self {
        match op {
            wit::Operation::Create => Operation::Create,
            wit::Operation::Update => Operation::Update,
            wit::Operation::Delete => Operation::Delete,
            wit::Operation::Connect => Operation::Connect,
        }
    }
}

impl From<Operation> for wit::Operation {
    fn from(op: Operation) -> Self {
        match op {
            Operation::Create => wit::Operation::Create,
            Operation::Update => wit::Operation::Update,
            Operation::Delete => wit::Operation::Delete,
            Operation::Connect => wit::Operation::Connect,
        }
    }
}

impl From<&AdmissionRequest> for wit::AdmissionRequest {
    fn from(r: &AdmissionRequest) -> Self {
        wit::AdmissionRequest {
            uid: r.uid.clone(),
            kind: types::Gvk::from(&r.kind),
            namespace: r.key.namespace.clone(),
            name: r.key.name.clone(),
            operation: r.operation.into(),
            object: r.object.clone(),
            old_object: r.old_object.clone(),
            user_info: wit::UserInfo {
                username: r.user.username.clone(),
                uid: r.user.uid.clone(),
                groups: r.user.groups.clone(),
            },
            dry_run: r.dry_run,
        }
    }
}

/// Cuts a guest's message to [`MAX_MESSAGE`] bytes.
fn message(text: String) -> String {
    boundary::truncated(text, MAX_MESSAGE)
}

/// Keeps at most [`MAX_WARNINGS`] warnings, each cut to [`MAX_MESSAGE`] bytes.
fn warnings(warnings: Vec<String>) -> Vec<String> {
    warnings
        .into_iter()
        .take(MAX_WARNINGS)
        .map(message)
        .collect()
}

impl From<wit::Denial> for Denial {
    fn from(d: wit::Denial) -> Self {
        Denial {
            message: message(d.message),
            warnings: warnings(d.warnings),
        }
    }
}

/// Why a plugin may not use a power now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unchecked {
    /// The capability check refused it.
    #[error(transparent)]
    Denied(#[from] capability::Denied),
    /// The plugin has not described itself, so it holds no grant yet.
    #[error("has not described itself")]
    Undescribed,
}

impl Plugin {
    /// The webhooks the plugin declared; `None` when it serves none.
    pub fn webhooks(&self) -> Option<&WebhookRegistration> {
        self.webhooks.as_ref()
    }

    /// What the apiserver is told when the plugin fails to answer.
    pub fn failure_policy(&self) -> FailurePolicy {
        self.failure_policy
    }

    /// How long one webhook call may take.
    pub fn webhook_timeout(&self) -> Duration {
        self.webhook_timeout
    }

    /// The namespace its namespaced `WasmReconciler` confines it to, if any: it is given no
    /// object or key outside it.
    pub fn home(&self) -> Option<&str> {
        self.context.grant.as_ref()?.home.as_deref()
    }

    /// Whether the plugin may use `power` now; the error says why not.
    pub fn check(&self, power: Power<'_>) -> Result<(), Unchecked> {
        match &self.context.grant {
            Some(grant) => Ok(capability::check(grant.subject(), power)?),
            None => Err(Unchecked::Undescribed),
        }
    }

    /// The protected namespaces the webhook `power` may not reach (all of them before the
    /// plugin has described itself).
    pub fn unreached(&self, power: Power<'_>) -> Vec<String> {
        match &self.context.grant {
            Some(grant) => capability::unreached(grant.subject(), power),
            None => vec![wasmop_contract::policy::PROTECTED_NAMESPACE.to_owned()],
        }
    }

    /// Asks the plugin to admit or refuse `request`.
    pub async fn validate(&self, request: &AdmissionRequest) -> Result<Verdict, DispatchError> {
        self.may(
            &request.key,
            Power::Validate(&request.kind, &request.key.namespace),
        )?;
        let arg = wit::AdmissionRequest::from(request);
        let verdict = self
            .call_webhook(&request.key, move |guest, store| {
                Box::pin(async move { guest.call_validate(store, &arg).await })
            })
            .await?;
        Ok(match verdict {
            wit::Verdict::Allowed(list) => Verdict::Allowed(warnings(list)),
            wit::Verdict::Denied(denial) => Verdict::Denied(denial.into()),
        })
    }

    /// Asks the plugin for `request`'s object with its defaults set: the object (checked to be a
    /// JSON object within the object bound), or a refusal.
    pub async fn default(
        &self,
        request: &AdmissionRequest,
    ) -> Result<Result<String, Denial>, DispatchError> {
        self.may(
            &request.key,
            Power::Default(&request.kind, &request.key.namespace),
        )?;
        let arg = wit::AdmissionRequest::from(request);
        let answer = self
            .call_webhook(&request.key, move |guest, store| {
                Box::pin(async move { guest.call_default(store, &arg).await })
            })
            .await?;
        match answer {
            Ok(object) => Ok(Ok(self.checked_object(&request.key, object)?.0)),
            Err(denial) => Ok(Err(denial.into())),
        }
    }

    /// Asks the plugin to convert `object` to `api_version`: the converted object (checked to
    /// be a JSON object of that apiVersion within the object bound), or why it cannot.
    pub async fn convert(
        &self,
        key: &ObjectKey,
        object: &str,
        api_version: &str,
    ) -> Result<Result<String, String>, DispatchError> {
        let declared = self.converted(object, api_version);
        let declared = declared.ok_or_else(|| DispatchError::Refused {
            plugin: self.name().to_owned(),
            key: key.clone(),
            reason: format!(
                "declared no conversion of that object's kind to {}",
                boundary::cut(api_version)
            ),
        })?;
        self.may(key, Power::Convert(&declared))?;
        let (object, api_version) = (object.to_owned(), api_version.to_owned());
        let wanted = api_version.clone();
        let answer = self
            .call_webhook(key, move |guest, store| {
                Box::pin(async move { guest.call_convert(store, &object, &api_version).await })
            })
            .await?;
        let (converted, fields) = match answer {
            Ok(converted) => self.checked_object(key, converted)?,
            Err(reason) => return Ok(Err(message(reason))),
        };
        let found = fields.get("apiVersion").and_then(serde_json::Value::as_str);
        if found != Some(wanted.as_str()) {
            return Err(self.garbage(
                key,
                format!(
                    "convert to {wanted} returned apiVersion {}",
                    found.map_or("(none)", boundary::cut)
                ),
            ));
        }
        Ok(Ok(converted))
    }

    /// The declared conversion (group and kind) that `object` and `api_version` fall under: both
    /// of one group, the object of the declared kind.
    fn converted(&self, object: &str, api_version: &str) -> Option<GroupVersionKind> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Typed {
            api_version: String,
            kind: String,
        }
        let typed: Typed = serde_json::from_str(object).ok()?;
        let group = |v: &str| v.rsplit_once('/').map_or("", |(group, _)| group).to_owned();
        let declared = self.webhooks.as_ref()?.convert.iter().find(|k| {
            k.kind == typed.kind
                && k.group == group(&typed.api_version)
                && k.group == group(api_version)
        });
        declared.cloned()
    }

    /// Passes the capability check for `power` ([`capability::check`]), or refuses the call; a
    /// plugin that declared no webhooks cannot be called at all.
    fn may(&self, key: &ObjectKey, power: Power<'_>) -> Result<(), DispatchError> {
        if self.webhooks.is_none() {
            return Err(self.garbage(key, "the plugin serves no webhooks".to_owned()));
        }
        self.check(power).map_err(|unchecked| {
            self.context.budget.refuse(Refusal::Undeclared);
            DispatchError::Refused {
                plugin: self.name().to_owned(),
                key: key.clone(),
                reason: unchecked.to_string(),
            }
        })
    }

    /// Runs one webhook call under the webhook deadline, reading the cache only (its writes and
    /// events are refused); a plugin that declared no webhooks cannot be called.
    async fn call_webhook<R>(
        &self,
        key: &ObjectKey,
        call: impl for<'a> FnOnce(
            &'a wit::Guest,
            &'a mut wasmtime::Store<crate::runtime::host::StoreState>,
        ) -> crate::runtime::instances::Call<'a, R>,
    ) -> Result<R, DispatchError> {
        if self.webhooks.is_none() {
            return Err(self.garbage(key, "the plugin serves no webhooks".to_owned()));
        }
        let name = self.name().to_owned();
        self.instances
            .dispatch(
                key,
                self.webhook_timeout,
                move |exports, store| match exports.webhooks.as_ref() {
                    Some(guest) => {
                        store.data_mut().read_only = true;
                        call(guest, store)
                    }
                    None => Box::pin(async move {
                        Err(wasmtime::format_err!(
                            "plugin {name} has no webhooks export"
                        ))
                    }),
                },
            )
            .await
    }

    /// `object` and its fields if it is a JSON object within the plugin's object bound and the
    /// depth bound.
    fn checked_object(
        &self,
        key: &ObjectKey,
        object: String,
    ) -> Result<(String, serde_json::Map<String, serde_json::Value>), DispatchError> {
        let max = self.context.limits.object_bytes;
        if object.len() > max {
            return Err(self.garbage(
                key,
                format!(
                    "returned an object of {} bytes, over the limit of {max}",
                    object.len()
                ),
            ));
        }
        if let Err(too_deep) =
            wasmop_contract::depth::check("the object returned", object.as_bytes(), 0)
        {
            return Err(self.garbage(key, too_deep.to_string()));
        }
        match serde_json::from_str::<serde_json::Value>(&object) {
            Ok(serde_json::Value::Object(fields)) => Ok((object, fields)),
            Ok(_) => Err(self.garbage(key, "returned JSON that is not an object".to_owned())),
            Err(e) => Err(self.garbage(key, format!("returned invalid JSON: {e}"))),
        }
    }

    /// A webhook answer the host cannot use, counted as an invalid call at the boundary.
    fn garbage(&self, key: &ObjectKey, message: String) -> DispatchError {
        self.context.budget.refuse(Refusal::Invalid);
        DispatchError::Trapped {
            plugin: self.name().to_owned(),
            key: key.clone(),
            kind: TrapKind::Trap,
            message: boundary::truncated(message, MAX_SHORT_TEXT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmop_contract::boundary::Malformed;
    use wasmop_contract::{InvalidWebhooks, MAX_RULES};

    fn rule(group: &str, kind: &str, operations: Vec<Operation>) -> Rule {
        Rule {
            kind: GroupVersionKind::gvk(group, "v1", kind),
            operations,
        }
    }

    #[test]
    fn operations_round_trip_through_their_admission_names() {
        for op in Operation::ALL {
            assert_eq!(Operation::parse(op.as_str()), Some(op));
        }
        assert_eq!(Operation::parse("create"), None);
    }

    #[test]
    fn registrations_name_their_first_bad_rule() {
        let good = WebhookRegistration {
            validate: vec![rule("apps.example.com", "WebApp", vec![Operation::Create])],
            default: vec![],
            convert: vec![GroupVersionKind::gvk("apps.example.com", "v1", "WebApp")],
        };
        assert_eq!(good.validate(), Ok(()));
        assert!(!good.is_empty());
        assert!(WebhookRegistration::default().is_empty());

        let no_operation = WebhookRegistration {
            default: vec![rule("apps.example.com", "WebApp", vec![])],
            ..good.clone()
        };
        let error = no_operation.validate().unwrap_err();
        let kind = "apps.example.com/v1 WebApp".to_owned();
        assert_eq!(error, InvalidWebhooks::NoOperation("default", kind));

        let bad_kind = WebhookRegistration {
            validate: vec![rule("apps.example.com", "Web/App", vec![Operation::Update])],
            ..good.clone()
        };
        let error = bad_kind.validate().unwrap_err();
        let malformed = Malformed::Kind("Web/App".into());
        assert_eq!(error, InvalidWebhooks::Kind("validate", malformed));

        let core = WebhookRegistration {
            convert: vec![GroupVersionKind::gvk("", "v1", "ConfigMap")],
            ..good.clone()
        };
        let error = core.validate().unwrap_err();
        assert_eq!(error, InvalidWebhooks::CoreConversion("ConfigMap".into()));

        let flood = WebhookRegistration {
            validate: vec![rule("a.b", "C", vec![Operation::Create]); MAX_RULES + 1],
            ..good
        };
        let error = flood.validate().unwrap_err();
        let many = InvalidWebhooks::TooMany(MAX_RULES + 1, "validate rules");
        assert_eq!(error, many);
    }

    #[test]
    fn guest_messages_and_warnings_are_bounded() {
        let denial = Denial::from(wit::Denial {
            message: "x".repeat(MAX_MESSAGE * 4),
            warnings: vec!["w".repeat(MAX_MESSAGE * 2); MAX_WARNINGS * 3],
        });
        assert!(denial.message.len() <= MAX_MESSAGE + 32);
        assert_eq!(denial.warnings.len(), MAX_WARNINGS);
        assert!(denial.warnings.iter().all(|w| w.len() <= MAX_MESSAGE + 32));
    }
}
