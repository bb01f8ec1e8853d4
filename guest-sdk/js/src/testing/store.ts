/**
 * The fake host's object store: a tiny in-memory apiserver. It keeps resourceVersion, uid and
 * generation the way the apiserver does, checks resourceVersions on update, honours finalizers on
 * delete, and keeps the status apart from the rest (every kind has a status subresource here).
 * Failures throw the WIT error value, as the real host's imports do.
 */
import type { ObjectMeta } from 'kubernetes-types/meta/v1';

import { now } from '../conditions.ts';
import { jsonEqual } from '../equal.ts';
import { formatGvk, kindOf, type Gvk } from '../kind.ts';
import type { KubeObject } from '../object.ts';
import type { types } from '../raw.ts';

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

function keyOf(kind: Gvk, namespace: string, name: string): string {
  return `${formatGvk(kind)}:${namespace}/${name}`;
}

/** Everything but metadata and status: what a generation tracks. */
function specOf(obj: Stored): unknown {
  const { metadata: _metadata, status: _status, ...rest } = obj;
  return rest;
}

/** An in-memory apiserver for the fake host. */
export class Store {
  private objects = new Map<string, Stored>();
  private version = 0;

  /** Drops every object. */
  clear(): void {
    this.objects.clear();
  }

  /** The stored object, or undefined. */
  find(kind: Gvk, namespace: string, name: string): Stored | undefined {
    const found = this.objects.get(keyOf(kind, namespace, name));
    return found && structuredClone(found);
  }

  /** The stored object; throws `not-found` when there is none. */
  get(kind: Gvk, namespace: string, name: string): Stored {
    const found = this.find(kind, namespace, name);
    if (!found) {
      throw hostError('not-found', 404, 'NotFound', `${kind.kind} ${namespace}/${name} not found`);
    }
    return found;
  }

  /** Every stored object of a kind. */
  all(kind: Gvk): Stored[] {
    const prefix = `${formatGvk(kind)}:`;
    return [...this.objects.entries()]
      .filter(([key]) => key.startsWith(prefix))
      .map(([, obj]) => structuredClone(obj));
  }

  /** Creates an object; throws `already-exists` when the name is taken. */
  create(obj: Stored): Stored {
    const { namespace = '', name = '' } = obj.metadata ?? {};
    if (this.find(kindOf(obj), namespace, name)) {
      throw hostError('already-exists', 409, 'AlreadyExists', `${obj.kind} ${namespace}/${name} already exists`);
    }
    return this.save(obj, undefined);
  }

  /** Replaces an object's non-status fields; a stale resourceVersion throws `conflict`. */
  update(obj: Stored): Stored {
    const current = this.current(obj);
    this.checkVersion(current, obj.metadata?.resourceVersion);
    return this.save({ ...obj, status: current.status }, current);
  }

  /** Replaces an object's status; a stale resourceVersion throws `conflict`. */
  updateStatus(obj: Stored): Stored {
    const current = this.current(obj);
    this.checkVersion(current, obj.metadata?.resourceVersion);
    return this.save({ ...current, status: obj.status }, current);
  }

  /** Stores `next` as the new state of an existing object (or a new one when `current` is absent). */
  save(next: Stored, current: Stored | undefined): Stored {
    const obj = structuredClone(next);
    const metadata: WritableMeta = (obj.metadata ??= {});
    const { namespace = '', name = '' } = metadata;
    metadata.uid = current?.metadata?.uid ?? `uid-${name}-${this.version + 1}`;
    metadata.creationTimestamp = current?.metadata?.creationTimestamp ?? now();
    metadata.deletionTimestamp = current?.metadata?.deletionTimestamp ?? metadata.deletionTimestamp;
    const generation = current?.metadata?.generation ?? 0;
    metadata.generation = current && jsonEqual(specOf(current), specOf(obj)) ? generation : generation + 1;
    metadata.resourceVersion = String(++this.version);
    const key = keyOf(kindOf(obj), namespace, name);
    if (metadata.deletionTimestamp && !metadata.finalizers?.length) {
      this.objects.delete(key);
    } else {
      this.objects.set(key, obj);
    }
    return structuredClone(obj);
  }

  /** Deletes an object, or marks it deleting while it has finalizers. */
  delete(kind: Gvk, namespace: string, name: string, preconditions?: { uid?: string; resourceVersion?: string }): void {
    const current = this.get(kind, namespace, name);
    if (preconditions?.uid && preconditions.uid !== current.metadata?.uid) {
      throw hostError('conflict', 409, 'Conflict', `${kind.kind} ${namespace}/${name} has another uid`);
    }
    this.checkVersion(current, preconditions?.resourceVersion);
    if (current.metadata?.finalizers?.length) {
      const metadata = { ...current.metadata, deletionTimestamp: now() };
      this.save({ ...current, metadata }, current);
    } else {
      this.objects.delete(keyOf(kind, namespace, name));
    }
  }

  private current(obj: Stored): Stored {
    const { namespace = '', name = '' } = obj.metadata ?? {};
    return this.get(kindOf(obj), namespace, name);
  }

  private checkVersion(current: Stored, resourceVersion: string | undefined): void {
    if (resourceVersion && resourceVersion !== current.metadata?.resourceVersion) {
      const what = `${current.kind} ${current.metadata?.namespace}/${current.metadata?.name}`;
      throw hostError('conflict', 409, 'Conflict', `the object ${what} has been modified; apply your changes to the latest version and try again`);
    }
  }
}
