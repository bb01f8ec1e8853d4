/**
 * Typed writes to the apiserver. The host checks every call against the plugin's declared
 * permissions; successful writes return the object as the apiserver stored it. Failures throw a
 * {@link WasmopError} subclass, e.g. {@link Conflict} when a resourceVersion is stale.
 */
import { callHost } from './errors.ts';
import { gvk, kindOf, type Kind } from './kind.ts';
import { fromJson, objectKey, toJson, type KubeObject } from './object.ts';
import * as raw from './raw.ts';

/** What happens to an object's dependents when it is deleted. */
export type Propagation = 'background' | 'foreground' | 'orphan';

/** Options of {@link client.delete}. */
export interface DeleteOptions {
  /** Only delete the object with this UID. */
  uid?: string;
  /** Only delete the object at this resourceVersion. */
  resourceVersion?: string;
  /** What happens to the object's dependents; the apiserver's default when absent. */
  propagation?: Propagation;
}

/** Options of {@link client.apply} and {@link client.applyStatus}. */
export interface ApplyOptions {
  /** Take ownership of fields another manager owns instead of failing with a conflict. */
  force?: boolean;
}

/** One operation of a JSON patch (RFC 6902). */
export type JsonPatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; from: string; path: string };

type PatchCall = typeof raw.client.patch;

function write<T>(call: () => string): T {
  return fromJson<T>(callHost(call));
}

function apply<T extends KubeObject>(patch: PatchCall, obj: T, options: ApplyOptions): T {
  const kind = kindOf(obj);
  const { namespace, name } = objectKey(obj);
  const body = { tag: 'apply', val: { object: toJson(obj), force: options.force ?? false } } as const;
  return write<T>(() => patch(kind, namespace, name, body));
}

/** The apiserver, through the host. */
export const client = {
  /** Creates an object; its namespace and kind come from the object itself. */
  create<T extends KubeObject>(obj: T): T {
    return write<T>(() => raw.client.create(toJson(obj)));
  },

  /** Replaces an object; its resourceVersion guards against lost updates ({@link Conflict}). */
  update<T extends KubeObject>(obj: T): T {
    return write<T>(() => raw.client.update(toJson(obj)));
  },

  /** Applies a JSON merge patch (RFC 7386) to the object `namespace/name`. */
  patch<T extends KubeObject>(kind: Kind<T>, namespace: string, name: string, patch: object): T {
    const body = { tag: 'merge', val: toJson(patch) } as const;
    return write<T>(() => raw.client.patch(gvk(kind), namespace, name, body));
  },

  /** Applies a JSON patch (RFC 6902, a list of operations) to the object `namespace/name`. */
  jsonPatch<T extends KubeObject>(
    kind: Kind<T>,
    namespace: string,
    name: string,
    operations: JsonPatchOperation[],
  ): T {
    const body = { tag: 'json', val: toJson(operations) } as const;
    return write<T>(() => raw.client.patch(gvk(kind), namespace, name, body));
  },

  /**
   * Server-side applies `obj` (the fields this plugin owns, with apiVersion, kind and name) under
   * the field manager `wasmop/<plugin>`.
   */
  apply<T extends KubeObject>(obj: T, options: ApplyOptions = {}): T {
    return apply(raw.client.patch, obj, options);
  },

  /** Deletes the object `namespace/name`. Already gone: {@link NotFound}. */
  delete<T extends KubeObject>(
    kind: Kind<T>,
    namespace: string,
    name: string,
    options: DeleteOptions = {},
  ): void {
    const { uid, resourceVersion, propagation } = options;
    const preconditions = uid || resourceVersion ? { uid, resourceVersion } : undefined;
    callHost(() => raw.client.delete(gvk(kind), namespace, name, { preconditions, propagation }));
  },

  /** Replaces the status subresource of an object. */
  updateStatus<T extends KubeObject>(obj: T): T {
    return write<T>(() => raw.client.updateStatus(toJson(obj)));
  },

  /** Applies a JSON merge patch to the status subresource of the object `namespace/name`. */
  patchStatus<T extends KubeObject>(
    kind: Kind<T>,
    namespace: string,
    name: string,
    patch: object,
  ): T {
    const body = { tag: 'merge', val: toJson(patch) } as const;
    return write<T>(() => raw.client.patchStatus(gvk(kind), namespace, name, body));
  },

  /** Server-side applies the status of `obj` (the status fields this plugin owns). */
  applyStatus<T extends KubeObject>(obj: T, options: ApplyOptions = {}): T {
    return apply(raw.client.patchStatus, obj, options);
  },
};
