/**
 * Objects are plain JS objects, exactly the JSON the apiserver serves; {@link KubeObject} is the
 * shape every kind shares, {@link ObjectKey} names one object.
 */
import type { ObjectMeta } from 'kubernetes-types/meta/v1';

import type { types } from './raw.ts';

/** Any Kubernetes object: apiVersion, kind and standard metadata, plus its own fields. */
export interface KubeObject {
  /** `group/version`, or `version` for the core group. */
  apiVersion?: string;
  /** The object's kind, e.g. `Deployment`. */
  kind?: string;
  /** Standard object metadata. */
  metadata?: ObjectMeta;
}

/** A namespaced (or, with an empty namespace, cluster-scoped) object name. */
export type ObjectKey = types.ObjectKey;

/** One reconcile request: the key of a primary object, which the reconciler reads from the cache. */
export type Request = ObjectKey;

/** The key of an object, from its metadata. */
export function objectKey(obj: KubeObject): ObjectKey {
  return { namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' };
}

/** A key for messages: `namespace/name`, or `name` for cluster-scoped objects. */
export function formatKey(key: ObjectKey): string {
  return key.namespace ? `${key.namespace}/${key.name}` : key.name;
}

/** Parses an object from the host's JSON text. */
export function fromJson<T>(text: string): T {
  return JSON.parse(text) as T;
}

/** Serialises an object to the JSON text the host takes. */
export function toJson(value: unknown): string {
  return JSON.stringify(value);
}
