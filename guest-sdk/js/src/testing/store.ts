/**
 * The fake host's object store: a tiny in-memory apiserver that behaves as wasmop's own in-memory
 * host (`host/src/testing/memory.rs`), so that a fixture runs here as under `wasmop test`. One
 * counter, from 1 after {@link Store.clear}, gives every stored version its resourceVersion (and a
 * new object its uid, `uid-N`); generation, which only an object with a spec has (as the apiserver
 * gives ConfigMaps and Secrets none), moves with everything but metadata and status; updates
 * are checked against the resourceVersion they carry and deletes against their preconditions;
 * finalizers hold a deleted object; the status is kept apart from the rest (every kind has a
 * status subresource here); merge patches and applies merge, JSON patches patch. Failures throw
 * the WIT error value, as the real host's imports do.
 */
import type { ObjectMeta } from 'kubernetes-types/meta/v1';

import { jsonEqual } from '../equal.ts';
import { apiVersionOf, formatGvk, kindOf, type Gvk } from '../kind.ts';
import type { KubeObject } from '../object.ts';
import type { types } from '../raw.ts';
import { jsonPatch } from './json-patch.ts';
import { mergePatch } from './merge.ts';

/** The deletionTimestamp a delete sets, the one wasmop's in-memory host sets. */
const DELETED_AT = '1970-01-01T00:00:00Z';

/** The exception a host import throws for a WIT error: an Error carrying the value as `payload`. */
export function witError(error: types.Error): Error {
  const status = error.tag === 'forbidden' ? error.val[1] : error.val;
  return Object.assign(new Error(status.message), { payload: error });
}

/** The exception for a WIT error other than `forbidden`. */
export function hostError(
  tag: Exclude<types.Error['tag'], 'forbidden'>,
  code: number,
  reason: string,
  message: string,
): Error {
  return witError({ tag, val: { code, reason, message } });
}

/** An object as the store keeps it; every kind may have a status. */
type Stored = KubeObject & { status?: unknown };

/** Metadata the store fills in, which `kubernetes-types` marks read-only for clients. */
type WritableMeta = { -readonly [K in keyof ObjectMeta]: ObjectMeta[K] };

/** Where an object is kept: its kind, namespace and name. */
export interface Target {
  kind: Gvk;
  namespace: string;
  name: string;
}

/** How a patch is applied: merged (a merge patch, or an apply), or as JSON patch operations. */
export type PatchType = 'merge' | 'json' | 'apply';

/** The target an object names itself. */
export function targetOf(obj: KubeObject): Target {
  return { kind: kindOf(obj), namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' };
}

/** `Kind.apiVersion namespace/name`, as wasmop's messages name an object. */
function describe({ kind, namespace, name }: Target): string {
  return `${kind.kind}.${apiVersionOf(kind)} ${namespace ? `${namespace}/${name}` : name}`;
}

function keyOf({ kind, namespace, name }: Target): string {
  return `${formatGvk(kind)}:${namespace}/${name}`;
}

/** Everything but metadata and status: what a generation tracks. */
function specOf(obj: Stored): unknown {
  const { metadata: _metadata, status: _status, ...rest } = obj;
  return rest;
}

/**
 * Whether the apiserver gives `obj` a generation: kinds with a spec have one, kinds of bare data
 * (ConfigMap, Secret) have none, so a recording of them replays alike.
 */
function hasGeneration(obj: Stored): boolean {
  return (obj as { spec?: unknown }).spec !== undefined;
}

/** An in-memory apiserver for the fake host. */
export class Store {
  private objects = new Map<string, Stored>();
  private version = 0;

  /** Drops every object and starts the resourceVersion counter again. */
  clear(): void {
    this.objects.clear();
    this.version = 0;
  }

  /** The stored object, or undefined. */
  find(target: Target): Stored | undefined {
    const found = this.objects.get(keyOf(target));
    return found && structuredClone(found);
  }

  /** The stored object; throws `not-found` when there is none. */
  get(target: Target): Stored {
    const found = this.find(target);
    if (!found) {
      throw hostError('not-found', 404, 'NotFound', `${describe(target)} not found`);
    }
    return found;
  }

  /** Every stored object of a kind, by namespace and name. */
  all(kind: Gvk): Stored[] {
    const prefix = `${formatGvk(kind)}:`;
    return [...this.objects.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, obj]) => structuredClone(obj))
      .sort((a, b) => compareKeys(targetOf(a), targetOf(b)));
  }

  /** Creates an object; throws `already-exists` when the name is taken. */
  create(obj: Stored): Stored {
    const target = targetOf(obj);
    if (this.find(target)) {
      throw hostError('already-exists', 409, 'AlreadyExists', `${describe(target)} already exists`);
    }
    return this.save(target, obj, undefined);
  }

  /** Replaces an object but its status; a stale resourceVersion throws `conflict`. */
  update(obj: Stored): Stored {
    const target = targetOf(obj);
    const current = this.checked(target, obj.metadata?.resourceVersion);
    return this.save(target, { ...obj, status: current.status ?? null }, current);
  }

  /** Replaces an object's status; a stale resourceVersion throws `conflict`. */
  updateStatus(obj: Stored): Stored {
    const target = targetOf(obj);
    const current = this.checked(target, obj.metadata?.resourceVersion);
    return this.save(target, { ...current, status: obj.status ?? null }, current);
  }

  /**
   * Patches an object, or only its status; an apply of a missing object creates it, other
   * patches of one throw `not-found`, and JSON patch operations that fail throw `invalid`.
   */
  patch(target: Target, type: PatchType, patch: unknown, status: boolean): Stored {
    const found = this.find(target);
    const current: Stored = found ?? (type === 'apply' ? {} : this.get(target));
    const patched = (type === 'json' ? jsonPatched(current, patch) : mergePatch(current, patch)) as Stored;
    if (status) {
      return this.save(target, { ...current, status: patched.status ?? null }, found);
    }
    if (Object.hasOwn(current, 'status')) {
      patched.status = current.status;
    }
    return this.save(target, patched, found);
  }

  /** Deletes an object, which stays while it has finalizers; unmet preconditions throw `conflict`. */
  delete(target: Target, preconditions: { uid?: string; resourceVersion?: string } = {}): void {
    const current = this.get(target);
    const stale = (given: string | undefined, held: string | undefined) => given !== undefined && given !== held;
    if (stale(preconditions.uid, current.metadata?.uid) || stale(preconditions.resourceVersion, current.metadata?.resourceVersion)) {
      throw hostError('conflict', 409, 'Conflict', `${describe(target)}: precondition failed`);
    }
    this.save(target, { ...current, metadata: { ...current.metadata, deletionTimestamp: DELETED_AT } }, current);
  }

  /** Stores `next` as the new version of `target` (`current` being the one before, if any); returns it as stored. */
  save(target: Target, next: Stored, current: Stored | undefined): Stored {
    const obj = structuredClone(next);
    const metadata: WritableMeta = (obj.metadata ??= {});
    metadata.resourceVersion = String(++this.version);
    const generated = hasGeneration(obj);
    if (current) {
      const generation = current.metadata?.generation ?? 1;
      metadata.uid = current.metadata?.uid;
      if (generated || current.metadata?.generation !== undefined) {
        metadata.generation = jsonEqual(specOf(current), specOf(obj)) ? generation : generation + 1;
      }
      metadata.deletionTimestamp ??= current.metadata?.deletionTimestamp;
    } else {
      metadata.uid = `uid-${this.version}`;
      if (generated) {
        metadata.generation = 1;
      }
    }
    if (metadata.deletionTimestamp && !metadata.finalizers?.length) {
      this.objects.delete(keyOf(target));
    } else {
      this.objects.set(keyOf(target), obj);
    }
    return structuredClone(obj);
  }

  /** The current object, when `resourceVersion` (if given) is its own; throws `conflict` when it is stale. */
  private checked(target: Target, resourceVersion: string | undefined): Stored {
    const current = this.get(target);
    if (resourceVersion !== undefined && resourceVersion !== current.metadata?.resourceVersion) {
      const message = `${describe(target)}: the object has been modified; apply your changes to the latest version`;
      throw hostError('conflict', 409, 'Conflict', message);
    }
    return current;
  }
}

function compareKeys(a: Target, b: Target): number {
  return a.namespace === b.namespace ? compare(a.name, b.name) : compare(a.namespace, b.namespace);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function jsonPatched(current: Stored, operations: unknown): unknown {
  try {
    return jsonPatch(current, operations);
  } catch (err) {
    throw hostError('invalid', 422, 'Invalid', (err as Error).message);
  }
}
