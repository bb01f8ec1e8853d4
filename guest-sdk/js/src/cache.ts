/**
 * Typed reads from the host's informer cache. Reads never reach the apiserver, and return this
 * plugin's own writes or newer. A missing object throws {@link NotFound}; wrap the call in
 * `optional(() => ...)` to get `undefined` instead.
 */
import { callHost } from './errors.ts';
import { gvk, type Kind } from './kind.ts';
import { fromJson, type KubeObject } from './object.ts';
import * as raw from './raw.ts';

/** Filters for {@link cache.list}; they combine with AND. */
export interface ListOptions {
  /** Only objects in this namespace; all namespaces when absent. */
  namespace?: string;
  /** A label selector in Kubernetes syntax, e.g. `app=web,tier!=db`. */
  labelSelector?: string;
  /** A field selector, e.g. `metadata.name=foo`. */
  fieldSelector?: string;
}

/** The host's informer cache. */
export const cache = {
  /** Gets one object; `namespace` is empty for cluster-scoped kinds. */
  get<T extends KubeObject>(kind: Kind<T>, namespace: string, name: string): T {
    return fromJson<T>(callHost(() => raw.cache.get(gvk(kind), namespace, name)));
  },

  /** Lists the objects of a kind that match `options`. */
  list<T extends KubeObject>(kind: Kind<T>, options: ListOptions = {}): T[] {
    const { namespace, labelSelector, fieldSelector } = options;
    const texts = callHost(() =>
      raw.cache.list(gvk(kind), { namespace, labelSelector, fieldSelector }),
    );
    return texts.map((text) => fromJson<T>(text));
  },

  /** Lists the objects of a kind whose value for the declared field index `index` is `value`. */
  listByIndex<T extends KubeObject>(kind: Kind<T>, index: string, value: string): T[] {
    const texts = callHost(() => raw.cache.listByIndex(gvk(kind), index, value));
    return texts.map((text) => fromJson<T>(text));
  },
};
