import assert from 'node:assert/strict';
import { test } from 'node:test';

import { componentExports } from './component.ts';
import { NotFound } from './errors.ts';
import { defineKind } from './kind.ts';
import { ConfigMap, Deployment, Namespace } from './kinds.ts';
import { done, requeueAfter } from './outcome.ts';
import { Terminal } from './reconcile-error.ts';
import { defineReconciler, type ReconcilerOptions } from './reconciler.ts';

const options: ReconcilerOptions<ConfigMap> = {
  name: 'sync',
  version: '1.0.0',
  primary: ConfigMap,
  owns: [Deployment],
  watches: [{ kind: Namespace, mapping: 'guest' }, { kind: Deployment, mapping: { label: 'app' } }],
  permissions: [
    { kind: ConfigMap, verbs: ['create', 'delete'] },
    { kind: Deployment, verbs: ['patch'], namespaces: ['shop'] },
  ],
  maxConcurrentReconciles: 0,
  reconcileTimeoutMs: 1500,
  reconcile: () => done,
};

test('the registration fills the WIT record', () => {
  const reg = defineReconciler(options).registration;
  assert.deepEqual(reg.primary, { group: '', version: 'v1', kind: 'ConfigMap' });
  assert.deepEqual(reg.owns, [{ group: 'apps', version: 'v1', kind: 'Deployment' }]);
  assert.deepEqual(reg.watches[0]?.mapping, { tag: 'guest' });
  assert.deepEqual(reg.watches[1]?.mapping, { tag: 'label', val: 'app' });
  assert.deepEqual(reg.permissions[0]?.namespaces, []);
  assert.deepEqual(reg.permissions[1]?.namespaces, ['shop']);
  assert.equal(reg.maxConcurrentReconciles, 1);
  assert.equal(reg.reconcileTimeout, 1500n);
  assert.deepEqual(reg.predicates, []);
  assert.deepEqual(reg.indexes, []);
});

test('no timeout leaves the host default', () => {
  const reg = defineReconciler({ ...options, reconcileTimeoutMs: undefined }).registration;
  assert.equal(reg.reconcileTimeout, undefined);
});

test('a bad name or timeout is refused when the plugin is defined', () => {
  assert.throws(() => defineReconciler({ ...options, name: 'My_Plugin' }), /lowercase letters/);
  assert.throws(() => defineReconciler({ ...options, reconcileTimeoutMs: 0 }), /above 0/);
});

test('returning nothing is done, and a Promise is refused', () => {
  assert.deepEqual(defineReconciler({ ...options, reconcile: () => {} }).reconcile({ namespace: 'a', name: 'b' }), done);
  const asyncReconciler = defineReconciler({ ...options, reconcile: (async () => done) as never });
  assert.throws(() => asyncReconciler.reconcile({ namespace: 'a', name: 'b' }), /must be synchronous/);
});

test('component exports return WIT outcomes and throw WIT reconcile errors', () => {
  const requests: string[] = [];
  const exports = componentExports(
    defineReconciler({
      ...options,
      reconcile({ name }) {
        requests.push(name);
        if (name === 'terminal') throw new Terminal('bad spec');
        if (name === 'missing') throw new NotFound({ code: 404, reason: 'NotFound', message: 'gone' });
        return requeueAfter(250);
      },
      map: (_kind, obj) => [{ namespace: 'shop', name: obj.metadata?.name ?? '' }],
    }),
  );
  assert.equal(exports.describe().name, 'sync');
  assert.deepEqual(exports.reconcile({ namespace: 'shop', name: 'later' }), {
    tag: 'requeue-after',
    val: { after: 250n, priority: undefined },
  });
  assert.throws(() => exports.reconcile({ namespace: 'shop', name: 'terminal' }), (e) => {
    assert.deepEqual(e, { tag: 'terminal', val: 'bad spec' });
    return true;
  });
  assert.throws(() => exports.reconcile({ namespace: 'shop', name: 'missing' }), (e) => {
    assert.deepEqual(e, { tag: 'retryable', val: 'not found: gone (404 NotFound)' });
    return true;
  });
  const kind = defineKind('v1', 'Namespace');
  assert.deepEqual(exports.map(kind, JSON.stringify({ metadata: { name: 'ns1' } })), [{ namespace: 'shop', name: 'ns1' }]);
  assert.deepEqual(requests, ['later', 'terminal', 'missing']);
});
