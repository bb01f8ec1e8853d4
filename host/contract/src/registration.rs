//! What a plugin declares about itself through `describe`, validated, and the permission check
//! every import call goes through.

use std::time::Duration;

use crate::boundary::{self, MAX_SHORT_TEXT, Malformed};
use crate::object::{self, GroupVersionKind};

/// The longest plugin version string.
const MAX_VERSION: usize = 64;

/// A plugin's registration: its kinds, mappings, permissions and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    /// The plugin's name (lowercase letters, digits, dashes).
    pub name: String,
    /// The plugin's own version.
    pub version: String,
    /// The reconciled kind (For).
    pub primary: GroupVersionKind,
    /// Predicates on events of the primary kind.
    pub predicates: Vec<Predicate>,
    /// Owned kinds (Owns): events map to the controller owner.
    pub owns: Vec<GroupVersionKind>,
    /// Watched kinds (Watches) with their mapping.
    pub watches: Vec<Watch>,
    /// Declared permissions.
    pub permissions: Vec<Permission>,
    /// Declared field indexes.
    pub indexes: Vec<FieldIndex>,
    /// Maximum concurrent reconciles (at least 1).
    pub max_concurrent_reconciles: u32,
    /// The plugin's reconcile timeout, if it set one.
    pub reconcile_timeout: Option<Duration>,
    /// Kinds whose changes the guest's own `handle` maps to requests instead of the host's
    /// mapping (its `handlers` export); empty when it exports none.
    pub handled: Vec<GroupVersionKind>,
}

/// How a watched object's events become requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapping {
    /// To its controller owner of the primary kind.
    ControllerOwner,
    /// To the primary object named by this label, in the same namespace.
    Label(String),
    /// Through the guest's `map` export.
    Guest,
}

/// Event filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Predicate {
    /// Updates pass only when metadata.generation changed.
    GenerationChanged,
    /// Updates pass only when labels changed.
    LabelsChanged,
    /// Updates pass only when annotations changed.
    AnnotationsChanged,
}

/// A watched kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch {
    /// The kind.
    pub kind: GroupVersionKind,
    /// How its events map to requests.
    pub mapping: Mapping,
    /// Filters on its events.
    pub predicates: Vec<Predicate>,
}

/// What a permission allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// Read one object.
    Get,
    /// List objects.
    List,
    /// Watch objects.
    Watch,
    /// Create objects.
    Create,
    /// Replace objects.
    Update,
    /// Patch objects.
    Patch,
    /// Delete objects.
    Delete,
    /// Write the status subresource.
    Status,
}

impl Verb {
    /// Whether the verb changes objects.
    pub fn writes(self) -> bool {
        !matches!(self, Verb::Get | Verb::List | Verb::Watch)
    }

    /// The RBAC verbs that grant it (any one will do for a check; all for a role) and the
    /// subresource they apply to: the status verb is `update` and `patch` of `status`.
    pub fn rbac(self) -> (&'static [&'static str], Option<&'static str>) {
        match self {
            Verb::Get => (&["get"], None),
            Verb::List => (&["list"], None),
            Verb::Watch => (&["watch"], None),
            Verb::Create => (&["create"], None),
            Verb::Update => (&["update"], None),
            Verb::Patch => (&["patch"], None),
            Verb::Delete => (&["delete"], None),
            Verb::Status => (&["update", "patch"], Some("status")),
        }
    }
}

/// A declared permission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// The kind; an empty version grants it at every version the apiserver serves.
    pub kind: GroupVersionKind,
    /// The allowed verbs.
    pub verbs: Vec<Verb>,
    /// The namespaces it is limited to; all when empty.
    pub namespaces: Vec<String>,
}

/// A declared field index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldIndex {
    /// The name `list-by-index` uses.
    pub name: String,
    /// The indexed kind.
    pub kind: GroupVersionKind,
    /// A dotted path to a string field.
    pub field: String,
}

/// What is wrong with a registration a plugin's `describe` returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidRegistration {
    /// Its name is not a DNS label (quoted cut).
    #[error("name {0:?} must be 1-63 lowercase letters, digits or dashes")]
    Name(String),
    /// Its version is empty or too long.
    #[error("version must be 1-{MAX_VERSION} characters")]
    Version,
    /// A kind or a permission's namespace is malformed.
    #[error(transparent)]
    Malformed(#[from] Malformed),
    /// A permission names the empty namespace.
    #[error("a permission names an empty namespace")]
    EmptyNamespace,
    /// An index's name or field, or a watch's label, is too long.
    #[error("an index or label name is over {MAX_SHORT_TEXT} bytes")]
    LongText,
    /// It asks for no reconcile at a time.
    #[error("max-concurrent-reconciles must be at least 1")]
    NoConcurrency,
    /// A watch maps objects by a label with no name.
    #[error("watch of {0} maps by an empty label name")]
    EmptyLabel(String),
    /// Its handlers name a kind (`Kind.apiVersion`) it neither reconciles, owns nor watches.
    #[error("handles {0}, which it neither reconciles, owns nor watches")]
    Unhandleable(String),
    /// Its handlers name a kind (`Kind.apiVersion`) twice.
    #[error("handles {0} twice")]
    HandledTwice(String),
    /// Its handlers name more kinds than it reconciles, owns and watches.
    #[error("handles {0} kinds, more than it reconciles, owns and watches")]
    TooManyHandled(usize),
}

impl Registration {
    /// Checks what `describe` returned; the error says which field is wrong.
    pub fn validate(&self) -> Result<(), InvalidRegistration> {
        if !boundary::dns_label(&self.name) {
            let name = boundary::cut(&self.name).to_owned();
            return Err(InvalidRegistration::Name(name));
        }
        if self.version.is_empty() || self.version.len() > MAX_VERSION {
            return Err(InvalidRegistration::Version);
        }
        let kinds = std::iter::once(&self.primary)
            .chain(&self.owns)
            .chain(self.watches.iter().map(|w| &w.kind))
            .chain(self.indexes.iter().map(|i| &i.kind));
        for kind in kinds {
            boundary::kind(kind)?;
        }
        for permission in &self.permissions {
            boundary::permitted_kind(&permission.kind)?;
        }
        let namespaces = self.permissions.iter().flat_map(|p| &p.namespaces);
        for namespace in namespaces {
            if namespace.is_empty() {
                return Err(InvalidRegistration::EmptyNamespace);
            }
            boundary::namespace(namespace)?;
        }
        let texts = self.indexes.iter().flat_map(|i| [&i.name, &i.field]).chain(
            self.watches.iter().filter_map(|w| match &w.mapping {
                Mapping::Label(label) => Some(label),
                _ => None,
            }),
        );
        for text in texts {
            if text.len() > MAX_SHORT_TEXT {
                return Err(InvalidRegistration::LongText);
            }
        }
        if self.max_concurrent_reconciles == 0 {
            return Err(InvalidRegistration::NoConcurrency);
        }
        if let Some(watch) = self
            .watches
            .iter()
            .find(|w| w.mapping == Mapping::Label(String::new()))
        {
            return Err(InvalidRegistration::EmptyLabel(watch.kind.kind.clone()));
        }
        self.validate_handled()
    }

    /// Checks that each handled kind is one of the cached kinds, named once.
    fn validate_handled(&self) -> Result<(), InvalidRegistration> {
        if self.handled.len() > self.cached_kinds().count() {
            return Err(InvalidRegistration::TooManyHandled(self.handled.len()));
        }
        for (at, kind) in self.handled.iter().enumerate() {
            if !self.cached_kinds().any(|cached| cached == kind) {
                return Err(InvalidRegistration::Unhandleable(shown(kind)));
            }
            if self.handled[..at].contains(kind) {
                return Err(InvalidRegistration::HandledTwice(shown(kind)));
            }
        }
        Ok(())
    }

    /// Whether the guest's own `handle` maps the changes of `kind`.
    pub fn handles(&self, kind: &GroupVersionKind) -> bool {
        self.handled.contains(kind)
    }

    /// Whether the plugin may do `verb` on `kind` in `namespace` (empty: all namespaces or a
    /// cluster-scoped object). Reads of the primary, owned and watched kinds are implied.
    pub fn allows(&self, verb: Verb, kind: &GroupVersionKind, namespace: &str) -> bool {
        let read = !verb.writes();
        if read && self.cached_kinds().any(|cached| cached == kind) {
            return true;
        }
        self.permissions.iter().any(|p| {
            object::includes(&p.kind, kind)
                && p.verbs.contains(&verb)
                && (p.namespaces.is_empty() || p.namespaces.iter().any(|n| n == namespace))
        })
    }

    /// Whether the plugin declares some write (create, update, patch, delete or status) in
    /// `namespace`.
    pub fn writes_in(&self, namespace: &str) -> bool {
        self.permissions.iter().any(|p| {
            p.verbs.iter().any(|v| v.writes())
                && (p.namespaces.is_empty() || p.namespaces.iter().any(|n| n == namespace))
        })
    }

    /// Every (kind, verb, namespaces) the plugin declares, with the implied reads of its cached
    /// kinds first; empty namespaces mean all of them.
    pub fn grants(&self) -> impl Iterator<Item = (&GroupVersionKind, Verb, &[String])> {
        let all: &[String] = &[];
        let reads = self.cached_kinds().flat_map(move |kind| {
            [Verb::Get, Verb::List, Verb::Watch].map(|verb| (kind, verb, all))
        });
        let declared = self.permissions.iter().flat_map(|p| {
            p.verbs
                .iter()
                .map(move |verb| (&p.kind, *verb, p.namespaces.as_slice()))
        });
        reads.chain(declared)
    }

    /// The kinds whose objects each belong to one primary object — the primary and the owned
    /// kinds — of which a sharded replica informs only its share.
    pub fn sharded_kinds(&self) -> impl Iterator<Item = &GroupVersionKind> {
        std::iter::once(&self.primary).chain(&self.owns)
    }

    /// The kinds whose informers this plugin needs: primary, owned and watched.
    pub fn cached_kinds(&self) -> impl Iterator<Item = &GroupVersionKind> {
        self.sharded_kinds()
            .chain(self.watches.iter().map(|w| &w.kind))
    }

    /// The kinds the host lists and watches for this plugin, each once: the cached kinds, every
    /// kind it may read and every kind it indexes. A kind it may read at every version (an empty
    /// one) is left to the host to inform at the version the apiserver prefers, unless the plugin
    /// already has it informed at a version of its choice.
    pub fn informed_kinds(&self) -> Vec<&GroupVersionKind> {
        let readable = self
            .permissions
            .iter()
            .filter(|p| p.verbs.iter().any(|v| !v.writes()))
            .map(|p| &p.kind);
        let indexed = self.indexes.iter().map(|i| &i.kind);
        let mut kinds: Vec<&GroupVersionKind> = Vec::new();
        for kind in self.cached_kinds().chain(readable).chain(indexed) {
            let informed = |k: &&GroupVersionKind| {
                *k == kind || (kind.version.is_empty() && object::includes(kind, k))
            };
            if !kinds.iter().any(informed) {
                kinds.push(kind);
            }
        }
        kinds
    }
}

/// A kind as an error names it: `Kind.apiVersion`, cut to a bounded length.
fn shown(kind: &GroupVersionKind) -> String {
    boundary::cut(&object::shown(kind)).to_owned()
}

impl Registration {
    /// The least a plugin can declare: `name` 0.1.0 reconciling ConfigMaps, with no other kinds
    /// and no permissions (for examples and tests).
    pub fn minimal(name: &str) -> Registration {
        Registration {
            name: name.to_owned(),
            version: "0.1.0".to_owned(),
            primary: GroupVersionKind::gvk("", "v1", "ConfigMap"),
            predicates: vec![],
            owns: vec![],
            watches: vec![],
            permissions: vec![],
            indexes: vec![],
            max_concurrent_reconciles: 1,
            reconcile_timeout: None,
            handled: vec![],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmap() -> GroupVersionKind {
        GroupVersionKind::gvk("", "v1", "ConfigMap")
    }

    #[test]
    fn reads_of_cached_kinds_are_implied_and_writes_are_not() {
        let registration = Registration::minimal("reader");
        assert!(registration.allows(Verb::Get, &configmap(), "any"));
        assert!(registration.allows(Verb::List, &configmap(), ""));
        assert!(!registration.allows(Verb::Create, &configmap(), "any"));
        let secret = GroupVersionKind::gvk("", "v1", "Secret");
        assert!(!registration.allows(Verb::Get, &secret, "any"));
    }

    #[test]
    fn namespaced_permissions_hold_only_in_their_namespaces() {
        let mut registration = Registration::minimal("writer");
        let secret = GroupVersionKind::gvk("", "v1", "Secret");
        registration.permissions.push(Permission {
            kind: secret.clone(),
            verbs: vec![Verb::Create],
            namespaces: vec!["team-a".to_owned()],
        });
        assert!(registration.allows(Verb::Create, &secret, "team-a"));
        assert!(!registration.allows(Verb::Create, &secret, "team-b"));
        assert!(
            !registration.allows(Verb::Create, &secret, ""),
            "an all-namespace call"
        );
        assert!(!registration.allows(Verb::Delete, &secret, "team-a"));
    }

    #[test]
    fn a_permission_without_a_version_holds_at_every_version_and_is_informed_once() {
        let lease = |version| GroupVersionKind::gvk("coordination.k8s.io", version, "Lease");
        let mut registration = Registration::minimal("elector");
        let every = |kind: GroupVersionKind| Permission {
            kind,
            verbs: vec![Verb::Get, Verb::List],
            namespaces: vec![],
        };
        registration.permissions.push(every(lease("")));
        registration
            .permissions
            .push(every(GroupVersionKind::gvk("", "", "ConfigMap")));
        assert_eq!(registration.validate(), Ok(()));
        assert!(registration.allows(Verb::Get, &lease("v1"), "any"));
        assert!(registration.allows(Verb::List, &lease("v1beta1"), ""));
        assert!(!registration.allows(Verb::Update, &lease("v1"), "any"));
        let informed = registration.informed_kinds();
        assert_eq!(
            informed,
            [&configmap(), &lease("")],
            "ConfigMaps are informed at v1 already"
        );
        let mut versionless = Registration::minimal("elector");
        versionless.owns.push(lease(""));
        let refused = versionless.validate();
        assert_eq!(refused, Err(Malformed::Version(String::new()).into()));
    }

    #[test]
    fn validation_names_the_bad_field() {
        assert!(Registration::minimal("webapp").validate().is_ok());
        let bad_name = Registration::minimal("Web App").validate().unwrap_err();
        assert_eq!(bad_name, InvalidRegistration::Name("Web App".into()));
        let long = Registration::minimal(&"N".repeat(1 << 20))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            long.len() < 200,
            "a refused name is quoted cut: {} bytes",
            long.len()
        );
        let mut zero = Registration::minimal("webapp");
        zero.max_concurrent_reconciles = 0;
        assert_eq!(zero.validate(), Err(InvalidRegistration::NoConcurrency));
        let mut kindless = Registration::minimal("webapp");
        kindless.owns.push(GroupVersionKind::gvk("apps", "v1", ""));
        let malformed = Malformed::Kind(String::new());
        assert_eq!(kindless.validate(), Err(malformed.into()));
    }

    #[test]
    fn handled_kinds_are_registered_kinds_named_once() {
        let mut handling = Registration::minimal("webapp");
        handling.handled.push(configmap());
        assert!(handling.validate().is_ok() && handling.handles(&configmap()));
        let mut stranger = Registration::minimal("webapp");
        stranger
            .handled
            .push(GroupVersionKind::gvk("", "v1", "Secret"));
        assert_eq!(
            stranger.validate(),
            Err(InvalidRegistration::Unhandleable("Secret.v1".into()))
        );
        handling
            .owns
            .push(GroupVersionKind::gvk("", "v1", "Secret"));
        handling.handled.push(configmap());
        assert_eq!(
            handling.validate(),
            Err(InvalidRegistration::HandledTwice("ConfigMap.v1".into()))
        );
        handling.handled.push(configmap());
        assert_eq!(
            handling.validate(),
            Err(InvalidRegistration::TooManyHandled(3))
        );
    }
}
