/**
 * The component's exports (`describe`, `reconcile`, `map` and the `webhooks` interface) for a
 * {@link Reconciler}. The build
 * generates the component's entry module from this; plugins never call it.
 *
 * A WIT `result` export returns its ok value and throws its error value, which is why
 * `reconcile` throws the WIT reconcile error rather than an `Error`.
 */
import { forwardConsole } from './console.ts';
import { fromJson, type KubeObject, type Request } from './object.ts';
import { toWitOutcome } from './outcome.ts';
import type { plugin, types, webhooks as wit } from './raw.ts';
import { toWitReconcileError } from './reconcile-error.ts';
import type { Reconciler } from './reconciler.ts';
import { admissionRequest, ConversionFailed, toWitDenial, type Webhooks } from './webhooks.ts';

/** The functions the component exports, in their WIT shapes. */
export interface ComponentExports {
  /** Declares the plugin. */
  describe(): plugin.Registration;
  /** Reconciles one request; throws a WIT reconcile error on failure. */
  reconcile(request: Request): plugin.Outcome;
  /** Maps a changed object (JSON text) of a watched kind to requests. */
  map(kind: types.Gvk, obj: types.Object): types.ObjectKey[];
  /** The exported `webhooks` interface. */
  webhooks: WebhookExports;
}

/** The functions of the exported `webhooks` interface, in their WIT shapes. */
export interface WebhookExports {
  /** Declares the webhooks. */
  describeWebhooks(): wit.Registration;
  /** Admits or refuses a request. */
  validate(req: wit.AdmissionRequest): wit.Verdict;
  /** Returns the defaulted object; throws a WIT denial to refuse. */
  default(req: wit.AdmissionRequest): types.Object;
  /** Returns the converted object; throws a message to fail. */
  convert(obj: types.Object, apiVersion: string): types.Object;
}

/** The WIT exports of `reconciler`; also sends `console.*` to the host's logger. */
export function componentExports(reconciler: Reconciler): ComponentExports {
  forwardConsole();
  return {
    describe: () => reconciler.registration,
    reconcile(request) {
      try {
        return toWitOutcome(reconciler.reconcile(request));
      } catch (thrown) {
        throw toWitReconcileError(thrown);
      }
    },
    map: (kind, obj) => reconciler.map(kind, fromJson<KubeObject>(obj)),
    webhooks: webhookExports(reconciler),
  };
}

/** `hook` of the webhooks, or a throw: the host only calls what the plugin declared. */
function declared<K extends keyof Webhooks>(webhooks: Webhooks, hook: K): NonNullable<Webhooks[K]> {
  const served = webhooks[hook];
  if (!served) {
    throw new Error(`the plugin serves no '${hook}' webhook`);
  }
  return served;
}

/** Throws when a webhook function returned a Promise: webhooks are synchronous. */
function settled<T>(value: T): T {
  if (value instanceof Promise) {
    throw new TypeError('a webhook returned a Promise; webhooks must be synchronous (no async/await)');
  }
  return value;
}

/** The WIT `webhooks` exports: a thrown `Denied` refuses, `ConversionFailed` fails a conversion,
 * anything else thrown fails the call (the host answers with the failure policy). */
function webhookExports({ webhookRegistration, webhooks }: Reconciler): WebhookExports {
  return {
    describeWebhooks: () => webhookRegistration,
    validate(req) {
      const { validator } = declared(webhooks, 'validate');
      try {
        return { tag: 'allowed', val: settled(validator(admissionRequest(req))) ?? [] };
      } catch (thrown) {
        return { tag: 'denied', val: toWitDenial(thrown) };
      }
    },
    default(req) {
      const { defaulter } = declared(webhooks, 'default');
      let defaulted: KubeObject;
      try {
        defaulted = settled(defaulter(admissionRequest(req)));
      } catch (thrown) {
        throw toWitDenial(thrown);
      }
      return JSON.stringify(defaulted);
    },
    convert(obj, apiVersion) {
      const { converter } = declared(webhooks, 'convert');
      try {
        return JSON.stringify(settled(converter(fromJson<KubeObject>(obj), apiVersion)));
      } catch (thrown) {
        throw thrown instanceof ConversionFailed ? thrown.message : thrown;
      }
    },
  };
}
