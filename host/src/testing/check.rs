//! Running a fixture: the plugin reconciles the fixture's request against a host holding only
//! the fixture's objects, and what it sent is compared with what the fixture expects, write by
//! write and field by field.

use std::path::Path;
use std::sync::Arc;

use crate::object::ObjectKey;
use crate::runtime::{Plugin, PluginOptions, Runtime, RuntimeError, SetClock};
use crate::testing::fixture::{Expected, Fixture, FixtureWrite, outcome_text};
use crate::testing::memory::MemoryHost;
use crate::testing::{diff, record};

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
    /// Each difference from the fixture, one line each; none when it passed.
    pub differences: Vec<String>,
}

impl Checked {
    /// Whether it did what the fixture expects.
    pub fn passed(&self) -> bool {
        self.differences.is_empty()
    }

    /// What a fixture would expect to pass as this did.
    pub fn expected(&self) -> Expected {
        Expected {
            outcome: Some(self.outcome.clone()),
            writes: self.writes.clone(),
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
    /// the fixture gives, the guest's clock reads its time, the plugin reconciles its request,
    /// and what it sent is compared with what it expects.
    pub async fn check(&self, fixture: &Fixture) -> Checked {
        self.host.reset(fixture.objects.iter().cloned());
        self.host.answer_as(&fixture.expect.writes);
        self.clock.set(fixture.now());
        let key = ObjectKey::new(&fixture.request.namespace, &fixture.request.name);
        let result = self.plugin.reconcile(&key).await;
        let mut writes: Vec<FixtureWrite> =
            self.host.take_writes().iter().map(Into::into).collect();
        if fixture.expect.writes.iter().any(|w| w.redacted) {
            writes.iter_mut().for_each(record::redact_write);
        }
        let outcome = outcome_text(&result);
        let error = result.err().map(|e| e.to_string());
        let mut differences = Vec::new();
        if let Some(expected) = fixture.expect.outcome.as_ref().filter(|o| **o != outcome) {
            let cause = error.as_ref().map(|e| format!(" ({e})"));
            differences.push(format!(
                "outcome: expected `{expected}`, got `{outcome}`{}",
                cause.unwrap_or_default()
            ));
        }
        let (expected, objects) = (&fixture.expect.writes, &fixture.objects);
        differences.extend(diff::writes(expected, &writes, objects));
        Checked {
            outcome,
            error,
            writes,
            differences,
        }
    }
}
