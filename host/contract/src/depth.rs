//! How deeply a JSON document may nest anywhere the host parses one: [`MAX_DEPTH`] levels, well
//! under serde_json's recursion limit of 128, so no object a plugin writes can fail a later parse
//! of the host (a list page, a watch event, a review) with "recursion limit exceeded".
//!
//! Depth counts containers: a scalar is 0 deep, `{}` and `[]` are 1, `{"a":[1]}` is 2. The text
//! scan ([`of_text`]) is iterative and reads strings as strings, so it measures any input, however
//! deep, in one pass without recursion; [`of_value`] recurses, and is for values a parser already
//! bounded. [`Bounded`] parses a value inside a larger document and reads one that is too deep to
//! its end without recursion, so the document's other values still parse.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The deepest nesting the host accepts, from a guest or from the apiserver.
pub const MAX_DEPTH: usize = 64;

/// A document nested deeper than [`MAX_DEPTH`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} is nested {depth} levels deep, over the limit of {MAX_DEPTH}")]
pub struct TooDeep {
    /// What was measured.
    pub what: &'static str,
    /// How deep it is.
    pub depth: usize,
}

/// How deeply `text` nests: the most arrays and objects open at once, outside strings. Meant for
/// JSON; on other text it measures the brackets all the same.
pub fn of_text(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in text {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// How deeply `value` nests. Recursive: only for values whose parse already bounded their depth.
pub fn of_value(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(of_value).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(of_value).max().unwrap_or(0),
        _ => 0,
    }
}

/// Fails when `text` nests deeper than [`MAX_DEPTH`] plus `enclosing` levels (the containers a
/// document wraps around what is bounded, such as a review around its object); the error gives
/// the depth of what is inside them.
pub fn check(what: &'static str, text: &[u8], enclosing: usize) -> Result<(), TooDeep> {
    let depth = of_text(text).saturating_sub(enclosing);
    match depth > MAX_DEPTH {
        true => Err(TooDeep { what, depth }),
        false => Ok(()),
    }
}

/// Parses one value of at most `room` levels into a [`Value`]; a deeper one is read to its end
/// without recursion (serde_json skips what is ignored iteratively, past its recursion limit) and
/// parses as `None`.
#[derive(Debug, Clone, Copy)]
pub struct Bounded {
    /// The containers the value may nest.
    pub room: usize,
}

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(Value::Bool(v)))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Some(
            serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Value::from(v)))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Some(Value::String(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Some(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let Some(room) = self.room.checked_sub(1) else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(None);
        };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Bounded { room })? {
            let Some(item) = item else {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(None);
            };
            items.push(item);
        }
        Ok(Some(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(room) = self.room.checked_sub(1) else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(None);
        };
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some(value) = map.next_value_seed(Bounded { room })? else {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                return Ok(None);
            };
            members.insert(key, value);
        }
        Ok(Some(Value::Object(members)))
    }
}

/// `{"a":{"a":…{}…}}`, `depth` levels deep: a document to probe the bound with.
pub fn nested(depth: usize) -> String {
    let mut text = "{\"a\":".repeat(depth.saturating_sub(1));
    text.push_str("{}");
    text.push_str(&"}".repeat(depth.saturating_sub(1)));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_containers_not_brackets_in_strings() {
        for (text, depth) in [
            ("1", 0),
            (r#""[[[{""#, 0),
            ("{}", 1),
            ("[1,[2],{}]", 2),
            (r#"{"a\"[":["]}\\",{"b":[]}]}"#, 4),
        ] {
            assert_eq!(of_text(text.as_bytes()), depth, "{text}");
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(of_value(&value), depth, "{text}");
        }
    }

    #[test]
    fn a_bounded_value_parses_or_is_skipped_whole_and_the_document_goes_on() {
        let parse = |text: &str| {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let value = Bounded { room: MAX_DEPTH }.deserialize(&mut deserializer);
            deserializer.end().map(|()| value.unwrap())
        };
        let fits = nested(MAX_DEPTH);
        assert_eq!(parse(&fits).unwrap(), serde_json::from_str(&fits).ok());
        for depth in [MAX_DEPTH + 1, 127, 100_000] {
            assert_eq!(parse(&nested(depth)).unwrap(), None, "{depth}");
        }
        let document = format!(r#"[{},{{"b":[1.5,"x",null,true]}}]"#, nested(100_000));
        assert!(
            serde_json::from_str::<Value>(&document).is_err(),
            "serde_json alone fails the whole document"
        );
        struct Pair;
        impl<'de> Visitor<'de> for Pair {
            type Value = Vec<Option<Value>>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut values = Vec::new();
                while let Some(value) = seq.next_element_seed(Bounded { room: MAX_DEPTH })? {
                    values.push(value);
                }
                Ok(values)
            }
        }
        let values = serde_json::Deserializer::from_str(&document)
            .deserialize_seq(Pair)
            .unwrap();
        assert_eq!(
            values,
            vec![None, Some(serde_json::json!({"b": [1.5, "x", null, true]}))]
        );
    }

    #[test]
    fn text_past_serde_json_limit_is_measured_without_recursion() {
        let deep = nested(100_000);
        assert_eq!(of_text(deep.as_bytes()), 100_000);
        assert_eq!(
            check("the object", deep.as_bytes(), 0),
            Err(TooDeep {
                what: "the object",
                depth: 100_000
            })
        );
        assert!(check("the object", nested(MAX_DEPTH).as_bytes(), 0).is_ok());
        assert!(check("the review", nested(MAX_DEPTH + 2).as_bytes(), 2).is_ok());
        let refused = check("the review", nested(MAX_DEPTH + 3).as_bytes(), 2).unwrap_err();
        assert_eq!(refused.depth, MAX_DEPTH + 1);
        assert_eq!(
            refused.to_string(),
            "the review is nested 65 levels deep, over the limit of 64"
        );
    }
}
