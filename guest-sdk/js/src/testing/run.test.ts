import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { cache } from '../cache.ts';
import { client } from '../client.ts';
import { condition, type Condition } from '../conditions.ts';
import { AlreadyExists, Conflict, optional } from '../errors.ts';
import { events } from '../events.ts';
import { defineKind } from '../kind.ts';
import { ConfigMap } from '../kinds.ts';
import type { KubeObject } from '../object.ts';
import { done, requeueAfter } from '../outcome.ts';
import { defineReconciler } from '../reconciler.ts';
import { atTime } from './clock.ts';
import { FixtureError } from './fixture.ts';
import { host } from './host.ts';
import { assertFixture, fixtureFiles, runFixture } from './run.ts';

interface Widget extends KubeObject {
  spec?: { size?: number };
  status?: { conditions?: Condition[] };
}

const Widget = defineKind<Widget>('example.wasmop.dev/v1', 'Widget');

/** Sizes a ConfigMap after each Widget and marks the Widget Ready, retrying a conflicting status patch once. */
const widgets = defineReconciler({
  name: 'widgets',
  version: '0.1.0',
  primary: Widget,
  permissions: [
    { kind: ConfigMap, verbs: ['create', 'patch'] },
    { kind: Widget, verbs: ['status'] },
  ],
  reconcile({ namespace, name }) {
    const widget = optional(() => cache.get(Widget, namespace, name));
    if (!widget) {
      return done;
    }
    const size = String(widget.spec?.size ?? 1);
    try {
      client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace, name }, data: { size } });
    } catch (err) {
      if (!(err instanceof AlreadyExists)) {
        throw err;
      }
      client.patch(ConfigMap, namespace, name, { data: { size } });
    }
    const status = { status: { conditions: [condition('Ready', true, 'Sized', size)] } };
    try {
      client.patchStatus(Widget, namespace, name, status);
    } catch (err) {
      if (!(err instanceof Conflict)) {
        throw err;
      }
      client.patchStatus(Widget, namespace, name, status);
    }
    return requeueAfter(1500, { priority: 2 });
  },
});

const WORLD = `
name: a widget gets its ConfigMap and a Ready condition
now: 2030-05-06T07:08:09Z
objects:
  - {apiVersion: example.wasmop.dev/v1, kind: Widget, metadata: {namespace: shop, name: w}, spec: {size: 3}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {namespace: shop, name: other, uid: given, resourceVersion: "41", generation: 7}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {namespace: shop, name: plain}}
request: {namespace: shop, name: w}
`;

const CREATE = `
    - verb: create
      apiVersion: v1
      kind: ConfigMap
      namespace: shop
      name: w
      body: {apiVersion: v1, kind: ConfigMap, metadata: {namespace: shop, name: w}, data: {size: "3"}}`;

const READY = `
    - verb: merge-patch
      status: true
      apiVersion: example.wasmop.dev/v1
      kind: Widget
      namespace: shop
      name: w
      body:
        status:
          conditions:
            - {type: Ready, status: "True", reason: Sized, message: "3", lastTransitionTime: "2030-05-06T07:08:09Z"}`;

const PASSING = `${WORLD}
expect:
  outcome: requeue-after 1500ms priority 2
  writes:${CREATE}${READY}
`;

const FAILING = `${WORLD}
expect:
  outcome: done
  writes:${CREATE.replace('size: "3"', 'size: "2"')}
    - {verb: apply, force: true, apiVersion: apps/v1, kind: Deployment, namespace: shop, name: w, body: {}}
`;

const STATUS = 'merge-patch (status) example.wasmop.dev/v1 Widget shop/w';

test('a fixture the reconciler meets passes, at the time it names', () => {
  const result = runFixture(widgets, PASSING);
  assert.deepEqual(result.differences, []);
  assert.equal(result.outcome, 'requeue-after 1500ms priority 2');
  assert.deepEqual(
    result.writes.map((w) => [w.verb, w.status, w.kind, w.name]),
    [
      ['create', false, 'ConfigMap', 'w'],
      ['merge-patch', true, 'Widget', 'w'],
    ],
  );
  assert.equal(host.get(Widget, 'shop', 'w')?.status?.conditions?.[0]?.lastTransitionTime, '2030-05-06T07:08:09Z');
});

test('seeded objects keep their uid, resourceVersion and generation; the missing ones count from 1, a generation only with a spec', () => {
  runFixture(widgets, PASSING);
  const meta = (name: string) => {
    const { uid, resourceVersion, generation } = host.get(ConfigMap, 'shop', name)?.metadata ?? {};
    return { uid, resourceVersion, generation };
  };
  assert.deepEqual(meta('other'), { uid: 'given', resourceVersion: '41', generation: 7 });
  assert.deepEqual(meta('plain'), { uid: 'uid-3', resourceVersion: '3', generation: undefined });
  assert.deepEqual(meta('w'), { uid: 'uid-4', resourceVersion: '4', generation: undefined });
  assert.equal(host.get(Widget, 'shop', 'w')?.metadata?.uid, 'uid-1');
  assert.equal(host.get(Widget, 'shop', 'w')?.metadata?.generation, 1);
});

test('each difference from a failing fixture is reported: outcome, fields, writes missing and extra', () => {
  const result = runFixture(widgets, FAILING);
  assert.deepEqual(result.differences, [
    'outcome: expected `done`, got `requeue-after 1500ms priority 2`',
    'write 0 `create v1 ConfigMap shop/w`: at /data/size: expected "2", sent "3"',
    `write 1 \`${STATUS}\`: sent, not expected; against the cached object it changes:`,
    `write 1 \`${STATUS}\`: /status/conditions from null to [{"lastTransitionTime":"2030-05-06T07:08:09Z","message":"3","reason":"Sized","status":"True","type":"Ready"}]`,
    'expected write 1 `apply apps/v1 Deployment shop/w`: not sent',
  ]);
});

test('assertFixture fails with each difference on a line of its own', () => {
  assert.doesNotThrow(() => assertFixture(widgets, PASSING));
  assert.throws(
    () => assertFixture(widgets, FAILING),
    (err: Error) => {
      const lines = err.message.split('\n');
      assert.equal(err.name, 'AssertionError');
      assert.equal(lines[0], 'fixture a widget gets its ConfigMap and a Ready condition (fixture text) failed:');
      assert.equal(lines.length, 6);
      assert.equal(lines[5], '  expected write 1 `apply apps/v1 Deployment shop/w`: not sent');
      return true;
    },
  );
});

test("writes are answered with the fixture's rejections, the n-th write to a target with the n-th", () => {
  const rejected = (reason: string, message: string) => `\n      rejected: {reason: ${reason}, message: ${message}}`;
  const fixture = `${WORLD}
expect:
  outcome: requeue-after 1500ms priority 2
  writes:${CREATE}${rejected('AlreadyExists', 'taken')}
    - {verb: merge-patch, apiVersion: v1, kind: ConfigMap, namespace: shop, name: w, body: {data: {size: "3"}}, rejected: {reason: NotFound}}
`;
  const gone = runFixture(widgets, fixture);
  assert.equal(gone.outcome, 'error');
  assert.equal(gone.error, 'retryable: not found:  (404 NotFound)');
  assert.equal(host.get(ConfigMap, 'shop', 'w'), undefined);
  assert.deepEqual(gone.differences, ['outcome: expected `requeue-after 1500ms priority 2`, got `error` (retryable: not found:  (404 NotFound))']);

  const retried = runFixture(widgets, `${PASSING}${READY}`.replace(READY, `${READY}${rejected('Conflict', 'stale')}`));
  assert.deepEqual(retried.differences, []);
  assert.equal(retried.writes.length, 3);
  assert.equal(host.get(Widget, 'shop', 'w')?.status?.conditions?.[0]?.reason, 'Sized');
});

test('a fixture file is read from its path, which names it when it has no name', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wasmop-fixtures-'));
  const file = join(dir, 'gone.yaml');
  writeFileSync(file, 'request: {namespace: shop, name: nobody}\nexpect: {outcome: done}\n');
  const result = assertFixture(widgets, file);
  assert.equal(result.fixture.name, file);
  assert.deepEqual(result.writes, []);
});

test('a malformed fixture is refused with what is wrong and where', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wasmop-fixtures-'));
  const file = join(dir, 'typo.yaml');
  writeFileSync(file, PASSING.replace('status: true', 'stauts: true'));
  assert.throws(
    () => runFixture(widgets, file),
    (err) =>
      err instanceof FixtureError &&
      err.message.startsWith(`fixture ${file}: unknown field \`stauts\` in expect.writes[1], expected one of verb, status,`),
  );
  assert.throws(() => runFixture(widgets, join(dir, 'missing.yaml')), /^FixtureError: reading fixture .*missing\.yaml: ENOENT/);
});

test('the clock reads the time given, in UTC, and is given back afterwards', () => {
  const [RealDate, zone, before] = [Date, process.env.TZ, Date.now()];
  const seen = atTime('2030-05-06T07:08:09.5+02:00', () => [Date.now(), new Date().toISOString(), new Date(0).getTime(), Date(), new Date().getHours()]);
  assert.deepEqual(seen.slice(0, 3), [Date.UTC(2030, 4, 6, 5, 8, 9, 500), '2030-05-06T05:08:09.500Z', 0]);
  assert.match(String(seen[3]), /^Mon May 06 2030 05:08:09 GMT\+0000/);
  assert.equal(seen[4], 5);
  assert.equal(Date, RealDate);
  assert.ok(Date.now() >= before);
  assert.equal(process.env.TZ, zone);
});

/** Relabels the Widget with an update, records an event about it, and requeues after 5 minutes. */
const relabel = defineReconciler({
  name: 'relabel',
  version: '0.1.0',
  primary: Widget,
  permissions: [{ kind: Widget, verbs: ['update', 'status'] }],
  reconcile({ namespace, name }) {
    const widget = cache.get(Widget, namespace, name);
    client.update({ ...widget, metadata: { ...widget.metadata, labels: { seen: 'yes' } } });
    events.normal(widget, 'Seen', `Seen ${namespace}/${name}`);
    return requeueAfter(300_000);
  },
});

const RELABEL = `
objects: [{apiVersion: example.wasmop.dev/v1, kind: Widget, metadata: {namespace: shop, name: w}}]
request: {namespace: shop, name: w}
expect:
  outcome: requeue-after 5m
  writes:
    - {verb: update, apiVersion: example.wasmop.dev/v1, kind: Widget, namespace: shop, name: w, body: {apiVersion: example.wasmop.dev/v1, kind: Widget, metadata: {namespace: shop, name: w, labels: {seen: "yes"}}}}
  events:
    - {type: Normal, reason: Seen, message: Seen shop/w, regarding: {apiVersion: example.wasmop.dev/v1, kind: Widget, namespace: shop, name: w}}
`;

test('events, durations as durations and an object without a resourceVersion all match', () => {
  const result = runFixture(relabel, RELABEL);
  assert.deepEqual(result.differences, []);
  assert.equal(result.outcome, 'requeue-after 300s');
});

test('an event recorded differently or not at all is a difference', () => {
  const target = 'Normal Seen example.wasmop.dev/v1 Widget shop/w';
  const wrong = runFixture(relabel, RELABEL.replace('message: Seen shop/w', 'message: Seen it'));
  assert.deepEqual(wrong.differences, [`event 0 \`${target}\`: message: expected "Seen it", recorded "Seen shop/w"`]);
  const none = runFixture(relabel, RELABEL.replace(/ {2}events:\n.*\n$/, '  events: []\n'));
  assert.deepEqual(none.differences, [`event 0 \`${target}\`: recorded, not expected: "Seen shop/w"`]);
  const other = runFixture(relabel, RELABEL.replace('requeue-after 5m', 'requeue-after 301s'));
  assert.deepEqual(other.differences, ['outcome: expected `requeue-after 301s`, got `requeue-after 300s`']);
});

test('a status update not expected is explained by the status it changes', () => {
  const text = `${WORLD}expect:\n  outcome: requeue-after 1500ms priority 2\n  writes:${CREATE}\n`;
  const result = runFixture(widgets, text);
  const prefix = `write 1 \`${STATUS}\`: `;
  assert.equal(result.differences[0], `${prefix}sent, not expected; against the cached object it changes:`);
  const deleting = defineReconciler({
    name: 'deleting',
    version: '0.1.0',
    primary: Widget,
    permissions: [{ kind: Widget, verbs: ['status', 'delete'] }],
    reconcile({ namespace, name }) {
      const widget = cache.get(Widget, namespace, name);
      client.updateStatus({ ...widget, status: { conditions: [] } });
      client.delete(Widget, namespace, name);
      return done;
    },
  });
  const status = 'write 0 `update-status example.wasmop.dev/v1 Widget shop/w`: ';
  assert.deepEqual(runFixture(deleting, WORLD).differences, [
    `${status}sent, not expected; against the cached object's status it changes:`,
    `${status}/status/conditions from null to []`,
    'write 1 `delete example.wasmop.dev/v1 Widget shop/w`: sent, not expected; it deletes the cached object, at resourceVersion "1"',
  ]);
});

test('a fixture with a typo fails alone, naming its file, and the others still pass', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wasmop-fixtures-'));
  writeFileSync(join(dir, 'a.yaml'), RELABEL.replace('events:', 'evnets:'));
  writeFileSync(join(dir, 'b.yaml'), RELABEL);
  const outcomes = fixtureFiles([dir]).map((file) => {
    try {
      assertFixture(relabel, file);
      return 'passed';
    } catch (err) {
      return (err as Error).message;
    }
  });
  assert.equal(outcomes.length, 2);
  assert.match(outcomes[0]!, /^fixture .*a\.yaml: unknown field `evnets` in expect/);
  assert.equal(outcomes[1], 'passed');
});
