//! Kubernetes label selectors (`app=web,tier!=db,env in (a,b),!legacy`) and field selectors
//! (`metadata.name=web,status.phase!=Failed`), parsed once and matched against an object.
//!
//! Keys and values follow Kubernetes' label syntax (a key is an optional DNS-subdomain prefix and
//! `/`, then a name of 1-63 letters, digits, `-`, `_` or `.` that starts and ends alphanumeric; a
//! value is empty or such a name), so what parses is what the apiserver would accept, and a
//! selector's text form ([`std::fmt::Display`]) parses back to the same selector. Errors name the
//! malformed part, cut to a few dozen bytes.

use std::fmt;

use crate::boundary::cut;

/// The longest label name, and the longest label value.
const MAX_LABEL: usize = 63;
/// The longest prefix of a label key (a DNS subdomain).
const MAX_PREFIX: usize = 253;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// The part of a label or field selector that is malformed (quoted cut), and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadSelector {
    /// A part that is no label requirement.
    #[error("{0:?} is not a label requirement")]
    Requirement(String),
    /// An `in` or `notin` whose values are not in parentheses.
    #[error("{0:?}: values must be in parentheses")]
    Parentheses(String),
    /// A part that is no field requirement.
    #[error("field selector {0:?} is not path=value")]
    Field(String),
    /// A malformed label key.
    #[error(
        "{0:?} is not a label key ([prefix/]name: a name of 1-63 letters, digits, '-', '_' or '.', \
         alphanumeric at both ends)"
    )]
    Key(String),
    /// A malformed label value.
    #[error(
        "{0:?} is not a label value (at most 63 letters, digits, '-', '_' or '.', alphanumeric at \
         both ends)"
    )]
    Value(String),
}

impl From<BadSelector> for crate::imports::ApiError {
    fn from(bad: BadSelector) -> Self {
        crate::boundary::invalid(bad.to_string())
    }
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the Kubernetes text form; the error says which part is malformed.
    pub fn parse(text: &str) -> Result<Self, BadSelector> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// How many requirements it has.
    pub fn len(&self) -> usize {
        self.requirements.len()
    }

    /// Whether it has no requirement (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The `key=value` requirements, which an index can answer directly.
    pub fn equalities(&self) -> impl Iterator<Item = (&str, &str)> {
        self.requirements.iter().filter_map(|r| match r {
            Requirement::Equals(k, v) => Some((k.as_str(), v.as_str())),
            _ => None,
        })
    }

    /// Whether the labels that `label` looks up satisfy every requirement.
    pub fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        let one_of = |vs: &[String], v: &str| vs.iter().any(|x| x == v);
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Requirement::Equals(k, v) => label(k) == Some(v.as_str()),
                Requirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
                Requirement::In(k, vs) => label(k).is_some_and(|v| one_of(vs, v)),
                Requirement::NotIn(k, vs) => label(k).is_none_or(|v| !one_of(vs, v)),
                Requirement::Exists(k) => label(k).is_some(),
                Requirement::DoesNotExist(k) => label(k).is_none(),
            })
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical text form, which parses back to the same selector.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match requirement {
                Requirement::Equals(k, v) => write!(f, "{k}={v}")?,
                Requirement::NotEquals(k, v) => write!(f, "{k}!={v}")?,
                Requirement::In(k, vs) => write!(f, "{k} in ({})", vs.join(","))?,
                Requirement::NotIn(k, vs) => write!(f, "{k} notin ({})", vs.join(","))?,
                Requirement::Exists(k) => write!(f, "{k}")?,
                Requirement::DoesNotExist(k) => write!(f, "!{k}")?,
            }
        }
        Ok(())
    }
}

/// One requirement of a field selector: a dotted path equal (or not) to a value.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    path: String,
    value: String,
    equal: bool,
}

/// A parsed field selector (`metadata.name=web,status.phase!=Failed`): equalities and
/// inequalities on string fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses the Kubernetes text form; the error names the malformed part.
    pub fn parse(text: &str) -> Result<Self, BadSelector> {
        let requirements = text
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(parse_field_requirement)
            .collect::<Result<_, BadSelector>>()?;
        Ok(FieldSelector { requirements })
    }

    /// The selector of one equality, `path=value`.
    pub fn equals(path: &str, value: &str) -> Self {
        FieldSelector {
            requirements: vec![FieldRequirement {
                path: path.to_owned(),
                value: value.to_owned(),
                equal: true,
            }],
        }
    }

    /// How many requirements it has.
    pub fn len(&self) -> usize {
        self.requirements.len()
    }

    /// Whether it has no requirement (and so matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether the fields `field` looks up satisfy every requirement.
    pub fn matches(&self, field: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|r| (field(&r.path).as_deref() == Some(r.value.as_str())) == r.equal)
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical text form, which parses back to the same selector.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            let op = if r.equal { "=" } else { "!=" };
            let comma = if i > 0 { "," } else { "" };
            write!(f, "{comma}{}{op}{}", r.path, r.value)?;
        }
        Ok(())
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, BadSelector> {
    let malformed = || BadSelector::Requirement(cut(part).to_owned());
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(label_key(key.trim())?));
    }
    for (op, build) in [
        ("!=", Requirement::NotEquals as fn(_, _) -> _),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((key, value)) = part.split_once(op) {
            return Ok(build(label_key(key.trim())?, label_value(value.trim())?));
        }
    }
    for (op, build) in [
        (" notin ", Requirement::NotIn as fn(_, _) -> _),
        (" in ", Requirement::In),
    ] {
        if let Some((key, values)) = part.split_once(op) {
            let values = values.trim();
            let inner = values.strip_prefix('(').and_then(|v| v.strip_suffix(')'));
            let inner = inner.ok_or_else(|| BadSelector::Parentheses(cut(part).to_owned()))?;
            let values = inner
                .split(',')
                .map(|v| label_value(v.trim()))
                .collect::<Result<_, _>>()?;
            return Ok(build(label_key(key.trim())?, values));
        }
    }
    if part.contains(char::is_whitespace) {
        return Err(malformed());
    }
    Ok(Requirement::Exists(label_key(part)?))
}

fn parse_field_requirement(part: &str) -> Result<FieldRequirement, BadSelector> {
    let malformed = || BadSelector::Field(cut(part).to_owned());
    let (path, value, equal) = match part.split_once("!=") {
        Some((path, value)) => (path, value, false),
        None => {
            let (path, value) = part.split_once('=').ok_or_else(malformed)?;
            (path, value.strip_prefix('=').unwrap_or(value), true)
        }
    };
    let path = path.trim();
    let dotted = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if path.is_empty() || !path.chars().all(dotted) {
        return Err(malformed());
    }
    let value = value.trim();
    if value.contains(['=', '!']) {
        return Err(malformed());
    }
    Ok(FieldRequirement {
        path: path.to_owned(),
        value: value.to_owned(),
        equal,
    })
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a label name.
fn label_key(key: &str) -> Result<String, BadSelector> {
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    let prefix_ok = !key.contains('/')
        || (!prefix.is_empty()
            && prefix.len() <= MAX_PREFIX
            && prefix.split('.').all(crate::boundary::dns_label));
    if prefix_ok && !name.is_empty() && label_name(name) {
        return Ok(key.to_owned());
    }
    Err(BadSelector::Key(cut(key).to_owned()))
}

/// A label value: empty, or a label name.
fn label_value(value: &str) -> Result<String, BadSelector> {
    if value.is_empty() || label_name(value) {
        return Ok(value.to_owned());
    }
    Err(BadSelector::Value(cut(value).to_owned()))
}

/// Whether `text` is 1-63 letters, digits, `-`, `_` or `.`, alphanumeric at both ends.
fn label_name(text: &str) -> bool {
    let alphanumeric = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.len() <= MAX_LABEL
        && alphanumeric(text.chars().next())
        && alphanumeric(text.chars().last())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(selector: &LabelSelector, pairs: &[(&str, &str)]) -> bool {
        selector.matches(|k| pairs.iter().find(|(key, _)| *key == k).map(|(_, v)| *v))
    }

    #[test]
    fn equality_set_and_existence_requirements_combine_with_and() {
        let selector =
            LabelSelector::parse("app=web, tier!=db, env in (prod, staging), team, !legacy")
                .unwrap();
        assert!(matches(
            &selector,
            &[("app", "web"), ("env", "prod"), ("team", "a")]
        ));
        assert!(!matches(
            &selector,
            &[("app", "web"), ("env", "dev"), ("team", "a")]
        ));
        assert!(!matches(
            &selector,
            &[
                ("app", "web"),
                ("env", "prod"),
                ("team", "a"),
                ("legacy", "")
            ]
        ));
        assert!(!matches(&selector, &[("app", "web"), ("env", "prod")]));
        assert!(matches(&LabelSelector::parse("").unwrap(), &[]));
    }

    #[test]
    fn field_selectors_match_string_fields() {
        let selector = FieldSelector::parse("metadata.name=a, spec.x==b").unwrap();
        let fields = |path: &str| match path {
            "metadata.name" => Some("a".to_owned()),
            "spec.x" => Some("b".to_owned()),
            _ => None,
        };
        assert!(selector.matches(fields));
        assert!(!FieldSelector::parse("spec.y=b").unwrap().matches(fields));
        assert!(FieldSelector::parse("nonsense").is_err());
    }

    #[test]
    fn keys_and_values_follow_label_syntax_and_the_text_form_parses_back() {
        // Inputs the fuzz target's round trip broke (host/src/fuzz/selector.rs): each parsed into
        // a requirement on a key or value no label can have.
        for bad in [
            "a===b",
            "k in (a=b)",
            "!a=b",
            "a b=c",
            "-a=b",
            "a=b-",
            "x/=y",
            "/x=y",
        ] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad:?} parsed");
        }
        let long = LabelSelector::parse(&format!("a={}", "v".repeat(64))).unwrap_err();
        assert!(matches!(long, BadSelector::Value(_)), "{long}");
        assert!(long.to_string().len() < 200, "{long}");
        let text = "app.kubernetes.io/name=web,tier!=db,env in (prod,),team,!legacy";
        let selector = LabelSelector::parse(text).unwrap();
        assert_eq!(selector.to_string(), text);
        assert_eq!(LabelSelector::parse(&selector.to_string()), Ok(selector));
    }

    #[test]
    fn field_selectors_take_inequalities() {
        // `!=` used to parse as the path `metadata.name!` equal to `web`: nothing matched.
        let selector = FieldSelector::parse("metadata.name!=web").unwrap();
        let named = |name: &'static str| move |_: &str| Some(name.to_owned());
        assert!(selector.matches(named("api")) && !selector.matches(named("web")));
        assert_eq!(selector.to_string(), "metadata.name!=web");
        for bad in ["=web", "a b=c", "a===b", "a=b!=c"] {
            assert!(FieldSelector::parse(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn malformed_selectors_are_refused_with_the_bad_part() {
        let error = LabelSelector::parse("env in prod").unwrap_err();
        assert_eq!(error, BadSelector::Parentheses("env in prod".into()));
        let error = LabelSelector::parse("a b").unwrap_err();
        assert_eq!(error, BadSelector::Requirement("a b".into()));
    }
}
