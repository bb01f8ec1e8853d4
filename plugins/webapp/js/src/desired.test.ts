import assert from 'node:assert/strict';
import { test } from 'node:test';

import { controllerOwnerRef, type Deployment } from '@wasmop/guest';

import * as desired from './desired.ts';
import type { WebApp } from './resource.ts';

function app(): WebApp {
  return {
    apiVersion: 'example.wasmop.dev/v1alpha1',
    kind: 'WebApp',
    metadata: { name: 'shop', namespace: 'prod', uid: 'uid-1', generation: 3 },
    spec: { image: 'nginx:1.27', replicas: 2, port: 8080 },
  };
}

/** A Deployment as the apiserver returns it: the desired fields plus defaults and status. */
function stored(want: Deployment): Deployment {
  const d = structuredClone(want);
  d.metadata = { ...d.metadata, uid: 'uid-d', labels: { ...d.metadata?.labels, extra: 'x' } };
  d.spec!.revisionHistoryLimit = 10;
  const pod = d.spec!.template.spec!;
  pod.restartPolicy = 'Always';
  pod.containers[0]!.imagePullPolicy = 'IfNotPresent';
  d.status = { readyReplicas: 1 };
  return d;
}

test('the desired objects carry the labels, annotation and controller reference', () => {
  const owner = controllerOwnerRef(app())!;
  const deployment = desired.deployment(app(), owner);
  assert.deepEqual(deployment.metadata, {
    name: 'shop',
    namespace: 'prod',
    labels: { 'app.kubernetes.io/name': 'shop', 'app.kubernetes.io/managed-by': 'wasmop' },
    annotations: { 'example.wasmop.dev/applied-by': 'webapp/0.1.0' },
    ownerReferences: [owner],
  });
  assert.deepEqual(desired.service(app(), owner).spec?.ports, [
    { name: 'http', port: 8080, targetPort: 8080, protocol: 'TCP' },
  ]);
  assert.deepEqual(desired.marker(app()).metadata, {
    name: 'webapp-marker-shop',
    namespace: 'prod',
    labels: { 'example.wasmop.dev/webapp': 'shop' },
  });
});

test('the CRD defaults apply when replicas and port are absent', () => {
  const bare = { ...app(), spec: { image: 'nginx' } };
  const deployment = desired.deployment(bare, controllerOwnerRef(bare)!);
  assert.equal(deployment.spec?.replicas, 1);
  assert.equal(deployment.spec?.template.spec?.containers[0]?.ports?.[0]?.containerPort, 8080);
});

test('a stored Deployment with defaults matches', () => {
  const want = desired.deployment(app(), controllerOwnerRef(app())!);
  assert.equal(desired.deploymentMatches(stored(want), want), true);
});

test('Deployment drift is detected', () => {
  const want = desired.deployment(app(), controllerOwnerRef(app())!);
  const drifts: ((d: Deployment) => void)[] = [
    (d) => (d.spec!.replicas = 5),
    (d) => (d.spec!.template.spec!.containers[0]!.image = 'nginx:old'),
    (d) => delete d.metadata!.ownerReferences,
    (d) => delete d.metadata!.labels!['app.kubernetes.io/managed-by'],
    (d) => (d.spec!.template.spec!.containers[0]!.ports![0]!.containerPort = 80),
    (d) => (d.spec!.template.spec!.containers[0]!.name = 'other'),
  ];
  for (const drift of drifts) {
    const actual = stored(want);
    drift(actual);
    assert.equal(desired.deploymentMatches(actual, want), false, drift.toString());
  }
});

test('Service port changes are detected, allocated fields are not drift', () => {
  const want = desired.service(app(), controllerOwnerRef(app())!);
  const actual = structuredClone(want);
  actual.spec!.clusterIP = '10.0.0.7';
  actual.spec!.ports![0]!.nodePort = undefined;
  assert.equal(desired.serviceMatches(actual, want), true);
  actual.spec!.ports![0]!.port = 80;
  assert.equal(desired.serviceMatches(actual, want), false);
});

test('the status is Ready when all replicas are', () => {
  const progressing = desired.status(app(), 1);
  assert.equal(progressing.observedGeneration, 3);
  assert.equal(progressing.readyReplicas, 1);
  assert.equal(progressing.conditions?.[0]?.status, 'False');
  assert.equal(progressing.conditions?.[0]?.reason, 'Progressing');
  assert.equal(progressing.conditions?.[0]?.message, '1/2 replicas ready');
  assert.equal(progressing.conditions?.[0]?.observedGeneration, 3);
  assert.equal(desired.status(app(), 2).conditions?.[0]?.reason, 'Available');
});

test('a converged status is unchanged, transition time included', () => {
  const converged = { ...app(), status: desired.status(app(), 2) };
  converged.status.conditions![0]!.lastTransitionTime = '2020-01-01T00:00:00Z';
  assert.deepEqual(desired.status(converged, 2), converged.status);
});
