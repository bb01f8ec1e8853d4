import assert from 'node:assert/strict';
import { test } from 'node:test';

import { componentExports } from '../component.ts';
import { defineKind } from '../kind.ts';
import type { KubeObject } from '../object.ts';
import { done } from '../outcome.ts';
import type { webhooks as wit } from '../raw.ts';
import { defineReconciler } from '../reconciler.ts';
import type { AdmissionRequest, Operation } from '../webhooks.ts';
import { admissionReview, buildAdmissionRequest, conversionReview, type AdmissionReview } from './reviews.ts';

interface App extends KubeObject {
  spec?: { replicas?: number; port?: number };
}
const WebApp = defineKind<App>('example.wasmop.dev/v1alpha1', 'WebApp');

function app(replicas: number): App {
  return {
    apiVersion: 'example.wasmop.dev/v1alpha1',
    kind: 'WebApp',
    metadata: { namespace: 'shop', name: 'web' },
    spec: { replicas },
  };
}

const webAppGvk = { group: 'example.wasmop.dev', version: 'v1alpha1', kind: 'WebApp' };
const testUser = { username: 'wasmop-test', uid: '', groups: [] };

test('a request with only an object is a create of its kind, namespace and name', () => {
  const object = app(2);
  const req = buildAdmissionRequest({ object });
  assert.deepEqual(req, {
    uid: 'wasmop-test',
    kind: webAppGvk,
    namespace: 'shop',
    name: 'web',
    operation: 'create',
    object: app(2),
    oldObject: undefined,
    userInfo: testUser,
    dryRun: false,
  });
  assert.notEqual(req.object, object, 'the validator gets a copy, as over the wire');
  const typed: number | undefined = req.object?.spec?.replicas;
  assert.equal(typed, 2);
});

test('both objects make an update, the old object alone a delete', () => {
  const update = buildAdmissionRequest({ object: app(3), oldObject: app(2) });
  assert.equal(update.operation, 'update');
  assert.deepEqual([update.object, update.oldObject], [app(3), app(2)]);
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' } };
  const removal = buildAdmissionRequest({ oldObject: cm });
  assert.equal(removal.operation, 'delete');
  assert.equal(removal.object, undefined);
  assert.deepEqual(removal.kind, { group: '', version: 'v1', kind: 'ConfigMap' }, 'the core group is empty');
  assert.deepEqual([removal.namespace, removal.name], ['', 'settings']);
  const bare = buildAdmissionRequest({ object: {} });
  assert.deepEqual([bare.kind, bare.namespace, bare.name], [{ group: '', version: '', kind: '' }, '', '']);
});

test('what a request is given overrides the defaults', () => {
  const req = buildAdmissionRequest({
    object: app(1),
    operation: 'connect',
    user: 'alice',
    groups: ['system:masters'],
    dryRun: true,
    uid: 'u-1',
  });
  assert.equal(req.operation, 'connect');
  assert.deepEqual(req.userInfo, { username: 'alice', uid: '', groups: ['system:masters'] });
  assert.deepEqual([req.dryRun, req.uid], [true, 'u-1']);
});

test('a request without an object is refused', () => {
  assert.throws(() => buildAdmissionRequest({}), {
    name: 'Error',
    message: 'an admission request needs its object or oldObject',
  });
  assert.throws(() => buildAdmissionRequest({ operation: 'delete', user: 'alice' }), /needs its object or oldObject/);
});

test('the AdmissionReview is the one the apiserver posts', () => {
  assert.deepEqual(admissionReview(buildAdmissionRequest({ object: app(75) })), {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'wasmop-test',
      kind: webAppGvk,
      resource: { group: 'example.wasmop.dev', version: 'v1alpha1', resource: 'webapps' },
      namespace: 'shop',
      name: 'web',
      operation: 'CREATE',
      userInfo: { username: 'wasmop-test' },
      object: app(75),
      dryRun: false,
    },
  });
  const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' } };
  const removal = admissionReview(buildAdmissionRequest({ oldObject: cm, groups: ['ops'], dryRun: true }));
  assert.deepEqual(removal.request, {
    uid: 'wasmop-test',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    name: 'settings',
    operation: 'DELETE',
    userInfo: { username: 'wasmop-test', groups: ['ops'] },
    oldObject: cm,
    dryRun: true,
  });
  assert.deepEqual(Object.keys(removal.request), ['uid', 'kind', 'resource', 'name', 'operation', 'userInfo', 'oldObject', 'dryRun']);
  assert.equal(admissionReview(buildAdmissionRequest({ object: app(1), oldObject: app(2) })).request.operation, 'UPDATE');
  const byHand: AdmissionRequest = { ...buildAdmissionRequest({ object: app(1) }), userInfo: { username: 'bob', uid: '7', groups: [] } };
  assert.deepEqual(admissionReview(byHand).request.userInfo, { username: 'bob', uid: '7' });
});

/** The WIT record the host hands the plugin for `review`, read as host/src/webhook/review.rs reads it. */
function hostRecord({ request }: AdmissionReview): wit.AdmissionRequest {
  const text = (obj: KubeObject | undefined) => (obj === undefined ? undefined : JSON.stringify(obj));
  return {
    uid: request.uid,
    kind: request.kind,
    namespace: request.namespace ?? '',
    name: request.name,
    operation: request.operation.toLowerCase() as Operation,
    object: text(request.object),
    oldObject: text(request.oldObject),
    userInfo: { username: request.userInfo.username, uid: request.userInfo.uid ?? '', groups: request.userInfo.groups ?? [] },
    dryRun: request.dryRun,
  };
}

test("a built request is the one the SDK's dispatch hands a validator for its review", () => {
  const seen: AdmissionRequest[] = [];
  const hooks = componentExports(
    defineReconciler({
      name: 'probe',
      version: '1.0.0',
      primary: WebApp,
      reconcile: () => done,
      webhooks: { validate: { rules: [{ kind: WebApp }], validator: (req) => void seen.push(req) } },
    }),
  ).webhooks;
  const built = [
    buildAdmissionRequest({ object: app(3) }),
    buildAdmissionRequest({ object: app(3), oldObject: app(2), user: 'bob', groups: ['a', 'b'], dryRun: true }),
    buildAdmissionRequest({ oldObject: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } } }),
  ];
  for (const req of built) {
    assert.deepEqual(hooks.validate(hostRecord(admissionReview(req))), { tag: 'allowed', val: [] });
  }
  assert.deepEqual(seen, built);
});

test('the ConversionReview carries the desired version and copies of the objects', () => {
  const objects = [app(2), app(3)];
  const review = conversionReview('example.wasmop.dev/v1beta1', objects);
  assert.deepEqual(review, {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid: 'wasmop-test', desiredAPIVersion: 'example.wasmop.dev/v1beta1', objects: [app(2), app(3)] },
  });
  assert.notEqual(review.request.objects[0], objects[0]);
  assert.deepEqual(conversionReview('v1', []).request.objects, []);
});
