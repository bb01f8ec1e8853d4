/**
 * Running fixtures in-process, as `wasmop test` runs them against the built component: the fake
 * {@link host} holds exactly the fixture's objects and answers writes with its rejections, the
 * wall clock reads its `now`, the reconciler reconciles its request, and what it did is compared
 * with what is expected: its outcome, the writes it sent write by write and field by field, and
 * the events it recorded when the fixture states them. A file that is no fixture fails its own
 * test, naming the file and what is wrong; the other fixtures still run.
 */
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';
import { test } from 'node:test';

import type { Request } from '../object.ts';
import { toWitOutcome } from '../outcome.ts';
import type { plugin } from '../raw.ts';
import { toWitReconcileError } from '../reconcile-error.ts';
import type { Reconciler } from '../reconciler.ts';
import { apiVersionOf } from '../kind.ts';
import { atTime } from './clock.ts';
import { diffEvents, diffWrites } from './diff.ts';
import { loadFixture, parseFixture, type Fixture, type FixtureEvent, type FixtureWrite } from './fixture.ts';
import { host, type RecordedEvent } from './host.ts';
import { sameOutcome } from './outcome.ts';

/** What a fixture's reconcile did, and how it differs from what the fixture expects. */
export interface FixtureResult {
  /** The fixture run. */
  fixture: Fixture;
  /** How the reconcile ended, as fixtures state it: `done`, `requeue-after 30s`, `error`. */
  outcome: string;
  /** The reconcile error it ended with, e.g. `retryable: conflict: stale (409 Conflict)`. */
  error?: string;
  /** Every write it sent, in order, rejected ones included. */
  writes: FixtureWrite[];
  /** Every event it recorded, in order, as fixtures state them. */
  events: FixtureEvent[];
  /** Each difference from the fixture, one line each; none when it passed. */
  differences: string[];
}

const FIXTURE_EXTENSIONS = ['.yaml', '.yml', '.json'];

/**
 * Runs the fixture `pathOrText` (a file, or fixture text: anything with a line break) against
 * `reconciler` on the fake {@link host}, which it resets.
 */
export function runFixture(reconciler: Reconciler, pathOrText: string): FixtureResult {
  const fixture = pathOrText.includes('\n') ? parseFixture(pathOrText) : loadFixture(pathOrText);
  host.reset(reconciler);
  host.seed(fixture.objects);
  const cached = { given: fixture.objects, held: fixture.objects.map((obj) => host.held(obj) ?? obj) };
  host.answerAs(fixture.expect.writes);
  const { outcome, error } = atTime(fixture.now, () => reconcile(reconciler, fixture.request));
  const writes = [...host.sent];
  const events = host.events.map(fixtureEvent);
  const differences = [
    ...outcomeDifference(fixture.expect.outcome, outcome, error),
    ...diffWrites(fixture.expect.writes, writes, cached),
    ...(fixture.expect.events === undefined ? [] : diffEvents(fixture.expect.events, events)),
  ];
  return { fixture, outcome, error, writes, events, differences };
}

/** Runs the fixture `pathOrText` as {@link runFixture} does and fails with each difference on a line of its own. */
export function assertFixture(reconciler: Reconciler, pathOrText: string): FixtureResult {
  const result = runFixture(reconciler, pathOrText);
  if (result.differences.length > 0) {
    const { name, source } = result.fixture;
    const heading = name === source ? `fixture ${source} failed:` : `fixture ${name} (${source}) failed:`;
    assert.fail([heading, ...result.differences.map((line) => `  ${line}`)].join('\n'));
  }
  return result;
}

/**
 * Declares a `node:test` test for each fixture `paths` name: files as given, and each
 * directory's `.yaml`, `.yml` and `.json` files in name order, as `wasmop test` takes them.
 * Relative paths are from the working directory; `guest-sdk/js/test` runs a plugin's tests in
 * its folder, so `testFixtures(plugin, 'fixtures')` finds `plugins/<plugin>/js/fixtures/`.
 */
export function testFixtures(reconciler: Reconciler, ...paths: string[]): void {
  for (const file of fixtureFiles(paths)) {
    test(testName(file), () => {
      assertFixture(reconciler, file);
    });
  }
}

/** The fixture files `paths` name: files as given, and each directory's `.yaml`, `.yml` and `.json` files in name order. */
export function fixtureFiles(paths: string[]): string[] {
  const files = paths.flatMap((path) =>
    statSync(path, { throwIfNoEntry: false })?.isDirectory()
      ? readdirSync(path)
          .filter((name) => FIXTURE_EXTENSIONS.includes(extname(name)))
          .sort()
          .map((name) => join(path, name))
      : [path],
  );
  if (files.length === 0) {
    throw new Error(`no fixture files in ${paths.join(', ')} (from ${process.cwd()})`);
  }
  return files;
}

/** The fixture's name and file; the file alone when it has no name or is no fixture (its test says why). */
function testName(file: string): string {
  try {
    const { name } = loadFixture(file);
    return name === file ? file : `${name} (${file})`;
  } catch {
    return file;
  }
}

function reconcile(reconciler: Reconciler, request: Request): { outcome: string; error?: string } {
  try {
    return { outcome: outcomeText(toWitOutcome(reconciler.reconcile(request))) };
  } catch (thrown) {
    const error = toWitReconcileError(thrown);
    return { outcome: 'error', error: `${error.tag}: ${error.val}` };
  }
}

/** `done`, or `requeue-after 30s` (`1500ms` when not whole seconds) with ` priority N` when one was asked. */
function outcomeText(outcome: plugin.Outcome): string {
  if (outcome.tag === 'done') {
    return 'done';
  }
  const { after, priority } = outcome.val;
  const duration = after % 1000n === 0n ? `${after / 1000n}s` : `${after}ms`;
  return `requeue-after ${duration}${priority === undefined ? '' : ` priority ${priority}`}`;
}

/** A recorded event as fixtures state it. */
function fixtureEvent(event: RecordedEvent): FixtureEvent {
  const { gvk, namespace, name, reason, message } = event;
  const type = event.type === 'warning' ? 'Warning' : 'Normal';
  return { type, reason, message, regarding: { apiVersion: apiVersionOf(gvk), kind: gvk.kind, namespace, name } };
}

function outcomeDifference(expected: string | undefined, outcome: string, error: string | undefined): string[] {
  if (expected === undefined || sameOutcome(expected, outcome)) {
    return [];
  }
  const cause = error === undefined ? '' : ` (${error})`;
  return [`outcome: expected \`${expected}\`, got \`${outcome}\`${cause}`];
}
