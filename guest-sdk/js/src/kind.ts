/**
 * Resource kinds: a {@link Kind} names a group, version and kind and carries the TypeScript type
 * of its objects, so that `cache.get(Deployment, ns, name)` returns a typed Deployment.
 */
import type { types } from './raw.ts';
import type { KubeObject } from './object.ts';

/** Group, version and kind of a resource; the core group is the empty string. */
export type Gvk = types.Gvk;

/** A resource kind whose objects have the type `T`. */
export interface Kind<T extends KubeObject = KubeObject> extends Gvk {
  /** Never set: it only carries the object type for the compiler. */
  readonly __object?: T;
}

/** A kind from its `apiVersion` (`v1`, `apps/v1`) and `kind`, e.g. a custom resource's. */
export function defineKind<T extends KubeObject>(apiVersion: string, kind: string): Kind<T> {
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = apiVersion.slice(slash + 1);
  if (!version || !kind) {
    throw new TypeError(`a kind needs an apiVersion and a kind, got '${apiVersion}' '${kind}'`);
  }
  return Object.freeze({ group, version, kind });
}

/** The `apiVersion` string of a kind: `version` for the core group, `group/version` otherwise. */
export function apiVersionOf(gvk: Gvk): string {
  return gvk.group ? `${gvk.group}/${gvk.version}` : gvk.version;
}

/** The kind of an object, from its `apiVersion` and `kind` fields. */
export function kindOf(obj: KubeObject): Gvk {
  if (!obj.apiVersion || !obj.kind) {
    const name = obj.metadata?.name ?? '(unnamed)';
    throw new TypeError(`object ${name} needs apiVersion and kind to say what it is`);
  }
  const { group, version, kind } = defineKind(obj.apiVersion, obj.kind);
  return { group, version, kind };
}

/** The plain WIT record of a kind, without its type marker. */
export function gvk(kind: Gvk): Gvk {
  return { group: kind.group, version: kind.version, kind: kind.kind };
}

/** A kind for messages: `apps/v1/Deployment`. */
export function formatGvk(gvk: Gvk): string {
  return `${apiVersionOf(gvk)}/${gvk.kind}`;
}
