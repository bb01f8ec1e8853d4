/**
 * Helpers over object metadata: controller owner references and finalizers. They only change
 * the object in memory; the reconciler writes the change, e.g. with `client.update(obj)`, whose
 * resourceVersion makes a concurrent change fail with {@link Conflict} instead of being lost.
 */
import type { OwnerReference } from 'kubernetes-types/meta/v1';

import type { KubeObject } from './object.ts';

/**
 * The controller owner reference pointing at `owner`, for the objects it creates; `undefined`
 * when the owner lacks an apiVersion, kind, name or UID (it was never stored).
 */
export function controllerOwnerRef(owner: KubeObject): OwnerReference | undefined {
  const { apiVersion, kind } = owner;
  const name = owner.metadata?.name;
  const uid = owner.metadata?.uid;
  if (!apiVersion || !kind || !name || !uid) {
    return undefined;
  }
  return { apiVersion, kind, name, uid, controller: true, blockOwnerDeletion: true };
}

/** The controller owner reference of an object, if any. */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((ref) => ref.controller === true);
}

/** Whether `owner` is the controller of `obj` (same apiVersion, kind and UID). */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  const ref = controllerOf(obj);
  return (
    ref !== undefined &&
    ref.apiVersion === owner.apiVersion &&
    ref.kind === owner.kind &&
    ref.uid === owner.metadata?.uid
  );
}

/** Whether the object carries the finalizer. */
export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/** Adds the finalizer; returns whether it was missing. */
export function addFinalizer(obj: KubeObject, finalizer: string): boolean {
  if (hasFinalizer(obj, finalizer)) {
    return false;
  }
  const metadata = (obj.metadata ??= {});
  (metadata.finalizers ??= []).push(finalizer);
  return true;
}

/** Removes the finalizer; returns whether it was present. */
export function removeFinalizer(obj: KubeObject, finalizer: string): boolean {
  const finalizers = obj.metadata?.finalizers;
  if (!finalizers?.includes(finalizer)) {
    return false;
  }
  obj.metadata!.finalizers = finalizers.filter((f) => f !== finalizer);
  return true;
}

/** Whether the object is being deleted (it has a deletionTimestamp). */
export function isDeleting(obj: KubeObject): boolean {
  return obj.metadata?.deletionTimestamp !== undefined;
}
