import assert from 'node:assert/strict';
import { test } from 'node:test';

import { jsonEqual } from './equal.ts';
import { apiVersionOf, defineKind, formatGvk, kindOf } from './kind.ts';
import { ConfigMap, Deployment } from './kinds.ts';
import { formatKey } from './object.ts';

test('built-in kinds have their group, version and kind', () => {
  assert.deepEqual({ ...Deployment }, { group: 'apps', version: 'v1', kind: 'Deployment' });
  assert.equal(apiVersionOf(ConfigMap), 'v1');
  assert.equal(formatGvk(Deployment), 'apps/v1/Deployment');
});

test('defineKind splits the apiVersion of a custom resource', () => {
  const webapp = defineKind('example.wasmop.dev/v1alpha1', 'WebApp');
  assert.equal(webapp.group, 'example.wasmop.dev');
  assert.equal(webapp.version, 'v1alpha1');
  assert.throws(() => defineKind('', 'WebApp'), TypeError);
});

test('kindOf reads an object and names one that does not say what it is', () => {
  assert.deepEqual(kindOf({ apiVersion: 'v1', kind: 'ConfigMap' }), { group: '', version: 'v1', kind: 'ConfigMap' });
  assert.throws(() => kindOf({ metadata: { name: 'x' } }), /object x needs apiVersion and kind/);
});

test('keys of cluster-scoped objects have no slash', () => {
  assert.equal(formatKey({ namespace: '', name: 'node-1' }), 'node-1');
  assert.equal(formatKey({ namespace: 'ns', name: 'a' }), 'ns/a');
});

test('jsonEqual treats undefined-valued keys as absent and compares deeply', () => {
  assert.equal(jsonEqual({ a: 1, b: undefined }, { a: 1 }), true);
  assert.equal(jsonEqual({ a: [1, { c: 2 }] }, { a: [1, { c: 2 }] }), true);
  assert.equal(jsonEqual({ a: [1] }, { a: [1, 2] }), false);
  assert.equal(jsonEqual({ a: 1 }, { a: '1' }), false);
  assert.equal(jsonEqual(undefined, {}), false);
});
