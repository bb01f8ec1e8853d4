//! The one capability check: every power a plugin can make the host use on its behalf — a
//! reconcile's read or write, a webhook, a conversion, an event, an owner reference, the identity
//! it runs as, a module source read for its `WasmReconciler` — is named as a [`Power`] and
//! decided by [`check`] against what the plugin declared and every policy over it (the
//! operator's `--policy` and its `WasmReconciler`'s `spec.policy`).
//!
//! In identity mode a read also needs what the apiserver lets the plugin's own ServiceAccount
//! read now, as last reviewed ([`Rights`]): the shared cache lists and watches as the operator,
//! so without this a plugin whose RoleBinding was deleted would go on reading.
//!
//! Reach stays inside the grant: a webhook reaches the protected namespaces (`kube-system`, the
//! host's own) only where the operator's policy names them for it ([`unreached`] is what its
//! configuration leaves out), and the host informs a kind for a plugin only if the plugin may
//! read it ([`Power::Inform`]), so an index or watch never has the host list what it may not.
//!
//! Invariant: no feature hands a plugin a power except through [`check`], at load (every power
//! its registration implies, [`implied`]) and again at every use. A new capability is not done
//! until it is a [`Power`] here and the hostile suite attacks it.

use std::net::IpAddr;

use crate::object::{self, GroupVersionKind};
use crate::policy::Ceiling;
use crate::registration::{Registration, Verb};
use crate::rights::{REVIEW_TTL, Rights};
use crate::webhook::WebhookRegistration;

/// The verbs that rewrite an object's content: a defaulting webhook or a conversion needs one.
const REWRITES: [Verb; 2] = [Verb::Update, Verb::Patch];

/// The verbs that read objects: the host informs a kind for a plugin that may use one.
const READS: [Verb; 3] = [Verb::Get, Verb::List, Verb::Watch];

/// A power a plugin can make the host use on its behalf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Power<'a> {
    /// `verb` on `kind` in `namespace` (empty: across namespaces, or a cluster-scoped object).
    Call(Verb, &'a GroupVersionKind, &'a str),
    /// A validating webhook on `kind`: it reads every object of it written in `namespace`
    /// (empty: its registration, which reaches every namespace but the protected ones its
    /// policy does not name, or a cluster-scoped object).
    Validate(&'a GroupVersionKind, &'a str),
    /// A defaulting webhook on `kind`: it rewrites every object of it written in `namespace`
    /// (empty as for [`Power::Validate`]).
    Default(&'a GroupVersionKind, &'a str),
    /// The host listing and watching `kind` across the watched namespaces as the operator, for
    /// the plugin's informers and indexes: it must be able to read the kind somewhere.
    Inform(&'a GroupVersionKind),
    /// A conversion of `kind`'s custom resource: it reads and rewrites every object of it, and
    /// the host takes over the CRD's conversion for it.
    Convert(&'a GroupVersionKind),
    /// An event in `namespace`: it writes there.
    Event(&'a str),
    /// An owner reference, on an object in `namespace`, to an object of `kind`: the garbage
    /// collector acts on it, so the plugin must read the owner.
    Own(&'a GroupVersionKind, &'a str),
    /// Running as the identity of plugin `declared`, loaded from the source whose own identity is
    /// `source` (a plugin file's name without `.wasm`, or a `WasmReconciler`'s name).
    Identity {
        /// The identity the source runs as unless the policy maps it to another.
        source: &'a str,
        /// The name `describe()` declared.
        declared: &'a str,
    },
    /// Reading a `WasmReconciler`'s module from a ConfigMap or Secret in `namespace`.
    ModuleObject(&'a str),
    /// Fetching a `WasmReconciler`'s module from `address`.
    ModuleAddress(IpAddr),
    /// Running a module no key the operator trusts has signed (every module from a ConfigMap,
    /// Secret or URL, and one from a registry that names no key to verify).
    Unsigned,
    /// Reading the API's shape (discovery, `/version`) through the transport, which the
    /// apiserver grants every authenticated user: every plugin that has described itself may.
    Discover,
}

impl<'a> Power<'a> {
    /// Whether the power changes something in the cluster.
    pub fn writes(&self) -> bool {
        match self {
            Power::Call(verb, ..) => verb.writes(),
            Power::Event(_) => true,
            _ => false,
        }
    }

    /// The same webhook on objects in `namespace`; any other power unchanged.
    pub fn within<'b>(self, namespace: &'b str) -> Power<'b>
    where
        'a: 'b,
    {
        match self {
            Power::Validate(kind, _) => Power::Validate(kind, namespace),
            Power::Default(kind, _) => Power::Default(kind, namespace),
            other => other,
        }
    }
}

/// Why a power was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Denied {
    /// The plugin did not declare it.
    #[error("{0}: describe() declared no such permission")]
    Undeclared(String),
    /// The operator's policy does not allow it.
    #[error("{0}, which the operator's policy does not allow")]
    Operator(String),
    /// The plugin's own (`WasmReconciler`'s) policy does not allow it.
    #[error("{0}, which its WasmReconciler's policy does not allow")]
    Own(String),
    /// A webhook in a protected namespace the operator's policy does not name for it.
    #[error(
        "{0}, a protected namespace (kube-system, the host's own) that no allowance of the \
         operator's policy names for it"
    )]
    Protected(String),
    /// Outside the namespace of the namespaced `WasmReconciler` that installed the plugin.
    #[error(
        "{what}: its WasmReconciler in namespace {home} confines it to that namespace (a \
         ClusterWasmReconciler is not confined)"
    )]
    Confined {
        /// What was asked.
        what: String,
        /// The namespace it is confined to.
        home: String,
    },
    /// A read the apiserver no longer grants the plugin's identity.
    #[error(
        "{what}: the apiserver no longer lets its identity {user} read it (reviewed every {}s)",
        REVIEW_TTL.as_secs()
    )]
    Revoked {
        /// What was asked.
        what: String,
        /// The identity's Kubernetes user.
        user: String,
    },
}

/// Who asks for a power: the plugin's registration (absent for a module source, read before the
/// plugin describes itself) and the policies over it, the operator's first.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// What the plugin declared, once it has.
    pub registration: Option<&'a Registration>,
    /// The operator's policy, then the plugin's own (its `WasmReconciler`'s) if any.
    pub policies: &'a [Ceiling],
    /// What the apiserver lets its own identity read now, in identity mode.
    pub rights: Option<&'a Rights>,
    /// The name of the object a tenant installed the plugin by (a `WasmReconciler` or
    /// `ClusterWasmReconciler`; empty before the plugin has described itself), `None` for the
    /// operator's plugins: the operator's grants by name (`identities`, `conversions`) then speak
    /// of it only by that object, so no tenant takes a grant meant for an operator's plugin or
    /// another tenant's by declaring its name.
    pub tenant: Option<&'a str>,
    /// The namespace of the namespaced `WasmReconciler` that installed the plugin: the plugin
    /// reads, writes, records events, sets owner references and reads its module only there,
    /// and has no webhook or conversion (those reach every namespace).
    pub home: Option<&'a str>,
}

impl<'a> Subject<'a> {
    /// Whoever wrote a `WasmReconciler` (in namespace `home`) or a `ClusterWasmReconciler`
    /// (`home` `None`), before its plugin has described itself: only the operator's `policy`
    /// speaks for them.
    pub fn tenant(policy: &'a Ceiling, home: Option<&'a str>) -> Self {
        Subject {
            registration: None,
            policies: std::slice::from_ref(policy),
            rights: None,
            tenant: Some(""),
            home,
        }
    }
}

/// Decides whether `subject` may use `power`; the error says what was asked and who refused it.
pub fn check(subject: Subject<'_>, power: Power<'_>) -> Result<(), Denied> {
    match power {
        Power::Call(verb, kind, namespace) => {
            subject.grant(verb, kind, namespace, &what(power))?;
            subject.at_home(namespace, &what(power))?;
            match verb.writes() {
                true => Ok(()),
                false => subject.current(kind, namespace, &what(power)),
            }
        }
        Power::Validate(kind, namespace) => {
            subject.homeless(&what(power))?;
            subject.grant(Verb::Get, kind, namespace, &what(power))?;
            subject.guarded(Verb::Get, kind, namespace, &what(power))
        }
        Power::Default(kind, namespace) => {
            subject.homeless(&what(power))?;
            subject.rewrite(kind, namespace, &what(power))
        }
        Power::Inform(kind) => subject.inform(kind, &what(power)),
        Power::Convert(kind) => {
            subject.homeless(&what(power))?;
            subject.grant(Verb::Get, kind, "", &what(power))?;
            subject.rewrite(kind, "", &what(power))?;
            let plugin = granted_name(subject);
            subject.operator(&what(power), |c| c.may_convert(&plugin, kind))
        }
        Power::Event(namespace) => {
            let writes = subject.registration.is_some_and(|r| r.writes_in(namespace));
            match writes {
                true => subject.at_home(namespace, &what(power)),
                false => Err(Denied::Undeclared(what(power))),
            }
        }
        Power::Own(kind, namespace) => {
            subject.grant(Verb::Get, kind, namespace, &what(power))?;
            subject.at_home(namespace, &what(power))?;
            subject.current(kind, namespace, &what(power))
        }
        Power::Identity { source, declared } => {
            let runs_as = match subject.tenant {
                Some(_) => source,
                None => subject
                    .policies
                    .first()
                    .map_or(source, |c| c.identity(source)),
            };
            match runs_as == declared {
                true => Ok(()),
                false => Err(Denied::Operator(format!(
                    "declares the name {declared}, but its source {source} runs as {runs_as}"
                ))),
            }
        }
        Power::ModuleObject(namespace) => match subject.home {
            Some(_) => subject.at_home(namespace, &what(power)),
            None => subject.operator(&what(power), |c| c.modules.allows_namespace(namespace)),
        },
        Power::ModuleAddress(address) => {
            subject.operator(&what(power), |c| c.modules.allows_address(address))
        }
        Power::Unsigned => subject.operator(&what(power), |c| !c.signatures.require),
        Power::Discover => match subject.registration {
            Some(_) => Ok(()),
            None => Err(Denied::Undeclared(what(power))),
        },
    }
}

/// Every power `registration` and `webhooks` imply, to be checked when the plugin loads; a
/// grant across namespaces is, for a plugin confined to `home`, the same grant there.
pub fn implied<'a>(
    registration: &'a Registration,
    webhooks: Option<&'a WebhookRegistration>,
    home: Option<&'a str>,
) -> Vec<Power<'a>> {
    let grants = registration
        .grants()
        .map(|(kind, verb, namespaces)| (verb, kind, namespaces));
    let mut powers: Vec<Power> = grants
        .flat_map(|(verb, kind, namespaces)| match namespaces {
            [] => vec![Power::Call(verb, kind, home.unwrap_or_default())],
            some => some
                .iter()
                .map(|n| Power::Call(verb, kind, n.as_str()))
                .collect(),
        })
        .collect();
    if let Some(webhooks) = webhooks {
        powers.extend(
            webhooks
                .validate
                .iter()
                .map(|r| Power::Validate(&r.kind, "")),
        );
        powers.extend(webhooks.default.iter().map(|r| Power::Default(&r.kind, "")));
        powers.extend(webhooks.convert.iter().map(Power::Convert));
    }
    powers.extend(registration.informed_kinds().into_iter().map(Power::Inform));
    powers
}

/// The protected namespaces the webhook `power` may not reach (see [`Power::Validate`]): its
/// configuration leaves them out, and a call from one is refused.
pub fn unreached(subject: Subject<'_>, power: Power<'_>) -> Vec<String> {
    let protected = subject
        .policies
        .first()
        .map_or(&[][..], |c| &c.protected_namespaces);
    protected
        .iter()
        .filter(|namespace| check(subject, power.within(namespace)).is_err())
        .cloned()
        .collect()
}

/// The name of `subject`'s plugin (empty before it has described itself).
fn plugin<'a>(subject: Subject<'a>) -> &'a str {
    subject.registration.map_or("", |r| r.name.as_str())
}

/// The name the operator's policy grants `subject`'s plugin powers by: its own for the
/// operator's plugins, `clusterwasmreconciler/<object>` for a `ClusterWasmReconciler`'s, by the
/// object's name whatever the plugin declared (a namespaced `WasmReconciler`'s plugin is
/// granted nothing by name).
fn granted_name(subject: Subject<'_>) -> String {
    match (subject.tenant, subject.home) {
        (Some(object), Some(home)) => format!("wasmreconciler/{home}/{object}"),
        (Some(object), None) => format!("clusterwasmreconciler/{object}"),
        (None, _) => plugin(subject).to_owned(),
    }
}

impl Subject<'_> {
    /// In the subject's home namespace, if it has one.
    fn at_home(&self, namespace: &str, what: &str) -> Result<(), Denied> {
        match self.home {
            Some(home) if home != namespace => Err(Denied::Confined {
                what: what.to_owned(),
                home: home.to_owned(),
            }),
            _ => Ok(()),
        }
    }

    /// Not confined to a namespace: for powers that reach every namespace.
    fn homeless(&self, what: &str) -> Result<(), Denied> {
        match self.home {
            Some(home) => Err(Denied::Confined {
                what: what.to_owned(),
                home: home.to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// Declared and allowed: `verb` on `kind` in `namespace`.
    fn grant(
        &self,
        verb: Verb,
        kind: &GroupVersionKind,
        namespace: &str,
        what: &str,
    ) -> Result<(), Denied> {
        let declared = self
            .registration
            .is_some_and(|r| r.allows(verb, kind, namespace));
        if !declared {
            return Err(Denied::Undeclared(what.to_owned()));
        }
        self.policy(what, |c| c.covers(verb, kind, namespace))
    }

    /// Still granted by the apiserver to the plugin's identity, if it has one: reads of `kind` in
    /// `namespace`.
    fn current(&self, kind: &GroupVersionKind, namespace: &str, what: &str) -> Result<(), Denied> {
        match self.rights.filter(|rights| rights.refuses(kind, namespace)) {
            None => Ok(()),
            Some(rights) => Err(Denied::Revoked {
                what: what.to_owned(),
                user: rights.user().to_owned(),
            }),
        }
    }

    /// Declared and allowed: one verb that rewrites objects of `kind` in `namespace` (empty:
    /// in every namespace).
    fn rewrite(&self, kind: &GroupVersionKind, namespace: &str, what: &str) -> Result<(), Denied> {
        let declared = |verb| {
            self.registration
                .is_some_and(|r| r.allows(verb, kind, namespace))
        };
        let mut refusal = Denied::Undeclared(what.to_owned());
        for verb in REWRITES.into_iter().filter(|verb| declared(*verb)) {
            let allowed = self
                .policy(what, |c| c.covers(verb, kind, namespace))
                .and_then(|()| self.guarded(verb, kind, namespace, what));
            match allowed {
                Ok(()) => return Ok(()),
                Err(denied) => refusal = denied,
            }
        }
        Err(refusal)
    }

    /// Outside the protected namespaces, or in one the operator's policy names for `verb` on
    /// `kind`.
    fn guarded(
        &self,
        verb: Verb,
        kind: &GroupVersionKind,
        namespace: &str,
        what: &str,
    ) -> Result<(), Denied> {
        let operator = self.policies.first();
        let protected = operator.is_some_and(|c| c.protects(namespace));
        match !protected || operator.is_some_and(|c| c.names(verb, kind, namespace)) {
            true => Ok(()),
            false => Err(Denied::Protected(what.to_owned())),
        }
    }

    /// Some read of `kind` declared and allowed, across namespaces or in a namespace a
    /// permission names.
    fn inform(&self, kind: &GroupVersionKind, what: &str) -> Result<(), Denied> {
        let named = self
            .registration
            .into_iter()
            .flat_map(|r| &r.permissions)
            .filter(|p| object::includes(&p.kind, kind))
            .flat_map(|p| p.namespaces.iter().map(String::as_str));
        let mut refusal = Denied::Undeclared(what.to_owned());
        for namespace in std::iter::once("").chain(named) {
            for verb in READS {
                match self.grant(verb, kind, namespace, what) {
                    Ok(()) => return Ok(()),
                    Err(Denied::Undeclared(_)) => {}
                    Err(denied) => refusal = denied,
                }
            }
        }
        Err(refusal)
    }

    /// Allowed by the operator's policy, which alone grants conversions, identities and module
    /// sources (a `WasmReconciler`'s own policy only narrows grants).
    fn operator(&self, what: &str, allows: impl Fn(&Ceiling) -> bool) -> Result<(), Denied> {
        match self.policies.first().is_some_and(allows) {
            true => Ok(()),
            false => Err(Denied::Operator(what.to_owned())),
        }
    }

    /// Allowed by every policy over the subject, the operator's first.
    fn policy(&self, what: &str, allows: impl Fn(&Ceiling) -> bool) -> Result<(), Denied> {
        match self.policies.iter().position(|c| !allows(c)) {
            None => Ok(()),
            Some(0) => Err(Denied::Operator(what.to_owned())),
            Some(_) => Err(Denied::Own(what.to_owned())),
        }
    }
}

/// What `power` asks for, in words.
fn what(power: Power<'_>) -> String {
    let kind = object::shown;
    let place = |namespace: &str| match namespace {
        "" => "across namespaces".to_owned(),
        n => format!("in namespace {n}"),
    };
    match power {
        Power::Call(verb, k, namespace) => {
            format!("may not {verb:?} {} {}", kind(k), place(namespace))
        }
        Power::Validate(k, namespace) => {
            format!(
                "asks for a validating webhook on {} {}, which needs `get` on it",
                kind(k),
                place(namespace)
            )
        }
        Power::Default(k, namespace) => {
            format!(
                "asks for a defaulting webhook on {} {}, which needs `update` or `patch` on it",
                kind(k),
                place(namespace)
            )
        }
        Power::Inform(k) => format!(
            "may not have the host list and watch {} across the watched namespaces as the \
             operator",
            kind(k)
        ),
        Power::Convert(k) => format!(
            "asks to convert {}, which needs `get` and `update` or `patch` on it across \
             namespaces, and the operator's policy naming the conversion",
            kind(k)
        ),
        Power::Event(namespace) => format!("may not record events {}", place(namespace)),
        Power::Own(k, namespace) => {
            format!(
                "may not set an owner reference to {} {}",
                kind(k),
                place(namespace)
            )
        }
        Power::Identity { source, declared } => {
            format!("declares the name {declared} from source {source}")
        }
        Power::ModuleObject(namespace) => {
            format!("may not read a module from namespace {namespace}")
        }
        Power::ModuleAddress(address) => {
            format!("may not fetch a module from the private address {address}")
        }
        Power::Unsigned => "may not run a module no trusted key signed (signatures.require; \
             only spec.module.oci carries signatures)"
            .to_owned(),
        Power::Discover => {
            "may not read the API's discovery before it has described itself".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configmap() -> GroupVersionKind {
        GroupVersionKind::gvk("", "v1", "ConfigMap")
    }

    use crate::policy::{Allowance, Conversion, KindPattern};
    use crate::registration::Permission;
    use crate::webhook::{Operation, Rule};

    fn only(kinds: &str, verbs: Vec<Verb>) -> Ceiling {
        Ceiling {
            allow: Some(vec![Allowance {
                kinds: vec![KindPattern::parse(kinds).unwrap()],
                verbs,
                namespaces: vec![],
            }]),
            ..Ceiling::default()
        }
    }

    fn secret() -> GroupVersionKind {
        GroupVersionKind::gvk("", "v1", "Secret")
    }

    fn rule(kind: GroupVersionKind) -> Rule {
        Rule {
            kind,
            operations: vec![Operation::Create],
        }
    }

    /// The first power of `registration` and `webhooks` refused under `policies`.
    fn refused(
        registration: &Registration,
        webhooks: Option<&WebhookRegistration>,
        policies: &[Ceiling],
    ) -> Option<String> {
        let subject = Subject {
            registration: Some(registration),
            policies,
            rights: None,
            tenant: None,
            home: None,
        };
        implied(registration, webhooks, None)
            .into_iter()
            .find_map(|power| check(subject, power).err())
            .map(|denied| denied.to_string())
    }

    /// A plugin granted only ConfigMap patch and delete.
    fn configmap_patcher() -> Registration {
        let mut registration = Registration::minimal("patcher");
        registration.permissions.push(Permission {
            kind: configmap(),
            verbs: vec![Verb::Patch, Verb::Delete],
            namespaces: vec![],
        });
        registration
    }

    #[test]
    fn grants_must_be_declared_and_allowed() {
        let policy = [only(
            "core/ConfigMap",
            vec![Verb::Get, Verb::List, Verb::Watch],
        )];
        let reader = Registration::minimal("reader");
        assert_eq!(refused(&reader, None, &policy), None);
        let mut writer = Registration::minimal("writer");
        writer.permissions.push(Permission {
            kind: secret(),
            verbs: vec![Verb::Get],
            namespaces: vec![],
        });
        let reason = refused(&writer, None, &policy).unwrap();
        assert!(
            reason.contains("Get Secret.v1 across namespaces")
                && reason.contains("operator's policy"),
            "{reason}"
        );
        let own = [Ceiling::default(), policy[0].clone()];
        let reason = refused(&writer, None, &own).unwrap();
        assert!(reason.contains("WasmReconciler's policy"), "{reason}");
    }

    #[test]
    fn a_grant_of_every_version_needs_a_policy_of_every_version() {
        let mut elector = Registration::minimal("elector");
        let lease = |version| GroupVersionKind::gvk("coordination.k8s.io", version, "Lease");
        elector.permissions.push(Permission {
            kind: lease(""),
            verbs: vec![Verb::Get, Verb::Update],
            namespaces: vec![],
        });
        let policy = |lease: &str| {
            let mut ceiling = only(lease, vec![Verb::Get, Verb::Update]);
            let configmaps = only("core/ConfigMap", vec![Verb::Get, Verb::List, Verb::Watch]);
            let allow = ceiling.allow.as_mut().unwrap();
            allow.extend(configmaps.allow.unwrap());
            [ceiling]
        };
        let reason = refused(&elector, None, &policy("coordination.k8s.io/v1/Lease")).unwrap();
        assert!(
            reason.contains("Get Lease.coordination.k8s.io/* across namespaces"),
            "{reason}"
        );
        assert_eq!(
            refused(&elector, None, &policy("coordination.k8s.io/Lease")),
            None
        );
        let subject = Subject {
            registration: Some(&elector),
            policies: &policy("coordination.k8s.io/*/Lease"),
            rights: None,
            tenant: None,
            home: None,
        };
        let update = |version| check(subject, Power::Call(Verb::Update, &lease(version), "ns"));
        assert_eq!(update("v1"), Ok(()));
        assert_eq!(update("v1beta1"), Ok(()));
        let other = GroupVersionKind::gvk("coordination.k8s.io", "v1", "LeaseCandidate");
        let refused = check(subject, Power::Call(Verb::Update, &other, "ns"));
        assert!(matches!(refused, Err(Denied::Undeclared(_))), "{refused:?}");
    }

    #[test]
    fn a_tenant_takes_no_conversion_granted_to_an_operator_plugins_name() {
        let webapp = GroupVersionKind::gvk("example.wasmop.dev", "v2", "WebApp");
        let mut plugin = Registration::minimal("webapp");
        plugin.permissions.push(Permission {
            kind: webapp.clone(),
            verbs: vec![Verb::Get, Verb::Update],
            namespaces: vec![],
        });
        let granting = |name: &str| Ceiling {
            conversions: Some(vec![Conversion {
                kind: KindPattern::parse("example.wasmop.dev/WebApp").unwrap(),
                plugin: name.to_owned(),
            }]),
            ..Ceiling::default()
        };
        let subject = |policies, tenant| Subject {
            registration: Some(&plugin),
            policies,
            rights: None,
            tenant,
            home: None,
        };
        let operators = [granting("webapp")];
        assert_eq!(
            check(subject(&operators, None), Power::Convert(&webapp)),
            Ok(())
        );
        let reason = check(subject(&operators, Some("webapp")), Power::Convert(&webapp))
            .unwrap_err()
            .to_string();
        assert!(reason.contains("operator's policy"), "{reason}");
        let tenants = [granting("clusterwasmreconciler/webapp")];
        assert_eq!(
            check(subject(&tenants, Some("webapp")), Power::Convert(&webapp)),
            Ok(())
        );
        assert!(check(subject(&tenants, None), Power::Convert(&webapp)).is_err());
        // Another object whose plugin declares the name gets nothing of the grant.
        let reason = check(subject(&tenants, Some("impostor")), Power::Convert(&webapp));
        assert!(
            reason.is_err(),
            "a grant by name went to what the plugin said"
        );
    }

    #[test]
    fn webhooks_need_the_reads_and_writes_they_imply() {
        let policy = [only(
            "core/ConfigMap",
            vec![
                Verb::Get,
                Verb::List,
                Verb::Watch,
                Verb::Patch,
                Verb::Delete,
            ],
        )];
        let plugin = configmap_patcher();
        let on = |validate: Vec<Rule>, default: Vec<Rule>| WebhookRegistration {
            validate,
            default,
            convert: vec![],
        };
        let own_kind = on(vec![rule(configmap())], vec![rule(configmap())]);
        assert_eq!(refused(&plugin, Some(&own_kind), &policy), None);

        let secrets = on(vec![rule(secret())], vec![]);
        let reason = refused(&plugin, Some(&secrets), &policy).unwrap();
        assert!(
            reason.contains("validating webhook on Secret.v1")
                && reason.contains("needs `get` on it")
                && reason.contains("declared"),
            "{reason}"
        );
        let pods = on(vec![], vec![rule(GroupVersionKind::gvk("", "v1", "Pod"))]);
        let reason = refused(&plugin, Some(&pods), &policy).unwrap();
        assert!(
            reason.contains("defaulting webhook on Pod.v1")
                && reason.contains("needs `update` or `patch` on it"),
            "{reason}"
        );

        let reader = Registration::minimal("reader");
        let rewrites = on(vec![], vec![rule(configmap())]);
        assert!(refused(&reader, Some(&rewrites), &[Ceiling::default()]).is_some());
        let mut unallowed = configmap_patcher();
        unallowed.permissions[0].verbs.push(Verb::Update);
        let get_only = [only(
            "core/ConfigMap",
            vec![Verb::Get, Verb::List, Verb::Watch],
        )];
        let reason = refused(&unallowed, Some(&rewrites), &get_only).unwrap();
        assert!(reason.contains("operator's policy"), "{reason}");
    }

    #[test]
    fn webhooks_reach_protected_namespaces_only_where_the_operator_names_them() {
        let veto = Registration::minimal("veto");
        let validate = Power::Validate(&veto.primary, "");
        let subject = |policies| Subject {
            registration: Some(&veto),
            policies,
            rights: None,
            tenant: Some("webapp"),
            home: None,
        };
        let open = [Ceiling::default()];
        assert_eq!(check(subject(&open), validate), Ok(()));
        assert_eq!(unreached(subject(&open), validate), ["kube-system"]);
        let reason = check(subject(&open), validate.within("kube-system")).unwrap_err();
        assert!(matches!(reason, Denied::Protected(_)), "{reason:?}");
        assert!(
            reason.to_string().contains("in namespace kube-system"),
            "{reason}"
        );
        assert_eq!(check(subject(&open), validate.within("team-a")), Ok(()));

        let mut naming = only("core/ConfigMap", vec![Verb::Get, Verb::List, Verb::Watch]);
        naming.allow.as_mut().unwrap().push(Allowance {
            kinds: vec![KindPattern::parse("core/ConfigMap").unwrap()],
            verbs: vec![Verb::Get],
            namespaces: vec!["kube-system".to_owned()],
        });
        let named = [naming.clone()];
        assert!(unreached(subject(&named), validate).is_empty());
        let unlifted = Ceiling {
            protected_namespaces: vec![],
            ..naming
        };
        let by_tenant = [Ceiling::default(), unlifted];
        assert_eq!(unreached(subject(&by_tenant), validate), ["kube-system"]);
        let default = Power::Default(&veto.primary, "");
        assert_eq!(unreached(subject(&named), default), ["kube-system"]);

        let patcher = configmap_patcher();
        let patches_there = [Ceiling {
            allow: Some(vec![Allowance {
                kinds: vec![KindPattern::parse("core/ConfigMap").unwrap()],
                verbs: vec![Verb::Patch],
                namespaces: vec!["kube-system".to_owned()],
            }]),
            protected_namespaces: vec!["kube-system".to_owned(), "wasmop".to_owned()],
            ..Ceiling::default()
        }];
        let on_patcher = Subject {
            registration: Some(&patcher),
            policies: &patches_there,
            rights: None,
            tenant: None,
            home: None,
        };
        let default = Power::Default(&patcher.primary, "");
        assert_eq!(unreached(on_patcher, default), ["wasmop"]);
    }

    #[test]
    fn the_host_informs_only_kinds_the_plugin_may_read() {
        let mut indexer = Registration::minimal("index-secrets");
        indexer.indexes.push(crate::registration::FieldIndex {
            name: "by-type".to_owned(),
            kind: secret(),
            field: "type".to_owned(),
        });
        let open = [Ceiling::default()];
        let reason = refused(&indexer, None, &open).unwrap();
        assert!(
            reason.contains("list and watch Secret.v1") && reason.contains("declared"),
            "{reason}"
        );
        indexer.permissions.push(Permission {
            kind: secret(),
            verbs: vec![Verb::Get],
            namespaces: vec!["team-a".to_owned()],
        });
        assert_eq!(refused(&indexer, None, &open), None);
        let configmaps = [only(
            "core/ConfigMap",
            vec![Verb::Get, Verb::List, Verb::Watch],
        )];
        let reason = refused(&indexer, None, &configmaps).unwrap();
        assert!(reason.contains("operator's policy"), "{reason}");
    }

    #[test]
    fn a_conversion_needs_its_reads_writes_and_the_operator_naming_it() {
        let webapp = GroupVersionKind::gvk("example.wasmop.dev", "v1", "WebApp");
        let mut plugin = Registration::minimal("webapp");
        plugin.primary = webapp.clone();
        plugin.permissions.push(Permission {
            kind: webapp.clone(),
            verbs: vec![Verb::Update],
            namespaces: vec![],
        });
        let converts = WebhookRegistration {
            convert: vec![webapp.clone()],
            ..WebhookRegistration::default()
        };
        let unnamed = Ceiling {
            conversions: Some(vec![]),
            ..Ceiling::default()
        };
        let reason = refused(&plugin, Some(&converts), &[unnamed]).unwrap();
        assert!(reason.contains("asks to convert WebApp"), "{reason}");
        let named = Ceiling {
            conversions: Some(vec![Conversion {
                kind: KindPattern::parse("example.wasmop.dev/WebApp").unwrap(),
                plugin: "webapp".to_owned(),
            }]),
            ..Ceiling::default()
        };
        assert_eq!(
            refused(&plugin, Some(&converts), std::slice::from_ref(&named)),
            None
        );
        let other = GroupVersionKind::gvk("other.example.com", "v1", "Thing");
        let foreign = WebhookRegistration {
            convert: vec![other],
            ..WebhookRegistration::default()
        };
        assert!(refused(&plugin, Some(&foreign), &[named]).is_some());
    }

    #[test]
    fn events_land_only_where_the_plugin_writes_and_identities_are_the_sources() {
        let mut plugin = Registration::minimal("writer");
        plugin.permissions.push(Permission {
            kind: configmap(),
            verbs: vec![Verb::Create],
            namespaces: vec!["team-a".to_owned()],
        });
        let policies = [Ceiling::default()];
        let subject = Subject {
            registration: Some(&plugin),
            policies: &policies,
            rights: None,
            tenant: None,
            home: None,
        };
        assert!(check(subject, Power::Event("team-a")).is_ok());
        assert!(check(subject, Power::Event("kube-system")).is_err());
        assert!(Power::Event("team-a").writes());

        let identity = |source, declared| Power::Identity { source, declared };
        assert!(check(subject, identity("webapp", "webapp")).is_ok());
        let reason = check(subject, identity("evil", "secret-deleter"))
            .unwrap_err()
            .to_string();
        assert!(reason.contains("runs as evil"), "{reason}");
        let mapped = [Ceiling {
            identities: [("canary".to_owned(), "webapp".to_owned())].into(),
            ..Ceiling::default()
        }];
        let subject = Subject {
            registration: Some(&plugin),
            policies: &mapped,
            rights: None,
            tenant: None,
            home: None,
        };
        assert!(check(subject, identity("canary", "webapp")).is_ok());
        assert!(check(subject, identity("canary", "canary")).is_err());
        // A tenant's source named like the mapped one runs as itself, not as the operator's plugin.
        let tenant = Subject {
            tenant: Some("webapp"),
            ..subject
        };
        let reason = check(tenant, identity("canary", "webapp"))
            .unwrap_err()
            .to_string();
        assert!(reason.contains("runs as canary"), "{reason}");
        assert!(check(tenant, identity("canary", "canary")).is_ok());
    }

    #[test]
    fn module_sources_are_the_operators_to_allow() {
        let tenant = [Ceiling::default(), Ceiling::default()];
        let subject = Subject {
            registration: None,
            policies: &tenant,
            rights: None,
            tenant: Some("webapp"),
            home: None,
        };
        assert!(check(subject, Power::ModuleObject("kube-system")).is_err());
        let loopback = Power::ModuleAddress("127.0.0.1".parse().unwrap());
        assert!(check(subject, loopback).is_err());
        assert!(check(subject, Power::Call(Verb::Get, &configmap(), "a")).is_err());
        assert!(check(subject, Power::Unsigned).is_ok());
        let signed_only = Ceiling {
            signatures: crate::signature::Signatures {
                keys: Vec::new(),
                require: true,
            },
            ..Ceiling::default()
        };
        let refused = check(Subject::tenant(&signed_only, None), Power::Unsigned).unwrap_err();
        assert!(
            refused.to_string().contains("signatures.require"),
            "{refused}"
        );
    }

    #[test]
    fn a_namespaced_tenant_writes_and_reads_its_module_only_at_home_and_hooks_nothing() {
        let mut plugin = Registration::minimal("team-app");
        plugin.permissions.push(Permission {
            kind: configmap(),
            verbs: vec![Verb::Create, Verb::Patch, Verb::Update],
            namespaces: vec![],
        });
        let policies = [Ceiling {
            modules: crate::policy::ModuleSources {
                namespaces: Some(vec!["team-b".to_owned()]),
                ..Default::default()
            },
            ..Ceiling::default()
        }];
        let subject = Subject {
            registration: Some(&plugin),
            policies: &policies,
            rights: None,
            tenant: Some("webapp"),
            home: Some("team-a"),
        };
        let create = |namespace| Power::Call(Verb::Create, &plugin.permissions[0].kind, namespace);
        assert_eq!(check(subject, create("team-a")), Ok(()));
        for elsewhere in ["team-b", "kube-system", ""] {
            let reason = check(subject, create(elsewhere)).unwrap_err();
            assert!(matches!(reason, Denied::Confined { .. }), "{reason:?}");
        }
        let read = |namespace| Power::Call(Verb::Get, &plugin.permissions[0].kind, namespace);
        assert_eq!(check(subject, read("team-a")), Ok(()));
        for elsewhere in ["team-b", ""] {
            let reason = check(subject, read(elsewhere)).unwrap_err();
            assert!(matches!(reason, Denied::Confined { .. }), "{reason:?}");
        }
        // What it declared across namespaces it is granted at home, and only there.
        let at_load = implied(&plugin, None, Some("team-a"));
        assert!(at_load.iter().all(|power| check(subject, *power).is_ok()));
        assert!(
            implied(&plugin, None, None)
                .iter()
                .any(|p| check(subject, *p).is_err())
        );
        assert_eq!(check(subject, Power::Event("team-a")), Ok(()));
        assert!(check(subject, Power::Event("team-b")).is_err());
        assert!(check(subject, Power::Own(&plugin.primary, "team-b")).is_err());
        // Its own namespace holds its module and pull secret, whatever modules.namespaces lists.
        assert_eq!(check(subject, Power::ModuleObject("team-a")), Ok(()));
        let reason = check(subject, Power::ModuleObject("team-b")).unwrap_err();
        assert!(reason.to_string().contains("namespace team-a"), "{reason}");
        for hook in [
            Power::Validate(&configmap(), ""),
            Power::Default(&configmap(), "team-a"),
            Power::Convert(&configmap()),
        ] {
            let reason = check(subject, hook).unwrap_err();
            assert!(matches!(reason, Denied::Confined { .. }), "{reason:?}");
        }
        let cluster = Subject {
            home: None,
            ..subject
        };
        assert_eq!(check(cluster, create("team-b")), Ok(()));
        assert!(check(cluster, Power::ModuleObject("team-a")).is_err());
    }

    #[test]
    fn a_revoked_identity_reads_nothing_of_the_kind_but_still_writes() {
        let plugin = configmap_patcher();
        let policies = [Ceiling::default()];
        let rights = Rights::new("system:serviceaccount:ops:wasmop-plugin-patcher".to_owned());
        let subject = Subject {
            registration: Some(&plugin),
            policies: &policies,
            rights: Some(&rights),
            tenant: None,
            home: None,
        };
        let read = Power::Call(Verb::Get, &plugin.primary, "shop");
        assert_eq!(check(subject, read), Ok(()));
        rights.set(vec![(configmap(), String::new())]);
        let reason = check(subject, read).unwrap_err();
        assert!(matches!(reason, Denied::Revoked { .. }), "{reason:?}");
        let reason = reason.to_string();
        assert!(reason.contains("wasmop-plugin-patcher"), "{reason}");
        let list = Power::Call(Verb::List, &plugin.primary, "");
        assert!(check(subject, list).is_err());
        assert!(check(subject, Power::Own(&plugin.primary, "shop")).is_err());
        // Writes impersonate the identity: the apiserver checks those itself.
        let patch = Power::Call(Verb::Patch, &plugin.primary, "shop");
        assert_eq!(check(subject, patch), Ok(()));
        rights.set(Vec::new());
        assert_eq!(check(subject, read), Ok(()));
    }
}
