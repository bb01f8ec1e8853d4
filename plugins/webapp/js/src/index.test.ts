import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ConfigMap, Deployment, Service } from '@wasmop/guest';
import { componentExports, host } from '@wasmop/guest/testing';

import webapp, { FINALIZER } from './index.ts';
import { WebApp } from './resource.ts';

const request = { namespace: 'prod', name: 'shop' };

function create(): WebApp {
  host.reset(webapp);
  return host.put<WebApp>({
    apiVersion: 'example.wasmop.dev/v1alpha1',
    kind: 'WebApp',
    metadata: { name: 'shop', namespace: 'prod' },
    spec: { image: 'nginx:1.27', replicas: 2, port: 8080 },
  });
}

test('the registration matches the Rust webapp', () => {
  const reg = webapp.registration;
  assert.equal(reg.name, 'webapp');
  assert.equal(reg.version, '0.1.0');
  assert.deepEqual(reg.owns.map((k) => k.kind), ['Deployment', 'Service']);
  assert.deepEqual(
    reg.permissions.map((p) => [p.kind.kind, p.verbs]),
    [
      ['Deployment', ['create', 'update', 'patch', 'delete']],
      ['Service', ['create', 'update', 'patch', 'delete']],
      ['WebApp', ['update', 'patch', 'status']],
      ['ConfigMap', ['get', 'create', 'delete']],
    ],
  );
  assert.equal(reg.maxConcurrentReconciles, 4);
  assert.equal(reg.reconcileTimeout, 10_000n);
});

test('a new WebApp gets its finalizer, marker, Deployment, Service, event and status', () => {
  create();
  webapp.reconcile(request);
  assert.deepEqual(
    host.writes.map((w) => `${w.call} ${w.kind}`),
    [
      'update example.wasmop.dev/v1alpha1/WebApp',
      'create v1/ConfigMap',
      'apply apps/v1/Deployment',
      'apply v1/Service',
      'patch-status example.wasmop.dev/v1alpha1/WebApp',
    ],
  );
  const app = host.get(WebApp, 'prod', 'shop')!;
  assert.deepEqual(app.metadata?.finalizers, [FINALIZER]);
  assert.equal(app.status?.conditions?.[0]?.message, '0/2 replicas ready');
  assert.equal(host.get(Deployment, 'prod', 'shop')?.metadata?.ownerReferences?.[0]?.uid, app.metadata?.uid);
  assert.ok(host.get(Service, 'prod', 'shop'));
  assert.ok(host.get(ConfigMap, 'prod', 'webapp-marker-shop'));
  assert.deepEqual(host.events.map((e) => `${e.reason}: ${e.message}`), ['Created: Created Deployment prod/shop']);
});

test('a converged WebApp is reconciled without a write', () => {
  create();
  webapp.reconcile(request);
  host.writes.length = 0;
  webapp.reconcile(request);
  assert.deepEqual(host.writes, []);
});

test('scaling re-applies the Deployment and readiness updates the status', () => {
  create();
  webapp.reconcile(request);
  const app = host.get(WebApp, 'prod', 'shop')!;
  host.put({ ...app, spec: { ...app.spec, replicas: 3 } });
  const deployment = host.get(Deployment, 'prod', 'shop')!;
  host.put({ ...deployment, status: { readyReplicas: 3 } });
  host.writes.length = 0;
  webapp.reconcile(request);
  assert.deepEqual(host.writes.map((w) => w.call), ['apply', 'patch-status']);
  assert.equal(host.get(Deployment, 'prod', 'shop')?.spec?.replicas, 3);
  const ready = host.get(WebApp, 'prod', 'shop')!.status!;
  assert.equal(ready.conditions?.[0]?.reason, 'Available');
  assert.equal(ready.conditions?.[0]?.message, '3/3 replicas ready');
});

test('a conflict on the finalizer update is a retryable reconcile error', () => {
  create();
  host.failNext('update', { tag: 'conflict', val: { code: 409, reason: 'Conflict', message: 'modified' } });
  const exports = componentExports(webapp);
  assert.throws(() => exports.reconcile(request), (e) => {
    assert.deepEqual(e, { tag: 'retryable', val: 'conflict: modified (409 Conflict)' });
    return true;
  });
  assert.deepEqual(host.writes, []);
});

test('deleting a WebApp deletes the marker, then releases the finalizer', () => {
  create();
  webapp.reconcile(request);
  const app = host.get(WebApp, 'prod', 'shop')!;
  host.put({ ...app, metadata: { ...app.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });
  host.writes.length = 0;
  webapp.reconcile(request);
  assert.deepEqual(host.writes.map((w) => `${w.call} ${w.kind}`), [
    'delete v1/ConfigMap',
    'update example.wasmop.dev/v1alpha1/WebApp',
  ]);
  assert.equal(host.get(WebApp, 'prod', 'shop'), undefined);
  assert.equal(host.get(ConfigMap, 'prod', 'webapp-marker-shop'), undefined);
  assert.deepEqual(host.logs.map((l) => l.message), ['released WebApp prod/shop']);
});

test('a missing WebApp is done without a write', () => {
  host.reset(webapp);
  webapp.reconcile(request);
  assert.deepEqual(host.writes, []);
});
