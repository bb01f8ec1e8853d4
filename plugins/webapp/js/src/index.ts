/**
 * The `webapp` plugin: each `WebApp` (`example.wasmop.dev/v1alpha1`) becomes a Deployment and a
 * ClusterIP Service it controls, plus an external marker ConfigMap that its finalizer deletes.
 * Its status reports the Deployment's ready replicas and a `Ready` condition. A converged WebApp
 * is reconciled without a single write.
 */
import {
  AlreadyExists,
  ConfigMap,
  Deployment,
  Service,
  Terminal,
  addFinalizer,
  cache,
  client,
  controllerOwnerRef,
  defineReconciler,
  done,
  events,
  formatKey,
  hasFinalizer,
  isDeleting,
  jsonEqual,
  log,
  objectKey,
  optional,
  removeFinalizer,
} from '@wasmop/guest';

import pkg from '../package.json' with { type: 'json' };
import { webhooks } from './admission.ts';
import * as desired from './desired.ts';
import { WebApp } from './resource.ts';

/** The finalizer that keeps a WebApp until its marker ConfigMap is gone. */
export const FINALIZER = 'example.wasmop.dev/cleanup';

/** Deletes the marker and releases the WebApp by removing the finalizer. */
function finalize(app: WebApp): void {
  if (!hasFinalizer(app, FINALIZER)) {
    return;
  }
  const key = objectKey(app);
  optional(() => client.delete(ConfigMap, key.namespace, desired.markerName(key.name)));
  removeFinalizer(app, FINALIZER);
  client.update(app);
  log.info(`released WebApp ${formatKey(key)}`);
}

/** Adds the finalizer with an update guarded by the resourceVersion the WebApp was read at. */
function ensureFinalizer(app: WebApp): WebApp {
  return addFinalizer(app, FINALIZER) ? client.update(app) : app;
}

function ensureMarker(app: WebApp): void {
  const marker = desired.marker(app);
  const { namespace, name } = objectKey(marker);
  if (optional(() => cache.get(ConfigMap, namespace, name))) {
    return;
  }
  try {
    client.create(marker);
  } catch (err) {
    if (!(err instanceof AlreadyExists)) {
      throw err;
    }
  }
}

/** Applies the Deployment when it is missing or drifted; returns the Deployment as it stands. */
function ensureDeployment(app: WebApp, want: Deployment): Deployment {
  const key = objectKey(want);
  const current = optional(() => cache.get(Deployment, key.namespace, key.name));
  if (current && desired.deploymentMatches(current, want)) {
    return current;
  }
  const applied = client.apply(want, { force: true });
  if (!current) {
    events.normal(app, 'Created', `Created Deployment ${formatKey(key)}`);
  }
  return applied;
}

/** Applies the Service when it is missing or drifted. */
function ensureService(want: Service): void {
  const key = objectKey(want);
  const current = optional(() => cache.get(Service, key.namespace, key.name));
  if (!current || !desired.serviceMatches(current, want)) {
    client.apply(want, { force: true });
  }
}

/** The `webapp` reconciler. */
export default defineReconciler({
  name: 'webapp',
  version: pkg.version,
  primary: WebApp,
  owns: [Deployment, Service],
  permissions: [
    { kind: Deployment, verbs: ['create', 'update', 'patch', 'delete'] },
    { kind: Service, verbs: ['create', 'update', 'patch', 'delete'] },
    { kind: WebApp, verbs: ['update', 'patch', 'status'] },
    { kind: ConfigMap, verbs: ['get', 'create', 'delete'] },
  ],
  maxConcurrentReconciles: 4,
  reconcileTimeoutMs: 10_000,
  webhooks,

  reconcile({ namespace, name }) {
    const found = optional(() => cache.get(WebApp, namespace, name));
    if (!found) {
      return done;
    }
    if (isDeleting(found)) {
      finalize(found);
      return done;
    }
    const app = ensureFinalizer(found);
    ensureMarker(app);
    const owner = controllerOwnerRef(app);
    if (!owner) {
      throw new Terminal(`WebApp ${formatKey({ namespace, name })} has no uid`);
    }
    const deployment = ensureDeployment(app, desired.deployment(app, owner));
    ensureService(desired.service(app, owner));
    const status = desired.status(app, deployment.status?.readyReplicas ?? 0);
    if (!jsonEqual(app.status, status)) {
      client.patchStatus(WebApp, namespace, name, { status });
    }
    return done;
  },
});
