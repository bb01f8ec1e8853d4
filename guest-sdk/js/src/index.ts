/**
 * Write wasmop reconcilers in TypeScript or JavaScript. A plugin's entry module default-exports
 * {@link defineReconciler}'s result; the SDK's `build` bundles it into a WebAssembly component
 * the wasmop host loads. Objects are plain JS objects typed by their {@link Kind}: {@link cache}
 * reads them from the host's informer cache, {@link client} writes them to the apiserver within
 * the plugin's declared permissions, {@link events} records Kubernetes Events and {@link log}
 * (and `console.*`) logs through the host.
 *
 * ```ts
 * import { ConfigMap, cache, client, defineReconciler, log, optional } from '@wasmop/guest';
 *
 * export default defineReconciler({
 *   name: 'stamp',
 *   version: '0.1.0',
 *   primary: ConfigMap,
 *   permissions: [{ kind: ConfigMap, verbs: ['patch'] }],
 *   reconcile({ namespace, name }) {
 *     const cm = optional(() => cache.get(ConfigMap, namespace, name));
 *     if (cm && !cm.metadata?.annotations?.stamped) {
 *       client.patch(ConfigMap, namespace, name, { metadata: { annotations: { stamped: 'yes' } } });
 *       log.info('stamped', { namespace, name });
 *     }
 *   },
 * });
 * ```
 */
export { cache, type ListOptions } from './cache.ts';
export {
  client,
  type ApplyOptions,
  type DeleteOptions,
  type JsonPatchOperation,
  type Propagation,
} from './client.ts';
export * from './conditions.ts';
export { jsonEqual } from './equal.ts';
export {
  AlreadyExists,
  Conflict,
  Forbidden,
  Invalid,
  NotFound,
  Other,
  Timeout,
  Unavailable,
  WasmopError,
  optional,
  type DeniedBy,
  type Status,
} from './errors.ts';
export { events, type EventType } from './events.ts';
export { apiVersionOf, defineKind, formatGvk, kindOf, type Gvk, type Kind } from './kind.ts';
export * from './kinds.ts';
export { log, type Fields, type Level } from './log.ts';
export * from './meta.ts';
export { formatKey, objectKey, type KubeObject, type ObjectKey, type Request } from './object.ts';
export { done, requeueAfter, type Outcome } from './outcome.ts';
export * as raw from './raw.ts';
export { ReconcileError, Retryable, Terminal } from './reconcile-error.ts';
export {
  defineReconciler,
  type FieldIndex,
  type Mapping,
  type Permission,
  type Predicate,
  type Reconciler,
  type ReconcilerOptions,
  type Verb,
  type Watch,
} from './reconciler.ts';
export {
  ConversionFailed,
  Denied,
  type AdmissionRequest,
  type Operation,
  type UserInfo,
  type WebhookRule,
  type Webhooks,
} from './webhooks.ts';
export type { ObjectMeta, OwnerReference } from 'kubernetes-types/meta/v1';
