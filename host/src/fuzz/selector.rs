//! Fuzzes the label and field selectors a guest passes to cache lists (`selector.rs`). An accepted
//! selector holds only Kubernetes label syntax, its text form parses back to the same selector,
//! it has no more requirements than its text has parts, and matching it never panics.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{fuzz, hostile_text, mangled, parse, short_error};
use wasmop_contract::selector::{BadSelector, FieldSelector, LabelSelector};

#[test]
fn fuzz_label_selectors() {
    fuzz(
        "label-selectors",
        (selector_text(label_requirement()), labels()),
        |(text, labels)| {
            let parsed = round_trip(&text, LabelSelector::parse, LabelSelector::len)?;
            let Some((selector, canonical)) = parsed else {
                return Ok(());
            };
            let label_syntax = |c: char| c.is_ascii_alphanumeric() || "-_./=!(), ".contains(c);
            prop_assert!(
                canonical.chars().all(label_syntax),
                "{canonical:?} holds more than label syntax"
            );
            let label = |key: &str| labels.get(key).map(String::as_str);
            if selector.matches(label) {
                for (key, value) in selector.equalities() {
                    prop_assert_eq!(label(key), Some(value), "a match that breaks an equality");
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_field_selectors() {
    fuzz(
        "field-selectors",
        (selector_text(field_requirement()), labels()),
        |(text, fields)| {
            let parsed = round_trip(&text, FieldSelector::parse, FieldSelector::len)?;
            if let Some((selector, _)) = parsed {
                selector.matches(|path| fields.get(path).cloned());
            }
            Ok(())
        },
    );
}

/// Parses `text`; an accepted selector has at most as many requirements as `text` has parts and
/// a text form that parses back to it, which is returned beside it.
fn round_trip<S: PartialEq + std::fmt::Debug + std::fmt::Display>(
    text: &str,
    parse_text: fn(&str) -> Result<S, BadSelector>,
    len: fn(&S) -> usize,
) -> Result<Option<(S, String)>, TestCaseError> {
    let selector = match parse(text.len(), || parse_text(text))? {
        Ok(selector) => selector,
        Err(error) => return short_error(&error.to_string()).map(|()| None),
    };
    prop_assert!(len(&selector) <= text.matches(',').count() + 1);
    let canonical = selector.to_string();
    let again = parse_text(&canonical);
    prop_assert_eq!(again.as_ref(), Ok(&selector));
    Ok(Some((selector, canonical)))
}

/// Requirements joined by commas (now and then thousands of them), sometimes mangled.
fn selector_text(requirement: BoxedStrategy<String>) -> impl Strategy<Value = String> {
    let few = prop::collection::vec(requirement.clone(), 0..6);
    let many = (requirement, 0..3000usize).prop_map(|(one, n)| vec![one; n]);
    let separator = prop::sample::select(vec![",", ", ", " , ", ",,"]);
    let joined = (prop_oneof![8 => few, 1 => many], separator)
        .prop_map(|(requirements, separator)| requirements.join(separator));
    prop_oneof![8 => mangled(joined), 1 => hostile_text()]
}

/// One label requirement, valid or nearly so.
fn label_requirement() -> BoxedStrategy<String> {
    let values = prop::collection::vec(value(), 0..4).prop_map(|vs| vs.join(", "));
    prop_oneof![
        (key(), prop_oneof!["=", "==", "!="], value()).prop_map(|(k, op, v)| format!("{k}{op}{v}")),
        (
            key(),
            prop_oneof![" in ", " notin ", " in", "in "],
            values,
            any::<bool>()
        )
            .prop_map(|(k, op, vs, parenthesised)| match parenthesised {
                true => format!("{k}{op}({vs})"),
                false => format!("{k}{op}{vs}"),
            }),
        key(),
        key().prop_map(|k| format!("!{k}")),
    ]
    .boxed()
}

/// One field requirement, valid or nearly so.
fn field_requirement() -> BoxedStrategy<String> {
    let path = prop_oneof!["[a-zA-Z]{1,8}(\\.[a-zA-Z]{1,8}){0,3}", hostile_text()];
    (path, prop_oneof!["=", "==", "!=", "!", "==="], value())
        .prop_map(|(path, op, value)| format!("{path}{op}{value}"))
        .boxed()
}

/// Label keys: names, prefixed names, and hostile text.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9]([a-z0-9._-]{0,12}[a-z0-9])?",
        2 => "([a-z0-9-]{1,10}\\.){0,3}[a-z]{1,8}/[a-zA-Z0-9]([a-zA-Z0-9._-]{0,10}[a-zA-Z0-9])?",
        1 => "[a-z]{60,66}",
        2 => hostile_text(),
    ]
}

/// Label values: empty, names, and hostile text.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => Just(String::new()),
        4 => "[a-zA-Z0-9]([a-zA-Z0-9._-]{0,12}[a-zA-Z0-9])?",
        2 => hostile_text(),
    ]
}

/// Labels (or fields) an object may have.
fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(key(), value(), 0..6)
}
