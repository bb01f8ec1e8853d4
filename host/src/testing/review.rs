//! Running a webhook fixture: the review the apiserver would post is made from what the fixture
//! states ([`crate::fixture::admission_review`]), answered by the plugin exactly as the host's
//! webhook server answers it ([`crate::webhook::admission`], [`crate::webhook::conversion`]),
//! and the review sent back read as a fixture's expectations. A validating or defaulting call
//! the plugin declares no rule for is not made: the apiserver would not make it either.

use serde_json::Value;

use crate::fixture::{Call, Expected, admission_review, answered, conversion_review};
use crate::runtime::Plugin;
use crate::webhook::{self, Hook};
use wasmop_contract::object::GroupVersionKind;
use wasmop_contract::{Operation, Rule};

/// What `plugin` answered the webhook `call`, or why it could not be asked.
pub(super) async fn answer(plugin: &Plugin, call: Call<'_>) -> Result<Expected, String> {
    let Some(declared) = plugin.webhooks() else {
        return Err(format!("plugin {} serves no webhooks", plugin.name()));
    };
    let (hook, request) = match call {
        Call::Validate(request) => (Hook::Validate, request),
        Call::Default(request) => (Hook::Default, request),
        Call::Convert(conversion) => {
            let body = conversion_review(conversion).to_string();
            let review = webhook::conversion(plugin, body.as_bytes()).await;
            return read(review.map_err(|e| e.to_string())?.json);
        }
        Call::Reconcile(_) => unreachable!("a reconcile is no webhook call"),
    };
    let review = admission_review(request)?;
    let rules = match hook {
        Hook::Validate => &declared.validate,
        Hook::Default => &declared.default,
    };
    undeclared(plugin.name(), call, rules, &review["request"]).map_or(Ok(()), Err)?;
    let body = review.to_string();
    let answer = webhook::admission(plugin, hook, plugin.failure_policy(), body.as_bytes()).await;
    read(answer.map_err(|e| e.to_string())?.json)
}

fn read(json: Vec<u8>) -> Result<Expected, String> {
    let review: Value = serde_json::from_slice(&json).map_err(|e| e.to_string())?;
    Ok(answered(&review))
}

/// Why the apiserver would not call `plugin`'s webhook for `request`, if it would not: no rule
/// of `rules` names its kind and operation.
fn undeclared(plugin: &str, call: Call<'_>, rules: &[Rule], request: &Value) -> Option<String> {
    let text = |pointer: &str| {
        request
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let kind = GroupVersionKind::gvk(
        text("/kind/group"),
        text("/kind/version"),
        text("/kind/kind"),
    );
    let operation = text("/operation");
    let called = Operation::parse(operation).is_some_and(|operation| {
        rules
            .iter()
            .any(|rule| rule.kind == kind && rule.operations.contains(&operation))
    });
    (!called).then(|| {
        format!(
            "plugin {plugin} declares no {} webhook for {} {} {operation}: the apiserver would not call it",
            call.name(),
            kind.api_version(),
            kind.kind
        )
    })
}
