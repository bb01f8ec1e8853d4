//! Running a fixture: the plugin reconciles the fixture's request against a host holding only
//! the fixture's objects, and what it did is compared with what the fixture expects: its outcome
//! (durations as durations), the writes it sent write by write and field by field, and the
//! events it recorded when the fixture states them.

use std::path::Path;
use std::sync::Arc;

use crate::fixture::{
    Call, Expected, Fixture, FixtureEvent, FixtureWrite, Request, object_ref, same_outcome,
};
use crate::record::{self, outcome_text};
use crate::runtime::{Plugin, PluginOptions, Runtime, RuntimeError, SetClock};
use crate::testing::explain::Cached;
use crate::testing::memory::MemoryHost;
use crate::testing::{diff, review};
use wasmop_contract::object::ObjectKey;

/// A plugin could not be tested.
#[derive(Debug, thiserror::Error)]
pub enum TestingError {
    /// The plugin did not load.
    #[error(transparent)]
    Load(#[from] RuntimeError),
}

/// One plugin, loaded in the real runtime against an in-memory host, ready to run fixtures.
pub struct Tester {
    plugin: Plugin,
    host: Arc<MemoryHost>,
    clock: SetClock,
}

/// What a fixture's reconcile did, and how it differs from what the fixture expects.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// How it ended, as fixtures state it.
    pub outcome: String,
    /// The error it ended with, if any.
    pub error: Option<String>,
    /// Every write it sent, in order.
    pub writes: Vec<FixtureWrite>,
    /// Every event it recorded, in order.
    pub events: Vec<FixtureEvent>,
    /// A webhook call's answer, every part stated; nothing for a reconcile.
    pub answer: Expected,
    /// Whether the fixture's call was a webhook's, whose expectations are its answer's.
    webhook: bool,
    /// Each difference from the fixture, one line each; none when it passed.
    pub differences: Vec<String>,
    /// What the host held before it.
    cached: Cached,
}

impl Checked {
    /// Whether it did what the fixture expects.
    pub fn passed(&self) -> bool {
        self.differences.is_empty()
    }

    /// What `expected` becomes to pass as this did: each expectation that differs is what was
    /// done, the others stay as stated; expectations with nothing stated become all that was
    /// done. Metadata the host gave the fixture's objects stays unstated in the writes.
    pub fn accepted(&self, expected: &Expected) -> Expected {
        let everything = *expected == Expected::default();
        if self.webhook {
            return self.accepted_answer(expected, everything);
        }
        let outcome = match &expected.outcome {
            Some(stated) if same_outcome(stated, &self.outcome) => Some(stated.clone()),
            Some(_) => Some(self.outcome.clone()),
            None if everything => Some(self.outcome.clone()),
            None => None,
        };
        let events = match &expected.events {
            Some(stated) if diff::events(stated, &self.events).is_empty() => Some(stated.clone()),
            Some(_) => Some(self.events.clone()),
            None if everything && !self.events.is_empty() => Some(self.events.clone()),
            None => None,
        };
        let writes = if diff::writes(&expected.writes, &self.writes, &self.cached).is_empty() {
            expected.writes.clone()
        } else {
            self.writes
                .iter()
                .map(|w| self.unstated(w, expected))
                .collect()
        };
        Expected {
            outcome,
            writes,
            events,
            ..self.accepted_answer(expected, everything)
        }
    }

    /// The webhook expectations of [`Checked::accepted`]: each stated one as answered; with
    /// nothing stated, every part of the answer (but warnings when there were none).
    fn accepted_answer(&self, expected: &Expected, everything: bool) -> Expected {
        fn chosen<T: Clone>(
            stated: &Option<T>,
            answered: &Option<T>,
            everything: bool,
        ) -> Option<T> {
            (stated.is_some() || everything)
                .then(|| answered.clone())
                .flatten()
        }
        let answer = &self.answer;
        let warned = answer
            .warnings
            .as_ref()
            .filter(|w| !w.is_empty() || !everything);
        Expected {
            allowed: chosen(&expected.allowed, &answer.allowed, everything),
            message: chosen(&expected.message, &answer.message, everything),
            warnings: chosen(&expected.warnings, &warned.cloned(), everything),
            patch: chosen(&expected.patch, &answer.patch, everything),
            converted: chosen(&expected.converted, &answer.converted, everything),
            ..Expected::default()
        }
    }

    /// `write` without the metadata the host gave its target, unless `expected` states it.
    fn unstated(&self, write: &FixtureWrite, expected: &Expected) -> FixtureWrite {
        let stated = expected
            .writes
            .iter()
            .find(|w| w.target() == write.target());
        let body = stated.map_or(&serde_json::Value::Null, |w| &w.body);
        FixtureWrite {
            body: self.cached.without_assigned(write, body),
            ..write.clone()
        }
    }
}

impl Tester {
    /// Loads the component in `file` with the options `wasmop run` gives a plugin by default.
    pub async fn load(runtime: &Runtime, file: &Path) -> Result<Tester, TestingError> {
        let host = MemoryHost::new();
        let clock = SetClock::default();
        let options = PluginOptions {
            clock: Some(clock.clone()),
            ..PluginOptions::default()
        };
        let plugin = runtime
            .load(file, options, |registration| {
                host.services_for(registration)
            })
            .await?;
        Ok(Tester {
            plugin,
            host,
            clock,
        })
    }

    /// The loaded plugin.
    pub fn plugin(&self) -> &Plugin {
        &self.plugin
    }

    /// Runs `fixture`: the host holds its objects alone and answers writes with the rejections
    /// the fixture gives, the guest's clock reads its time, the plugin reconciles its request
    /// (or answers its webhook call), and what it did is compared with what it expects.
    pub async fn check(&self, fixture: &Fixture) -> Checked {
        self.host.reset(fixture.objects.iter().cloned());
        let cached = self.cached(fixture);
        self.host.answer_as(&fixture.expect.writes);
        self.clock.set(fixture.now());
        match fixture.call() {
            Call::Reconcile(request) => self.reconciled(fixture, request, cached).await,
            call => self.answered(fixture, call, cached).await,
        }
    }

    /// The webhook `call`'s answer, compared with what `fixture` expects.
    async fn answered(&self, fixture: &Fixture, call: Call<'_>, cached: Cached) -> Checked {
        let (answer, error) = match review::answer(&self.plugin, call).await {
            Ok(answer) => (answer, None),
            Err(error) => (Expected::default(), Some(error)),
        };
        let answer = match call {
            Call::Validate(_) => Expected {
                patch: None,
                ..answer
            },
            _ => answer,
        };
        let mut differences: Vec<String> = error.iter().cloned().collect();
        if fixture.expect == Expected::default() {
            let expects = call.expectations().join(", ");
            differences.push(format!(
                "expects nothing: state its {expects} (`wasmop test --accept` writes what it answered)"
            ));
        }
        differences.extend(diff::answer(&fixture.expect, &answer));
        Checked {
            outcome: String::new(),
            error,
            writes: self.host.take_writes().iter().map(Into::into).collect(),
            events: self.host.take_events().iter().map(Into::into).collect(),
            answer,
            webhook: true,
            differences,
            cached,
        }
    }

    /// The reconcile of `request`, compared with what `fixture` expects.
    async fn reconciled(&self, fixture: &Fixture, request: &Request, cached: Cached) -> Checked {
        let key = ObjectKey::new(&request.namespace, &request.name);
        let result = self.plugin.reconcile(&key).await;
        let mut writes: Vec<FixtureWrite> =
            self.host.take_writes().iter().map(Into::into).collect();
        if fixture.expect.writes.iter().any(|w| w.redacted) {
            writes.iter_mut().for_each(record::redact_write);
        }
        let events: Vec<FixtureEvent> = self.host.take_events().iter().map(Into::into).collect();
        let outcome = outcome_text(&result);
        let error = result.err().map(|e| e.to_string());
        let mut differences = Vec::new();
        let expected = fixture.expect.outcome.as_ref();
        if let Some(expected) = expected.filter(|o| !same_outcome(o, &outcome)) {
            let cause = error.as_ref().map(|e| format!(" ({e})"));
            differences.push(format!(
                "outcome: expected `{expected}`, got `{outcome}`{}",
                cause.unwrap_or_default()
            ));
        }
        differences.extend(diff::writes(&fixture.expect.writes, &writes, &cached));
        if let Some(expected) = &fixture.expect.events {
            differences.extend(diff::events(expected, &events));
        }
        Checked {
            outcome,
            error,
            writes,
            events,
            answer: Expected::default(),
            webhook: false,
            differences,
            cached,
        }
    }

    /// The fixture's objects, as given and as the host holds them.
    fn cached(&self, fixture: &Fixture) -> Cached {
        let held = fixture.objects.iter().map(|object| {
            let target = object_ref(object)?;
            self.host.get(&target.kind, &target.key)
        });
        let held = held.map(Option::unwrap_or_default).collect();
        Cached::new(fixture.objects.clone(), held)
    }
}
