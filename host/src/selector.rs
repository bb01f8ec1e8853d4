//! Kubernetes label selectors (`app=web,tier!=db,env in (a,b),!legacy`), parsed once and matched
//! against an object's labels.

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

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses the Kubernetes text form; the error says which part is malformed.
    pub fn parse(text: &str) -> Result<Self, String> {
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

/// A parsed field selector (`metadata.name=web,spec.nodeName==n1`): equalities on string fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    requirements: Vec<(String, String)>,
}

impl FieldSelector {
    /// Parses the Kubernetes text form; the error names the malformed part.
    pub fn parse(text: &str) -> Result<Self, String> {
        let requirements = text
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(|part| {
                let (path, value) = part
                    .split_once('=')
                    .ok_or_else(|| format!("field selector {part:?} is not path=value"))?;
                Ok((
                    path.trim().to_owned(),
                    value.trim_start_matches('=').trim().to_owned(),
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(FieldSelector { requirements })
    }

    /// The selector of one equality, `path=value`.
    pub fn equals(path: &str, value: &str) -> Self {
        FieldSelector {
            requirements: vec![(path.to_owned(), value.to_owned())],
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
            .all(|(path, value)| field(path).as_deref() == Some(value))
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

fn parse_requirement(part: &str) -> Result<Requirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(key.trim().to_owned()));
    }
    for (op, build) in [
        ("!=", Requirement::NotEquals as fn(_, _) -> _),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((key, value)) = part.split_once(op) {
            return Ok(build(key.trim().to_owned(), value.trim().to_owned()));
        }
    }
    for (op, build) in [
        (" notin ", Requirement::NotIn as fn(_, _) -> _),
        (" in ", Requirement::In),
    ] {
        if let Some((key, values)) = part.split_once(op) {
            let values = values.trim();
            let inner = values.strip_prefix('(').and_then(|v| v.strip_suffix(')'));
            let inner = inner.ok_or_else(|| format!("{part:?}: values must be in parentheses"))?;
            let values = inner.split(',').map(|v| v.trim().to_owned()).collect();
            return Ok(build(key.trim().to_owned(), values));
        }
    }
    if part.contains(char::is_whitespace) {
        return Err(format!("{part:?} is not a label requirement"));
    }
    Ok(Requirement::Exists(part.to_owned()))
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
    fn malformed_selectors_are_refused_with_the_bad_part() {
        let error = LabelSelector::parse("env in prod").unwrap_err();
        assert!(error.contains("parentheses"), "{error}");
        assert!(LabelSelector::parse("a b").unwrap_err().contains("\"a b\""));
    }
}
