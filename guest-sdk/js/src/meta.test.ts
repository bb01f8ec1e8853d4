import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { Deployment } from './kinds.ts';
import {
  addFinalizer,
  controllerOwnerRef,
  hasFinalizer,
  isControlledBy,
  isDeleting,
  removeFinalizer,
} from './meta.ts';

function stored(): Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', uid: 'uid-1', resourceVersion: '7' },
  };
}

test('controllerOwnerRef points at the owner', () => {
  assert.deepEqual(controllerOwnerRef(stored()), {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    name: 'web',
    uid: 'uid-1',
    controller: true,
    blockOwnerDeletion: true,
  });
});

test('controllerOwnerRef needs a stored owner', () => {
  assert.equal(controllerOwnerRef({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' } }), undefined);
});

test('isControlledBy compares kind and uid', () => {
  const owner = stored();
  const child = { metadata: { ownerReferences: [controllerOwnerRef(owner)!] } };
  assert.equal(isControlledBy({}, owner), false);
  assert.equal(isControlledBy(child, owner), true);
  assert.equal(isControlledBy(child, { ...owner, metadata: { uid: 'uid-2' } }), false);
});

test('addFinalizer is idempotent', () => {
  const obj = stored();
  assert.equal(addFinalizer(obj, 'example.wasmop.dev/cleanup'), true);
  assert.equal(addFinalizer(obj, 'example.wasmop.dev/cleanup'), false);
  assert.deepEqual(obj.metadata?.finalizers, ['example.wasmop.dev/cleanup']);
  assert.equal(hasFinalizer(obj, 'example.wasmop.dev/cleanup'), true);
});

test('removeFinalizer keeps the others', () => {
  const obj = stored();
  obj.metadata!.finalizers = ['a', 'b'];
  assert.equal(removeFinalizer(obj, 'a'), true);
  assert.equal(removeFinalizer(obj, 'a'), false);
  assert.deepEqual(obj.metadata?.finalizers, ['b']);
  assert.equal(removeFinalizer({}, 'a'), false);
});

test('isDeleting looks at the deletionTimestamp', () => {
  assert.equal(isDeleting(stored()), false);
  assert.equal(isDeleting({ metadata: { deletionTimestamp: '2026-01-01T00:00:00Z' } }), true);
});
