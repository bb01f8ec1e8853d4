/**
 * What a `WebApp` should own — its Deployment, Service, marker ConfigMap and status — and
 * whether what exists already matches, so that a converged WebApp causes no writes.
 */
import {
  condition,
  controllerOf,
  jsonEqual,
  setCondition,
  type ConfigMap,
  type Deployment,
  type ObjectMeta,
  type OwnerReference,
  type Service,
} from '@wasmop/guest';

import pkg from '../package.json' with { type: 'json' };
import { specOf, type WebApp, type WebAppStatus } from './resource.ts';

/** The label naming the WebApp; the Deployment selects its pods by it. */
export const NAME_LABEL = 'app.kubernetes.io/name';
/** The label saying who manages the owned objects. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** The label on the marker ConfigMap naming its WebApp. */
export const MARKER_LABEL = 'example.wasmop.dev/webapp';
/** The name of the web container. */
export const CONTAINER = 'web';
/** The annotation naming the plugin version that last applied an owned object. */
export const APPLIED_BY_ANNOTATION = 'example.wasmop.dev/applied-by';

type Labels = Record<string, string>;

/** The name of the external marker ConfigMap of the WebApp `name`. */
export function markerName(name: string): string {
  return `webapp-marker-${name}`;
}

/** The marker ConfigMap: external state the finalizer cleans up, so it has no owner reference. */
export function marker(app: WebApp): ConfigMap {
  const name = app.metadata?.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: markerName(name),
      namespace: app.metadata?.namespace,
      labels: { [MARKER_LABEL]: name },
    },
  };
}

function selector(app: WebApp): Labels {
  return { [NAME_LABEL]: app.metadata?.name ?? '' };
}

function ownedMetadata(app: WebApp, owner: OwnerReference): ObjectMeta {
  return {
    name: app.metadata?.name,
    namespace: app.metadata?.namespace,
    labels: { ...selector(app), [MANAGED_BY_LABEL]: 'wasmop' },
    annotations: { [APPLIED_BY_ANNOTATION]: `webapp/${pkg.version}` },
    ownerReferences: [owner],
  };
}

/** The Deployment the WebApp asks for, controlled by it through `owner`. */
export function deployment(app: WebApp, owner: OwnerReference): Deployment {
  const { image, replicas, port } = specOf(app);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: ownedMetadata(app, owner),
    spec: {
      replicas,
      selector: { matchLabels: selector(app) },
      template: {
        metadata: { labels: selector(app) },
        spec: {
          containers: [
            {
              name: CONTAINER,
              image,
              ports: [{ name: 'http', containerPort: port, protocol: 'TCP' }],
            },
          ],
        },
      },
    },
  };
}

/** The ClusterIP Service the WebApp asks for, controlled by it through `owner`. */
export function service(app: WebApp, owner: OwnerReference): Service {
  const { port } = specOf(app);
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: ownedMetadata(app, owner),
    spec: {
      type: 'ClusterIP',
      selector: selector(app),
      ports: [{ name: 'http', port, targetPort: port, protocol: 'TCP' }],
    },
  };
}

/** Whether every entry of `desired` is in `actual`. */
function contains(actual: Labels | undefined, desired: Labels | undefined): boolean {
  return Object.entries(desired ?? {}).every(([key, value]) => actual?.[key] === value);
}

/** Whether `actual` has every label and annotation `desired` sets. */
function hasMetadata(actual: ObjectMeta | undefined, desired: ObjectMeta | undefined): boolean {
  return (
    contains(actual?.labels, desired?.labels) &&
    contains(actual?.annotations, desired?.annotations)
  );
}

function sameController(actual: { metadata?: ObjectMeta }, desired: { metadata?: ObjectMeta }): boolean {
  return controllerOf(actual)?.uid === controllerOf(desired)?.uid;
}

function webContainer(deployment: Deployment) {
  return deployment.spec?.template.spec?.containers.find((c) => c.name === CONTAINER);
}

/** Whether the existing Deployment has every field the desired one sets. */
export function deploymentMatches(actual: Deployment, desired: Deployment): boolean {
  const [a, d] = [actual.spec, desired.spec];
  const [ac, dc] = [webContainer(actual), webContainer(desired)];
  return (
    a !== undefined &&
    d !== undefined &&
    hasMetadata(actual.metadata, desired.metadata) &&
    sameController(actual, desired) &&
    a.replicas === d.replicas &&
    jsonEqual(a.selector, d.selector) &&
    hasMetadata(a.template.metadata, d.template.metadata) &&
    ac !== undefined &&
    dc !== undefined &&
    ac.image === dc.image &&
    jsonEqual(ac.ports, dc.ports)
  );
}

/** Whether the existing Service has every field the desired one sets. */
export function serviceMatches(actual: Service, desired: Service): boolean {
  const [a, d] = [actual.spec, desired.spec];
  if (!a || !d) {
    return false;
  }
  const ports = (spec: typeof a) =>
    (spec.ports ?? []).map((p) => [p.name, p.port, p.targetPort, p.protocol]);
  return (
    hasMetadata(actual.metadata, desired.metadata) &&
    sameController(actual, desired) &&
    a.type === d.type &&
    jsonEqual(a.selector, d.selector) &&
    jsonEqual(ports(a), ports(d))
  );
}

/**
 * The status the WebApp should have given its Deployment's ready replicas; conditions keep their
 * lastTransitionTime while their status holds.
 */
export function status(app: WebApp, readyReplicas: number): WebAppStatus {
  const { replicas } = specOf(app);
  const generation = app.metadata?.generation;
  const current = app.status;
  const conditions = [...(current?.conditions ?? [])];
  const available = readyReplicas >= replicas;
  const reason = available ? 'Available' : 'Progressing';
  const message = `${readyReplicas}/${replicas} replicas ready`;
  setCondition(conditions, {
    ...condition('Ready', available, reason, message),
    observedGeneration: generation,
  });
  return { ...current, observedGeneration: generation, readyReplicas, conditions };
}
