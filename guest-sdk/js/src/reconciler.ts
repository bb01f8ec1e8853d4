/**
 * Declaring a reconciler: {@link defineReconciler} takes the plugin's registration (name, kinds,
 * permissions, limits) and its `reconcile` function, checks them, and returns the
 * {@link Reconciler} the plugin's entry module exports as default.
 */
import { gvk, type Gvk, type Kind } from './kind.ts';
import type { KubeObject, ObjectKey, Request } from './object.ts';
import { done, type Outcome } from './outcome.ts';
import type { plugin, webhooks as witWebhooks } from './raw.ts';
import { webhooksRegistration, type Webhooks } from './webhooks.ts';

/** Filters that drop update events: only changes of generation, labels or annotations pass. */
export type Predicate = plugin.Predicate;

/** What a plugin may do with a kind; `status` writes the status subresource. */
export type Verb = plugin.Verb;

/**
 * How an event on a watched kind becomes a request: to the object's controller owner, to the
 * primary object named by a label's value, or through the reconciler's `map`.
 */
export type Mapping = 'controller-owner' | 'guest' | { label: string };

/** A kind watched besides the primary and owned kinds. */
export interface Watch {
  /** The watched kind. */
  kind: Kind;
  /** How its events map to primary objects. */
  mapping: Mapping;
  /** Filters applied to its update events. */
  predicates?: Predicate[];
}

/** Verbs on a kind, in some namespaces (all when absent or empty). */
export interface Permission {
  /** The kind the verbs apply to. */
  kind: Kind;
  /** What the plugin may do. */
  verbs: Verb[];
  /** Only in these namespaces. */
  namespaces?: string[];
}

/** A field index the host keeps for `cache.listByIndex`. */
export interface FieldIndex {
  /** The name `listByIndex` refers to it by. */
  name: string;
  /** The indexed kind. */
  kind: Kind;
  /** A dotted path to a string field, e.g. `spec.nodeName`. */
  field: string;
}

/** Everything a plugin declares, plus its reconcile (and optional map) function. */
export interface ReconcilerOptions<T extends KubeObject> {
  /** The plugin's name: lowercase letters, digits and dashes. Its field manager is `wasmop/<name>`. */
  name: string;
  /** The plugin's own version, e.g. `1.4.0`. */
  version: string;
  /** The kind this plugin reconciles. */
  primary: Kind<T>;
  /** Filters applied to update events of the primary kind. */
  predicates?: Predicate[];
  /** Kinds this plugin creates and controls; their events reconcile their controller owner. */
  owns?: Kind[];
  /** Other kinds whose events map to primary objects. */
  watches?: Watch[];
  /** Writes and extra reads the plugin needs; reads of its own kinds are implied. */
  permissions?: Permission[];
  /** Field indexes over cached kinds. */
  indexes?: FieldIndex[];
  /** How many reconciles may run at once; 1 when absent. */
  maxConcurrentReconciles?: number;
  /** How long one reconcile may take before the host interrupts it; the host's default when absent. */
  reconcileTimeoutMs?: number;
  /** Converges the primary object `request` names; returning nothing means {@link done}. */
  reconcile(request: Request): Outcome | void;
  /** Maps a changed object of a kind watched with the `guest` mapping to requests. */
  map?(kind: Gvk, obj: KubeObject): ObjectKey[];
  /** The admission and conversion webhooks it serves; none when absent. */
  webhooks?: Webhooks;
}

/** A declared reconciler, as the component exports it. */
export interface Reconciler {
  /** The registration the host receives from `describe`. */
  readonly registration: plugin.Registration;
  /** Reconciles one request; a returned Promise is refused, reconcilers are synchronous. */
  reconcile(request: Request): Outcome;
  /** Maps a changed object of a watched kind to requests. */
  map(kind: Gvk, obj: KubeObject): ObjectKey[];
  /** The webhooks the host receives from `describe-webhooks`. */
  readonly webhookRegistration: witWebhooks.Registration;
  /** The webhooks it serves. */
  readonly webhooks: Webhooks;
}

const PLUGIN_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function mapping(m: Mapping): plugin.Mapping {
  return typeof m === 'string' ? { tag: m } : { tag: 'label', val: m.label };
}

/** The WIT registration of the options; throws when they are not valid. */
export function registration<T extends KubeObject>(options: ReconcilerOptions<T>): plugin.Registration {
  const { name, version, maxConcurrentReconciles = 1, reconcileTimeoutMs } = options;
  if (!PLUGIN_NAME.test(name)) {
    throw new Error(`plugin name '${name}' must be lowercase letters, digits and dashes`);
  }
  if (!version) {
    throw new Error(`plugin '${name}' needs a version, e.g. '0.1.0'`);
  }
  if (reconcileTimeoutMs !== undefined && !(reconcileTimeoutMs > 0)) {
    throw new Error(`plugin '${name}': reconcileTimeoutMs must be above 0, got ${reconcileTimeoutMs}`);
  }
  return {
    name,
    version,
    primary: gvk(options.primary),
    predicates: options.predicates ?? [],
    owns: (options.owns ?? []).map(gvk),
    watches: (options.watches ?? []).map((w) => ({
      kind: gvk(w.kind),
      mapping: mapping(w.mapping),
      predicates: w.predicates ?? [],
    })),
    permissions: (options.permissions ?? []).map((p) => ({
      kind: gvk(p.kind),
      verbs: p.verbs,
      namespaces: p.namespaces ?? [],
    })),
    indexes: (options.indexes ?? []).map((i) => ({ name: i.name, kind: gvk(i.kind), field: i.field })),
    maxConcurrentReconciles: Math.max(1, Math.floor(maxConcurrentReconciles)),
    reconcileTimeout:
      reconcileTimeoutMs === undefined ? undefined : BigInt(Math.round(reconcileTimeoutMs)),
  };
}

/** Declares a reconciler; export the result as the plugin entry module's default export. */
export function defineReconciler<T extends KubeObject>(options: ReconcilerOptions<T>): Reconciler {
  return {
    registration: registration(options),
    webhookRegistration: webhooksRegistration(options.name, options.webhooks),
    webhooks: options.webhooks ?? {},
    reconcile(request) {
      const outcome = options.reconcile(request);
      if (outcome instanceof Promise) {
        throw new TypeError(
          `plugin '${options.name}': reconcile returned a Promise; reconcilers must be synchronous (no async/await)`,
        );
      }
      return outcome ?? done;
    },
    map(kind, obj) {
      return options.map?.(kind, obj) ?? [];
    },
  };
}
