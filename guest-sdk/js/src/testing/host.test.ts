import assert from 'node:assert/strict';
import { test } from 'node:test';

import { cache } from '../cache.ts';
import { client } from '../client.ts';
import { forwardConsole } from '../console.ts';
import { Conflict, Forbidden, NotFound, optional } from '../errors.ts';
import { events } from '../events.ts';
import { ConfigMap, Secret } from '../kinds.ts';
import { log } from '../log.ts';
import { defineReconciler } from '../reconciler.ts';
import { host } from './host.ts';

const reconciler = defineReconciler({
  name: 'probe',
  version: '0.1.0',
  primary: ConfigMap,
  permissions: [{ kind: ConfigMap, verbs: ['create', 'update', 'patch', 'delete'] }],
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
    { kind: 'v1/ConfigMap', namespace: 'ns', name: 'a', type: 'warning', reason: 'Broken', message: 'it broke' },
  ]);
  assert.deepEqual(host.logs, [
    { level: 'info', message: 'hello', fields: { n: '3', who: 'me' } },
    { level: 'error', message: 'bad {"code":1}', fields: {} },
  ]);
});
