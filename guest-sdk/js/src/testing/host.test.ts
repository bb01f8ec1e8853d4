import assert from 'node:assert/strict';
import { test } from 'node:test';

import { cache } from '../cache.ts';
import { client } from '../client.ts';
import { forwardConsole } from '../console.ts';
import { Conflict, Forbidden, Invalid, NotFound, optional } from '../errors.ts';
import { events } from '../events.ts';
import { defineKind } from '../kind.ts';
import { ConfigMap, Secret } from '../kinds.ts';
import { log } from '../log.ts';
import type { KubeObject } from '../object.ts';
import { defineReconciler } from '../reconciler.ts';
import { host } from './host.ts';

interface Widget extends KubeObject {
  spec?: { size?: number };
}

const Widget = defineKind<Widget>('example.wasmop.dev/v1', 'Widget');

const reconciler = defineReconciler({
  name: 'probe',
  version: '0.1.0',
  primary: ConfigMap,
  permissions: [
    { kind: ConfigMap, verbs: ['create', 'update', 'patch', 'delete', 'status'] },
    { kind: Widget, verbs: ['get', 'create', 'update'] },
  ],
  indexes: [{ name: 'by-app', kind: ConfigMap, field: 'data.app' }],
  reconcile: () => {},
});

function configMap(name: string, labels: Record<string, string> = {}): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns', labels }, data: { app: name } };
}

test('the cache reads what the client wrote, and lists by labels and index', () => {
  host.reset(reconciler);
  client.create(configMap('a', { tier: 'web' }));
  host.put(configMap('b', { tier: 'db' }));
  assert.equal(cache.get(ConfigMap, 'ns', 'a').data?.app, 'a');
  assert.deepEqual(cache.list(ConfigMap, { labelSelector: 'tier=web' }).map((c) => c.metadata?.name), ['a']);
  assert.deepEqual(cache.list(ConfigMap, { namespace: 'other' }), []);
  assert.deepEqual(cache.listByIndex(ConfigMap, 'by-app', 'b').map((c) => c.metadata?.name), ['b']);
  assert.throws(() => cache.get(ConfigMap, 'ns', 'zzz'), NotFound);
});

test('an update with a stale resourceVersion conflicts', () => {
  host.reset(reconciler);
  const created = client.create(configMap('a'));
  client.update({ ...created, data: { app: 'v2' } });
  assert.throws(() => client.update({ ...created, data: { app: 'v3' } }), Conflict);
  assert.equal(host.get(ConfigMap, 'ns', 'a')?.data?.app, 'v2');
});

test('writes outside the declared permissions are forbidden by them', () => {
  host.reset(reconciler);
  const secret: Secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'ns' } };
  assert.throws(
    () => client.create(secret),
    (e) => e instanceof Forbidden && e.deniedBy === 'declared-permissions',
  );
  assert.throws(() => cache.get(Secret, 'ns', 's'), Forbidden);
});

test('delete waits for finalizers, and merge and apply patches merge', () => {
  host.reset(reconciler);
  host.put({ ...configMap('a'), metadata: { name: 'a', namespace: 'ns', finalizers: ['f'] } });
  client.delete(ConfigMap, 'ns', 'a');
  const deleting = cache.get(ConfigMap, 'ns', 'a');
  assert.ok(deleting.metadata?.deletionTimestamp);
  client.patch(ConfigMap, 'ns', 'a', { metadata: { finalizers: null } });
  assert.equal(optional(() => cache.get(ConfigMap, 'ns', 'a')), undefined);
  client.apply({ ...configMap('b'), data: { x: '1' } }, { force: true });
  client.apply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b', namespace: 'ns' }, data: { y: '2' } });
  assert.deepEqual(host.get(ConfigMap, 'ns', 'b')?.data, { x: '1', y: '2' });
  assert.deepEqual(host.writes.map((w) => w.call), ['delete', 'merge', 'apply', 'apply']);
});

test('failNext makes the next write of that call fail', () => {
  host.reset(reconciler);
  host.failNext('create', { tag: 'unavailable', val: { code: 503, reason: 'ServiceUnavailable', message: 'down' } });
  assert.throws(() => client.create(configMap('a')), /unavailable: down/);
  client.create(configMap('a'));
});

test('events, logs and console lines reach the host', () => {
  host.reset(reconciler);
  events.warning(configMap('a'), 'Broken', 'it broke');
  log.info('hello', { n: 3, who: 'me' });
  forwardConsole();
  console.error('bad', { code: 1 });
  assert.deepEqual(host.events, [
    { kind: 'v1/ConfigMap', gvk: { group: '', version: 'v1', kind: 'ConfigMap' }, namespace: 'ns', name: 'a', type: 'warning', reason: 'Broken', message: 'it broke' },
  ]);
  assert.deepEqual(host.logs, [
    { level: 'info', message: 'hello', fields: { n: '3', who: 'me' } },
    { level: 'error', message: 'bad {"code":1}', fields: {} },
  ]);
});

test('every write sent is recorded as fixtures state it, a failed one too', () => {
  host.reset(reconciler);
  const a = client.update({ ...client.create(configMap('a')), data: { app: 'v2' } });
  client.updateStatus({ ...a, status: { ready: true } } as ConfigMap);
  client.jsonPatch(ConfigMap, 'ns', 'a', [{ op: 'add', path: '/data/x', value: '1' }]);
  client.apply(configMap('b'), { force: true });
  client.applyStatus({ ...configMap('b'), status: { n: 1 } } as ConfigMap);
  client.patchStatus(ConfigMap, 'ns', 'b', { status: { n: 2 } });
  host.failNext('delete', { tag: 'conflict', val: { code: 409, reason: 'Conflict', message: 'stale' } });
  assert.throws(() => client.delete(ConfigMap, 'ns', 'a', { uid: 'u', propagation: 'orphan' }), Conflict);
  client.delete(ConfigMap, 'ns', 'b');
  assert.deepEqual(
    host.sent.map((w) => [w.verb, w.status, w.force, w.name]),
    [
      ['create', false, false, 'a'],
      ['update', false, false, 'a'],
      ['update-status', false, false, 'a'],
      ['json-patch', false, false, 'a'],
      ['apply', false, true, 'b'],
      ['apply', true, false, 'b'],
      ['merge-patch', true, false, 'b'],
      ['delete', false, false, 'a'],
      ['delete', false, false, 'b'],
    ],
  );
  assert.deepEqual(host.sent[3]?.body, [{ op: 'add', path: '/data/x', value: '1' }]);
  assert.deepEqual(host.sent[7]?.body, { uid: 'u', propagationPolicy: 'Orphan' });
  assert.equal(host.sent[8]?.body, null);
  assert.equal(host.writes.length, 8);
});

test('JSON patches apply in order; one that fails is invalid and changes nothing', () => {
  host.reset(reconciler);
  client.create({ ...configMap('a'), metadata: { name: 'a', namespace: 'ns', finalizers: ['x'] } });
  const patched = client.jsonPatch(ConfigMap, 'ns', 'a', [
    { op: 'add', path: '/metadata/finalizers/-', value: 'z' },
    { op: 'add', path: '/metadata/finalizers/1', value: 'y' },
    { op: 'copy', from: '/data/app', path: '/data/copy' },
    { op: 'move', from: '/data/app', path: '/data/moved' },
    { op: 'replace', path: '/data/copy', value: 'replaced' },
    { op: 'remove', path: '/metadata/finalizers/0' },
    { op: 'test', path: '/data/moved', value: 'a' },
  ]);
  assert.deepEqual(patched.metadata?.finalizers, ['y', 'z']);
  assert.deepEqual(patched.data, { copy: 'replaced', moved: 'a' });
  const failing = [
    { op: 'add', path: '/data/late', value: '1' },
    { op: 'test', path: '/data/moved', value: 'b' },
  ] as const;
  assert.throws(() => client.jsonPatch(ConfigMap, 'ns', 'a', [...failing]), Invalid);
  assert.throws(() => client.jsonPatch(ConfigMap, 'ns', 'a', [{ op: 'remove', path: '/data/nothing' }]), Invalid);
  assert.deepEqual(host.get(ConfigMap, 'ns', 'a')?.data, { copy: 'replaced', moved: 'a' });
});

test('only an object with a spec has a generation, as the apiserver gives, and a change of its spec bumps it', () => {
  host.reset(reconciler);
  const widget: Widget = { apiVersion: 'example.wasmop.dev/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'ns' }, spec: { size: 1 } };
  const counted = { ...configMap('b'), metadata: { name: 'b', namespace: 'ns', generation: 4 } };
  [configMap('a'), widget, counted].forEach((obj) => host.put(obj));
  assert.equal(host.get(ConfigMap, 'ns', 'a')?.metadata?.generation, undefined);
  assert.equal(host.get(Widget, 'ns', 'w')?.metadata?.generation, 1);
  const a = client.update({ ...cache.get(ConfigMap, 'ns', 'a'), data: { app: 'v2' } });
  assert.equal(a.metadata?.generation, undefined);
  assert.equal(client.create(configMap('c')).metadata?.generation, undefined);
  assert.equal(client.update({ ...cache.get(ConfigMap, 'ns', 'b'), data: { app: 'v2' } }).metadata?.generation, 5);
  const w = cache.get(Widget, 'ns', 'w');
  const labelled = client.update({ ...w, metadata: { ...w.metadata, labels: { tier: 'web' } } });
  assert.equal(labelled.metadata?.generation, 1);
  assert.equal(client.update({ ...labelled, spec: { size: 2 } }).metadata?.generation, 2);
  assert.equal(client.create<Widget>({ ...widget, metadata: { name: 'v', namespace: 'ns' } }).metadata?.generation, 1);
});
