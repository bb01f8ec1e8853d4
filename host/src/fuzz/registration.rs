//! Fuzzes a guest's registration as it enters the host (`host/contract/src/registration.rs`): what
//! `describe` returns, converted as the bindings convert it, then validated. An accepted
//! registration has a DNS-label name, kinds the request path can carry, namespaces that are DNS
//! labels, bounded texts, a concurrency of at least one and a timeout a deadline can hold; and its
//! permission check agrees with what it declares.

use std::time::Duration;

use proptest::prelude::*;

use super::boundary::{Verb as Request, kind, request_has_the_segments};
use super::{fuzz, hostile_text, parse, short_error};
use wasmop_contract::boundary::{self, MAX_SHORT_TEXT};
use wasmop_contract::object::{GroupVersionKind, ObjectRef};
use wasmop_contract::{FieldIndex, Mapping, Permission, Predicate, Registration, Verb, Watch};

#[test]
fn fuzz_registrations() {
    fuzz(
        "registrations",
        (registration(), prop::collection::vec(query(), 0..8)),
        |(registration, queries)| {
            let len = size(&registration);
            let checked = parse(len, || registration.validate())?;
            if let Err(error) = checked {
                return short_error(&error.to_string());
            }
            prop_assert!(boundary::dns_label(&registration.name));
            prop_assert!((1..=64).contains(&registration.version.len()));
            let kinds = registration
                .cached_kinds()
                .chain(registration.permissions.iter().map(|p| &p.kind))
                .chain(registration.indexes.iter().map(|i| &i.kind));
            for kind in kinds {
                let list = ObjectRef::new(&at_a_version(kind), "", "x");
                request_has_the_segments(&list, Request::Get)?;
            }
            for namespace in registration.permissions.iter().flat_map(|p| &p.namespaces) {
                prop_assert!(boundary::dns_label(namespace), "namespace {namespace:?}");
            }
            for index in &registration.indexes {
                prop_assert!(index.name.len() <= MAX_SHORT_TEXT);
                prop_assert!(index.field.len() <= MAX_SHORT_TEXT);
            }
            for watch in &registration.watches {
                if let Mapping::Label(label) = &watch.mapping {
                    prop_assert!(!label.is_empty() && label.len() <= MAX_SHORT_TEXT);
                }
            }
            prop_assert!(registration.max_concurrent_reconciles >= 1);
            for (at, kind) in registration.handled.iter().enumerate() {
                prop_assert!(registration.cached_kinds().any(|cached| cached == kind));
                prop_assert!(!registration.handled[..at].contains(kind), "{kind:?} twice");
            }
            if let Some(timeout) = registration.reconcile_timeout {
                prop_assert!(tokio::time::Instant::now().checked_add(timeout).is_some());
            }
            for (kind, verb, namespaces) in registration.grants() {
                let everywhere = ["".to_owned(), "any".to_owned()];
                let places = if namespaces.is_empty() {
                    &everywhere[..]
                } else {
                    namespaces
                };
                for namespace in places {
                    prop_assert!(
                        registration.allows(verb, kind, namespace),
                        "{verb:?} {kind:?}"
                    );
                }
            }
            for (verb, which, namespace) in queries {
                let kinds: Vec<&GroupVersionKind> = registration
                    .cached_kinds()
                    .chain(registration.permissions.iter().map(|p| &p.kind))
                    .collect();
                let picked = kinds[which.index(kinds.len())];
                let kind = &at_a_version(picked);
                let declared = registration.permissions.iter().any(|p| {
                    // An empty version declares every version of the group's kind.
                    (&p.kind.group, &p.kind.kind) == (&kind.group, &kind.kind)
                        && [kind.version.as_str(), ""].contains(&p.kind.version.as_str())
                        && p.verbs.contains(&verb)
                        && (p.namespaces.is_empty() || p.namespaces.contains(&namespace))
                });
                let read = matches!(verb, Verb::Get | Verb::List | Verb::Watch);
                let cached = registration.cached_kinds().any(|k| k == kind);
                prop_assert_eq!(
                    registration.allows(verb, kind, &namespace),
                    declared || read && cached,
                    "{:?} of {:?} in {:?}",
                    verb,
                    kind,
                    namespace
                );
            }
            Ok(())
        },
    );
}

/// `kind`, or, when it names every version (a permission may), the same kind at `v1`.
fn at_a_version(kind: &GroupVersionKind) -> GroupVersionKind {
    match kind.version.is_empty() {
        true => GroupVersionKind::gvk(&kind.group, "v1", &kind.kind),
        false => kind.clone(),
    }
}

/// The bytes a registration's strings hold.
fn size(registration: &Registration) -> usize {
    let kind = |k: &GroupVersionKind| k.group.len() + k.version.len() + k.kind.len();
    let r = registration;
    r.name.len()
        + r.version.len()
        + r.cached_kinds().map(kind).sum::<usize>()
        + r.permissions
            .iter()
            .map(|p| kind(&p.kind) + p.namespaces.iter().map(String::len).sum::<usize>())
            .sum::<usize>()
        + r.indexes
            .iter()
            .map(|i| i.name.len() + i.field.len() + kind(&i.kind))
            .sum::<usize>()
        + r.watches
            .iter()
            .map(|w| match &w.mapping {
                Mapping::Label(label) => label.len(),
                _ => 0,
            })
            .sum::<usize>()
}

/// Registrations, mostly near-valid, with hostile parts.
fn registration() -> impl Strategy<Value = Registration> {
    let name = prop_oneof![
        4 => "[a-z0-9-]{1,20}",
        1 => hostile_text(),
        1 => (1..200_000usize).prop_map(|n| "N".repeat(n)),
    ];
    let version = prop_oneof!["[0-9.]{1,8}", hostile_text()];
    let timeout = prop::option::of(any::<u64>().prop_map(Duration::from_millis));
    let concurrency = prop_oneof![Just(0u32), Just(1u32), any::<u32>()];
    let parts = (
        (name, version, kind(), predicates()),
        prop::collection::vec(kind(), 0..3),
        prop::collection::vec(watch(), 0..3),
        prop::collection::vec(permission(), 0..4),
        prop::collection::vec(index(), 0..3),
        (concurrency, timeout, prop::collection::vec(kind(), 0..3)),
    );
    parts.prop_map(|(head, owns, watches, permissions, indexes, tail)| {
        let (name, version, primary, predicates) = head;
        let (max_concurrent_reconciles, reconcile_timeout, strangers) = tail;
        // Handlers of its own kinds (the primary, twice at times) and of kinds it may not have.
        let handled = strangers
            .into_iter()
            .enumerate()
            .map(|(at, kind)| if at % 2 == 0 { primary.clone() } else { kind })
            .collect();
        Registration {
            name,
            version,
            primary,
            predicates,
            owns,
            watches,
            permissions,
            indexes,
            max_concurrent_reconciles,
            reconcile_timeout,
            handled,
        }
    })
}

fn predicates() -> impl Strategy<Value = Vec<Predicate>> {
    let predicate = prop::sample::select(vec![
        Predicate::GenerationChanged,
        Predicate::LabelsChanged,
        Predicate::AnnotationsChanged,
    ]);
    prop::collection::vec(predicate, 0..3)
}

fn watch() -> impl Strategy<Value = Watch> {
    let mapping = prop_oneof![
        Just(Mapping::ControllerOwner),
        Just(Mapping::Guest),
        prop_oneof![hostile_text(), (1..2000usize).prop_map(|n| "l".repeat(n))]
            .prop_map(Mapping::Label),
    ];
    (kind(), mapping, predicates()).prop_map(|(kind, mapping, predicates)| Watch {
        kind,
        mapping,
        predicates,
    })
}

fn verb() -> impl Strategy<Value = Verb> {
    prop::sample::select(vec![
        Verb::Get,
        Verb::List,
        Verb::Watch,
        Verb::Create,
        Verb::Update,
        Verb::Patch,
        Verb::Delete,
        Verb::Status,
    ])
}

fn namespace() -> impl Strategy<Value = String> {
    prop_oneof![4 => "[a-z]{1,3}", 1 => hostile_text()]
}

fn permission() -> impl Strategy<Value = Permission> {
    let verbs = prop::collection::vec(verb(), 0..4);
    let namespaces = prop::collection::vec(namespace(), 0..3);
    // A third of them name every version of their kind, as a marker-derived permission does.
    let every_version = (kind(), prop::bool::weighted(0.3)).prop_map(|(mut kind, every)| {
        if every {
            kind.version.clear();
        }
        kind
    });
    (every_version, verbs, namespaces).prop_map(|(kind, verbs, namespaces)| Permission {
        kind,
        verbs,
        namespaces,
    })
}

fn index() -> impl Strategy<Value = FieldIndex> {
    let text = || prop_oneof![4 => "[a-z.]{1,20}", 1 => hostile_text()];
    (text(), kind(), text()).prop_map(|(name, kind, field)| FieldIndex { name, kind, field })
}

/// A permission check: a verb, which of the registration's kinds, and a namespace.
fn query() -> impl Strategy<Value = (Verb, prop::sample::Index, String)> {
    (verb(), any::<prop::sample::Index>(), namespace())
}
