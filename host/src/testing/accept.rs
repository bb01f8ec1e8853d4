//! `wasmop test --accept`: a fixture's expectations rewritten in its own text, so that the file's
//! diff shows what changed and nothing else. The text is edited where the expectations differ —
//! a scalar replaced, a key or a list item added or removed — and everything else (comments,
//! flow or block style, key order, quoting, the objects and the request) is kept byte for byte.
//! New parts take the style of where they land: flow inside a flow collection (JSON in a JSON
//! file), block otherwise.
//!
//! Invariant: the edited text reads back as the same fixture with the accepted expectations, or
//! [`accept`] refuses it.

use std::ops::Range;

use granit_parser::{Event, Parser, StructureStyle};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::ValueError;
use crate::fixture::{Expected, Fixture, ParseError};

/// Keys placed first, in this order, when a mapping is written anew; the others follow in
/// name order.
const FIRST_KEYS: [&str; 17] = [
    "allowed",
    "verb",
    "type",
    "reason",
    "message",
    "regarding",
    "force",
    "apiVersion",
    "kind",
    "namespace",
    "name",
    "metadata",
    "spec",
    "status",
    "body",
    "rejected",
    "redacted",
];

/// A fixture's text could not be edited in place.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    /// The text is not YAML.
    #[error("not valid YAML: {0}")]
    Yaml(String),
    /// The text does not read as YAML.
    #[error(transparent)]
    Read(#[from] ValueError),
    /// The text is not a fixture.
    #[error("not a fixture: {0}")]
    Fixture(#[from] ParseError),
    /// The edited text does not read back as the fixture with the accepted expectations.
    #[error("the edited fixture does not read back as accepted")]
    Mismatch,
}

/// One YAML node and where its text lies.
#[derive(Debug)]
struct Node {
    range: Range<usize>,
    shape: Shape,
}

/// What a node is.
#[derive(Debug)]
enum Shape {
    /// A scalar (or an alias), with its value.
    Scalar(String),
    /// A sequence.
    Seq { flow: bool, items: Vec<Node> },
    /// A mapping.
    Map { flow: bool, entries: Vec<Entry> },
}

/// One key and value of a mapping.
#[derive(Debug)]
struct Entry {
    key: String,
    key_range: Range<usize>,
    value: Node,
}

/// Where a node sits, which decides how a new value is written there.
#[derive(Debug, Clone, Copy)]
enum Place {
    /// The whole document.
    Root,
    /// Inside a flow collection.
    Flow,
    /// An item of a block sequence.
    Item,
    /// The value of a block mapping's key at column `key_col`, after the `:` at `colon`.
    Value { colon: usize, key_col: usize },
}

/// `text`, a fixture whose expectations are `old`, with `new` expectations instead.
pub fn accept(text: &str, old: &Expected, new: &Expected) -> Result<String, AcceptError> {
    let before = Fixture::parse(text)?;
    let root = tree(text)?;
    let value = crate::config::yaml(text)?;
    let mut accepted = value.clone();
    accepted["expect"] = expectations(value.get("expect"), old, new);
    let mut editor = Editor {
        text,
        json: matches!(root.shape, Shape::Map { flow: true, .. }),
        edits: Vec::new(),
    };
    editor.edit(&root, &value, &accepted, Place::Root);
    let edited = editor.apply();
    let after = Fixture::parse(&edited).map_err(|_| AcceptError::Mismatch)?;
    let wanted = Fixture {
        expect: new.clone(),
        ..before
    };
    if after != wanted {
        return Err(AcceptError::Mismatch);
    }
    Ok(edited)
}

/// The `expect` mapping as written (`stated`), with each expectation that differs between `old`
/// and `new` made `new`'s; list items `old` has too keep their text.
fn expectations(stated: Option<&Value>, old: &Expected, new: &Expected) -> Value {
    let mut expect = stated
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut set = |key: &str, value: Option<Value>| match value {
        Some(value) => expect.insert(key.to_owned(), value),
        None => expect.remove(key),
    };
    if old.outcome != new.outcome {
        set("outcome", new.outcome.clone().map(Value::String));
    }
    if old.writes != new.writes {
        let written = stated.and_then(|s| s.get("writes"));
        set("writes", Some(items(&old.writes, &new.writes, written)));
    }
    if old.events != new.events {
        let written = stated.and_then(|s| s.get("events"));
        let old_events = old.events.as_deref().unwrap_or_default();
        let events = new.events.as_deref().map(|e| items(old_events, e, written));
        set("events", events);
    }
    let answers = [
        ("allowed", json(&old.allowed), json(&new.allowed)),
        ("message", json(&old.message), json(&new.message)),
        ("warnings", json(&old.warnings), json(&new.warnings)),
        ("patch", json(&old.patch), json(&new.patch)),
        ("converted", json(&old.converted), json(&new.converted)),
    ];
    for (key, old, new) in answers {
        if old != new {
            set(key, new);
        }
    }
    Value::Object(expect)
}

/// `value` as JSON, `None` when it is absent.
fn json<T: Serialize>(value: &Option<T>) -> Option<Value> {
    value.as_ref().and_then(|v| serde_json::to_value(v).ok())
}

/// `new` items as a JSON list, each equal to one of `old` (matched in order) as `written` has it.
fn items<T: Serialize + PartialEq>(old: &[T], new: &[T], written: Option<&Value>) -> Value {
    let written = written.and_then(Value::as_array);
    let mut next = 0;
    let mut out = Vec::with_capacity(new.len());
    for item in new {
        let found = old[next.min(old.len())..].iter().position(|o| o == item);
        let kept = found.and_then(|at| written?.get(next + at).map(|w| (at, w.clone())));
        match kept {
            Some((at, text)) => {
                next += at + 1;
                out.push(text);
            }
            None => out.push(serde_json::to_value(item).unwrap_or_default()),
        }
    }
    Value::Array(out)
}

/// The nodes of `text`'s document, with their byte ranges.
fn tree(text: &str) -> Result<Node, AcceptError> {
    let mut events = Vec::new();
    for next in Parser::new_from_str(text) {
        let (event, span) = next.map_err(|e| AcceptError::Yaml(e.to_string()))?;
        let range = span
            .byte_range()
            .unwrap_or(span.start.index()..span.end.index());
        match event {
            Event::Scalar(value, ..) => events.push((Some(value.into_owned()), 0, range)),
            Event::Alias(_) => events.push((Some(String::new()), 0, range)),
            Event::SequenceStart(style, ..) => events.push((None, open(style, 1), range)),
            Event::MappingStart(style, ..) => events.push((None, open(style, 3), range)),
            Event::SequenceEnd | Event::MappingEnd => events.push((None, 5, range)),
            _ => {}
        }
    }
    let mut at = 0;
    node(&events, &mut at)
}

/// The code of a collection's start: `base` for block, `base + 1` for flow.
fn open(style: StructureStyle, base: u8) -> u8 {
    base + u8::from(style == StructureStyle::Flow)
}

/// An event reduced to what the tree needs: a scalar's value, its code (0 scalar, 1/2 block/flow
/// sequence, 3/4 block/flow mapping, 5 end), its range.
type Reduced = (Option<String>, u8, Range<usize>);

/// The node starting at `events[*at]`, which it moves past.
fn node(events: &[Reduced], at: &mut usize) -> Result<Node, AcceptError> {
    let truncated = || AcceptError::Yaml("the document ends inside a collection".to_owned());
    let (value, code, range) = events.get(*at).ok_or_else(truncated)?;
    *at += 1;
    if *code == 0 {
        let value = value.clone().unwrap_or_default();
        return Ok(Node {
            range: range.clone(),
            shape: Shape::Scalar(value),
        });
    }
    let flow = code % 2 == 0;
    let mut children = Vec::new();
    let end = loop {
        match events.get(*at).ok_or_else(truncated)? {
            (_, 5, end) => {
                *at += 1;
                break end.end;
            }
            _ => children.push(node(events, at)?),
        }
    };
    let last = children.last().map_or(range.start, |child| child.range.end);
    let range = range.start..if flow { end } else { last };
    let shape = if *code <= 2 {
        Shape::Seq {
            flow,
            items: children,
        }
    } else {
        let mut entries = Vec::new();
        let mut pairs = children.into_iter();
        while let (Some(key), Some(value)) = (pairs.next(), pairs.next()) {
            let Shape::Scalar(name) = key.shape else {
                return Err(AcceptError::Yaml(
                    "a mapping key that is not a scalar".to_owned(),
                ));
            };
            entries.push(Entry {
                key: name,
                key_range: key.range,
                value,
            });
        }
        Shape::Map { flow, entries }
    };
    Ok(Node { range, shape })
}

/// Edits of one text, collected then applied together.
struct Editor<'a> {
    text: &'a str,
    /// Whether new parts are written as JSON.
    json: bool,
    edits: Vec<(Range<usize>, String)>,
}

impl Editor<'_> {
    /// The text with every edit made.
    fn apply(mut self) -> String {
        self.edits
            .sort_by_key(|(range, _)| std::cmp::Reverse((range.start, range.end)));
        let mut text = self.text.to_owned();
        for (range, with) in self.edits {
            text.replace_range(range, &with);
        }
        text
    }

    /// Edits `node`, at `place`, which holds `old`, to hold `new`.
    fn edit(&mut self, node: &Node, old: &Value, new: &Value, place: Place) {
        if old == new {
            return;
        }
        match (&node.shape, old, new) {
            (Shape::Map { flow, entries }, Value::Object(was), Value::Object(now)) => {
                self.mapping(node, *flow, entries, was, now, place)
            }
            (Shape::Seq { flow, items }, Value::Array(was), Value::Array(now)) => {
                self.sequence(node, *flow, items, was, now, place)
            }
            _ => self.replace(node, new, place),
        }
    }

    /// Edits a mapping: its common keys' values in place, removed keys' lines taken out, added
    /// keys appended.
    fn mapping(
        &mut self,
        node: &Node,
        flow: bool,
        entries: &[Entry],
        was: &Map<String, Value>,
        now: &Map<String, Value>,
        place: Place,
    ) {
        let removed: Vec<&Entry> = entries
            .iter()
            .filter(|e| !now.contains_key(&e.key))
            .collect();
        let removable = removed.iter().all(|e| self.own_lines(e.key_range.start));
        if !removed.is_empty() && (flow || !removable) {
            return self.replace(node, &Value::Object(now.clone()), place);
        }
        for entry in entries {
            let Some(value) = now.get(&entry.key) else {
                let lines =
                    self.line_start(entry.key_range.start)..self.line_end(entry.value.range.end);
                self.edits.push((
                    lines.start..(lines.end + 1).min(self.text.len()),
                    String::new(),
                ));
                continue;
            };
            let place = match flow {
                true => Place::Flow,
                false => Place::Value {
                    colon: self.colon(entry.key_range.end),
                    key_col: self.col(entry.key_range.start),
                },
            };
            self.edit(
                &entry.value,
                was.get(&entry.key).unwrap_or(&Value::Null),
                value,
                place,
            );
        }
        let added: Vec<(&String, &Value)> = ordered(now)
            .into_iter()
            .filter(|(k, _)| !was.contains_key(*k))
            .collect();
        if added.is_empty() {
            return;
        }
        if flow {
            let texts: Vec<String> = added
                .iter()
                .map(|(k, v)| format!("{}: {}", self.scalar(k), self.flow(v)))
                .collect();
            let lead = if entries.is_empty() { "" } else { ", " };
            let at = node.range.end - 1;
            self.edits
                .push((at..at, format!("{lead}{}", texts.join(", "))));
            return;
        }
        let col = entries.first().map_or(0, |e| self.col(e.key_range.start));
        let pad = " ".repeat(col);
        let text: String = added
            .iter()
            .map(|(k, v)| format!("\n{pad}{}:{}", self.scalar(k), self.after_key(v, col)))
            .collect();
        let at = self.line_end(node.range.end);
        self.edits.push((at..at, text));
    }

    /// Edits a sequence: item by item when its length is kept, otherwise the items between the
    /// unchanged ones at its start and end replaced, taken out or put in.
    fn sequence(
        &mut self,
        node: &Node,
        flow: bool,
        items: &[Node],
        was: &[Value],
        now: &[Value],
        place: Place,
    ) {
        let item_place = if flow { Place::Flow } else { Place::Item };
        if was.len() == now.len() {
            for ((item, old), new) in items.iter().zip(was).zip(now) {
                self.edit(item, old, new, item_place);
            }
            return;
        }
        let shortest = was.len().min(now.len());
        let head = (0..shortest).take_while(|&i| was[i] == now[i]).count();
        let tail = (0..shortest - head)
            .take_while(|&i| was[was.len() - 1 - i] == now[now.len() - 1 - i])
            .count();
        let (gone, come) = (
            &items[head..items.len() - tail],
            &now[head..now.len() - tail],
        );
        let dashes_alone = gone.iter().all(|item| self.own_lines(self.dash(item)));
        if flow || items.is_empty() || items.len() != was.len() || !dashes_alone {
            return self.replace(node, &Value::Array(now.to_vec()), place);
        }
        let col = self.col(self.dash(&items[0]));
        let pad = " ".repeat(col);
        let texts: Vec<String> = come
            .iter()
            .map(|v| format!("- {}", self.item(v, col + 2)))
            .collect();
        match (gone.first(), gone.last()) {
            (Some(first), Some(last)) if !texts.is_empty() => {
                let range = self.dash(first)..last.range.end;
                self.edits.push((range, texts.join(&format!("\n{pad}"))));
            }
            (Some(first), Some(last)) => {
                let start = self.line_start(self.dash(first));
                let end = (self.line_end(last.range.end) + 1).min(self.text.len());
                self.edits.push((start..end, String::new()));
            }
            _ if head > 0 => {
                let at = self.line_end(items[head - 1].range.end);
                let text: String = texts.iter().map(|t| format!("\n{pad}{t}")).collect();
                self.edits.push((at..at, text));
            }
            _ => {
                let at = self.dash(&items[0]);
                let text: String = texts.iter().map(|t| format!("{t}\n{pad}")).collect();
                self.edits.push((at..at, text));
            }
        }
    }

    /// Replaces `node`, at `place`, with `new` written anew.
    fn replace(&mut self, node: &Node, new: &Value, place: Place) {
        let range = node.range.clone();
        let block = is_block(new) && !self.json;
        let was_flow = matches!(
            node.shape,
            Shape::Seq { flow: true, .. } | Shape::Map { flow: true, .. }
        );
        match place {
            Place::Flow => self.edits.push((range, self.flow(new))),
            _ if !block || was_flow => {
                let start = match place {
                    Place::Value { colon, .. } => colon + 1,
                    _ => range.start,
                };
                let lead = if matches!(place, Place::Value { .. }) {
                    " "
                } else {
                    ""
                };
                self.edits
                    .push((start..range.end, format!("{lead}{}", self.flow(new))));
            }
            Place::Root | Place::Item => {
                let col = self.col(range.start);
                self.edits.push((range, self.block(new, col)));
            }
            Place::Value { colon, key_col } => {
                self.edits
                    .push((colon + 1..range.end, self.after_key(new, key_col)));
            }
        }
    }

    /// `value` written after `key:` in a block mapping whose keys sit at column `col`.
    fn after_key(&self, value: &Value, col: usize) -> String {
        match value {
            Value::Object(map) if !map.is_empty() => {
                format!("\n{}{}", " ".repeat(col + 2), self.block(value, col + 2))
            }
            Value::Array(items) if !items.is_empty() => {
                format!("\n{}{}", " ".repeat(col), self.block(value, col))
            }
            _ => format!(" {}", self.flow(value)),
        }
    }

    /// `value` written after `- ` in a block sequence, at column `col`.
    fn item(&self, value: &Value, col: usize) -> String {
        if is_block(value) {
            self.block(value, col)
        } else {
            self.flow(value)
        }
    }

    /// A non-empty collection in block style, its first line starting at column `col` (not
    /// indented here), the others indented to it.
    fn block(&self, value: &Value, col: usize) -> String {
        let pad = format!("\n{}", " ".repeat(col));
        match value {
            Value::Object(map) => {
                let lines: Vec<String> = ordered(map)
                    .into_iter()
                    .map(|(k, v)| format!("{}:{}", self.scalar(k), self.after_key(v, col)))
                    .collect();
                lines.join(&pad)
            }
            Value::Array(items) => {
                let lines: Vec<String> = items
                    .iter()
                    .map(|v| format!("- {}", self.item(v, col + 2)))
                    .collect();
                lines.join(&pad)
            }
            _ => self.flow(value),
        }
    }

    /// `value` in flow style, on one line.
    fn flow(&self, value: &Value) -> String {
        match value {
            Value::Object(map) => {
                let fields: Vec<String> = ordered(map)
                    .into_iter()
                    .map(|(k, v)| format!("{}: {}", self.scalar(k), self.flow(v)))
                    .collect();
                format!("{{{}}}", fields.join(", "))
            }
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(|v| self.flow(v)).collect();
                format!("[{}]", items.join(", "))
            }
            Value::String(text) => self.scalar(text),
            other => other.to_string(),
        }
    }

    /// A string, plain where YAML reads it back as that string in any context, double-quoted
    /// otherwise (always, in JSON).
    fn scalar(&self, text: &str) -> String {
        if !self.json && plain(text) {
            text.to_owned()
        } else {
            Value::String(text.to_owned()).to_string()
        }
    }

    /// Whether nothing but indentation precedes `at` on its line.
    fn own_lines(&self, at: usize) -> bool {
        self.text[self.line_start(at)..at].trim().is_empty()
    }

    /// Where the line holding `at` starts.
    fn line_start(&self, at: usize) -> usize {
        self.text[..at].rfind('\n').map_or(0, |n| n + 1)
    }

    /// Where the line holding `at` ends (its line break, or the end of the text).
    fn line_end(&self, at: usize) -> usize {
        self.text[at..]
            .find('\n')
            .map_or(self.text.len(), |n| at + n)
    }

    /// The column of `at`.
    fn col(&self, at: usize) -> usize {
        at - self.line_start(at)
    }

    /// Where the `:` after a key ending at `at` is.
    fn colon(&self, at: usize) -> usize {
        self.text[at..].find(':').map_or(at, |n| at + n)
    }

    /// Where the `-` before a block sequence's item is.
    fn dash(&self, item: &Node) -> usize {
        self.text[..item.range.start]
            .rfind('-')
            .unwrap_or(item.range.start)
    }
}

/// Whether `value` is a collection with something in it, which block style writes on lines of
/// its own.
fn is_block(value: &Value) -> bool {
    match value {
        Value::Object(map) => !map.is_empty(),
        Value::Array(items) => !items.is_empty(),
        _ => false,
    }
}

/// `map`'s entries, [`FIRST_KEYS`] first.
fn ordered(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    let rank = |key: &str| {
        FIRST_KEYS
            .iter()
            .position(|k| *k == key)
            .unwrap_or(FIRST_KEYS.len())
    };
    entries.sort_by_key(|(key, _)| rank(key));
    entries
}

/// Whether `text` may be written unquoted: letters, digits, spaces inside, `.`, `_`, `/`, `-`,
/// starting with a letter and not a word YAML reads as a boolean or null.
fn plain(text: &str) -> bool {
    let reserved = ["true", "false", "null", "yes", "no", "on", "off", "y", "n"];
    text.starts_with(|c: char| c.is_ascii_alphabetic())
        && !text.ends_with(' ')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._/-".contains(c))
        && !reserved.contains(&text.to_ascii_lowercase().as_str())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fixture::FixtureWrite;

    /// A fixture as an author writes it: flow style, a comment, its own key order.
    const AUTHORED: &str = "\
# What a new WebApp gets.
request: {namespace: shop, name: web}
objects:
  - {apiVersion: example.wasmop.dev/v1, kind: WebApp, metadata: {namespace: shop, name: web}}
expect:
  outcome: done   # it converges at once
  writes:
    - {verb: apply, apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web, body: {metadata: {labels: {app: web, tier: front}}}}
    - verb: apply
      apiVersion: v1
      kind: Service
      namespace: shop
      name: web
      body:
        metadata: {labels: {app: web}}   # the same labels
";

    fn accepted(text: &str, change: impl FnOnce(&mut Expected)) -> String {
        let old = Fixture::parse(text).unwrap().expect;
        let mut new = old.clone();
        change(&mut new);
        accept(text, &old, &new).unwrap()
    }

    /// The lines of `before` a line diff removes, and those it adds in `after`.
    fn changed_lines(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
        let (b, a): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
        let mut common = vec![vec![0usize; a.len() + 1]; b.len() + 1];
        for i in (0..b.len()).rev() {
            for j in (0..a.len()).rev() {
                common[i][j] = if b[i] == a[j] {
                    common[i + 1][j + 1] + 1
                } else {
                    common[i + 1][j].max(common[i][j + 1])
                };
            }
        }
        let (mut i, mut j, mut removed, mut added) = (0, 0, Vec::new(), Vec::new());
        while i < b.len() || j < a.len() {
            if i < b.len() && j < a.len() && b[i] == a[j] {
                (i, j) = (i + 1, j + 1);
            } else if j < a.len() && (i == b.len() || common[i][j + 1] >= common[i + 1][j]) {
                added.push(a[j].to_owned());
                j += 1;
            } else {
                removed.push(b[i].to_owned());
                i += 1;
            }
        }
        (removed, added)
    }

    #[test]
    fn a_one_label_change_touches_that_line_alone() {
        let after = accepted(AUTHORED, |new| {
            new.writes[0].body["metadata"]["labels"]["tier"] = json!("back");
        });
        let (removed, added) = changed_lines(AUTHORED, &after);
        assert_eq!(removed.len(), 1, "{after}");
        assert_eq!(
            added,
            [
                "    - {verb: apply, apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web, body: {metadata: {labels: {app: web, tier: back}}}}"
            ]
        );
    }

    #[test]
    fn a_label_added_in_block_style_keeps_the_comment_and_the_rest() {
        let after = accepted(AUTHORED, |new| {
            new.writes[1].body["metadata"]["labels"]["tier"] = json!("front");
        });
        let (removed, added) = changed_lines(AUTHORED, &after);
        assert_eq!(
            removed,
            ["        metadata: {labels: {app: web}}   # the same labels"]
        );
        assert_eq!(
            added,
            ["        metadata: {labels: {app: web, tier: front}}   # the same labels"]
        );
    }

    #[test]
    fn a_changed_outcome_and_new_events_leave_the_writes_alone() {
        let after = accepted(AUTHORED, |new| {
            new.outcome = Some("requeue-after 30s".into());
            new.events = Some(Vec::new());
        });
        let (removed, added) = changed_lines(AUTHORED, &after);
        assert_eq!(removed, ["  outcome: done   # it converges at once"]);
        assert_eq!(
            added,
            [
                "  outcome: requeue-after 30s   # it converges at once",
                "  events: []"
            ]
        );
        assert!(
            after.ends_with("# the same labels\n  events: []\n"),
            "{after}"
        );
    }

    #[test]
    fn a_dropped_and_an_added_write_change_their_own_lines() {
        let service = Fixture::parse(AUTHORED).unwrap().expect.writes[1].clone();
        let dropped = accepted(AUTHORED, |new| {
            new.writes.remove(0);
        });
        let (removed, added) = changed_lines(AUTHORED, &dropped);
        assert!(removed.len() == 1 && added.is_empty(), "{dropped}");
        let delete = FixtureWrite {
            verb: crate::fixture::Verb::Delete,
            body: Value::Null,
            ..service
        };
        let appended = accepted(AUTHORED, |new| new.writes.push(delete));
        let (removed, added) = changed_lines(AUTHORED, &appended);
        assert!(removed.is_empty(), "{appended}");
        assert_eq!(
            added,
            [
                "    - verb: delete",
                "      apiVersion: v1",
                "      kind: Service",
                "      namespace: shop",
                "      name: web",
            ]
        );
    }

    #[test]
    fn a_fixture_without_expectations_gets_them_in_block_style() {
        let text = "request: {namespace: shop, name: web}\n";
        let after = accepted(text, |new| {
            new.outcome = Some("done".into());
        });
        assert_eq!(
            after,
            "request: {namespace: shop, name: web}\nexpect:\n  outcome: done\n"
        );
    }

    #[test]
    fn a_json_fixture_stays_json() {
        let text =
            r#"{"request": {"namespace": "shop", "name": "web"}, "expect": {"outcome": "done"}}"#;
        let after = accepted(text, |new| new.outcome = Some("error".into()));
        assert_eq!(
            after,
            r#"{"request": {"namespace": "shop", "name": "web"}, "expect": {"outcome": "error"}}"#
        );
        let added = accepted(text, |new| new.events = Some(Vec::new()));
        let parsed: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(parsed["expect"]["events"], json!([]));
    }
}
