/**
 * The admission and conversion webhooks a reconciler may serve for its kinds, beside its
 * reconciles and in the same sandbox: `validate` admits or refuses a request, `default` returns
 * the object with its defaults set (the host sends the difference to the apiserver as a
 * JSONPatch), `convert` turns an object into another version of its custom resource.
 *
 * ```ts
 * webhooks: {
 *   validate: { rules: [{ kind: WebApp }], validator(req) {
 *     if ((req.object?.spec?.replicas ?? 1) > 50) throw new Denied('spec.replicas must be at most 50');
 *   } },
 *   default: { rules: [{ kind: WebApp }], defaulter: (req) => ({ ...req.object, spec: { port: 8080, ...req.object?.spec } }) },
 *   convert: { kinds: [WebApp], converter: (obj, apiVersion) => ({ ...obj, apiVersion }) },
 * }
 * ```
 *
 * A validator returns nothing (or warnings) to admit and throws {@link Denied} to refuse; a
 * defaulter that throws `Denied` refuses too; a converter throws {@link ConversionFailed} when
 * it cannot convert. Anything else thrown is the plugin failing: the host answers with the
 * plugin's failure policy.
 */
import { gvk, type Gvk, type Kind } from './kind.ts';
import type { KubeObject } from './object.ts';
import type { webhooks as wit } from './raw.ts';

/** What an admission request is for. */
export type Operation = wit.Operation;

const OPERATIONS: readonly Operation[] = ['create', 'update', 'delete', 'connect'];

/** The operations a validating or defaulting webhook is called for on one kind; create and update when absent. */
export interface WebhookRule {
  /** The kind, in the version the webhook is registered for. */
  kind: Kind;
  /** What it is called for. */
  operations?: Operation[];
}

/** Who sent an admission request, as the apiserver authenticated them. */
export type UserInfo = wit.UserInfo;

/** One admission request, its objects decoded. */
export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  /** The request's uid. */
  uid: string;
  /** The object's kind, in the version the webhook is registered for. */
  kind: Gvk;
  /** The object's namespace; empty when cluster-scoped. */
  namespace: string;
  /** The object's name; empty on a create that generates it. */
  name: string;
  /** What the request is for. */
  operation: Operation;
  /** The object as it would be stored; absent on delete. */
  object?: T;
  /** The object as stored; absent on create. */
  oldObject?: T;
  /** Who sent the request. */
  userInfo: UserInfo;
  /** The request persists nothing. */
  dryRun: boolean;
}

/** Refuses an admission request with a message shown to the client, and warnings. */
export class Denied extends Error {
  override readonly name = 'Denied';
  /** Shown to the client beside the message. */
  readonly warnings: string[];

  constructor(message: string, warnings: string[] = []) {
    super(message);
    this.warnings = warnings;
  }
}

/** Fails a conversion, saying why. */
export class ConversionFailed extends Error {
  override readonly name = 'ConversionFailed';
}

/** The webhooks a reconciler serves; each with its rules and the function answering them. */
export interface Webhooks {
  /** Admits (returning warnings, or nothing) or refuses (throwing {@link Denied}) requests. */
  validate?: { rules: WebhookRule[]; validator(req: AdmissionRequest): string[] | void };
  /** Returns the request's object with its defaults set, or throws {@link Denied}. */
  default?: { rules: WebhookRule[]; defaulter(req: AdmissionRequest): KubeObject };
  /**
   * Converts the custom resources `kinds` (group and kind; the version is ignored) between their
   * versions: returns the object in `apiVersion`, or throws {@link ConversionFailed}.
   */
  convert?: { kinds: Kind[]; converter(obj: KubeObject, apiVersion: string): KubeObject };
}

function rules(plugin: string, which: string, given: WebhookRule[] | undefined): wit.Rule[] {
  return (given ?? []).map(({ kind, operations = ['create', 'update'] }) => {
    const unknown = operations.filter((op) => !OPERATIONS.includes(op));
    if (unknown.length > 0 || operations.length === 0) {
      throw new Error(
        `plugin '${plugin}': webhooks.${which} operations must be some of ${OPERATIONS.join(', ')}, got ${operations.join(', ')}`,
      );
    }
    return { kind: gvk(kind), operations };
  });
}

/** The WIT registration of `webhooks`; throws when a webhook has no rules. */
export function webhooksRegistration(plugin: string, webhooks: Webhooks = {}): wit.Registration {
  const registration = {
    validate: rules(plugin, 'validate', webhooks.validate?.rules),
    default: rules(plugin, 'default', webhooks.default?.rules),
    convert: (webhooks.convert?.kinds ?? []).map(gvk),
  };
  const empty = (['validate', 'default', 'convert'] as const).filter(
    (which) => webhooks[which] && registration[which].length === 0,
  );
  if (empty.length > 0) {
    throw new Error(`plugin '${plugin}': webhooks.${empty.join(', webhooks.')} declares no kinds`);
  }
  return registration;
}

/** The request with its objects decoded. */
export function admissionRequest(req: wit.AdmissionRequest): AdmissionRequest {
  const decode = (text: string | undefined) => (text === undefined ? undefined : (JSON.parse(text) as KubeObject));
  return { ...req, object: decode(req.object), oldObject: decode(req.oldObject) };
}

/** The WIT denial of a {@link Denied}; rethrows anything else, which fails the call. */
export function toWitDenial(thrown: unknown): wit.Denial {
  if (thrown instanceof Denied) {
    return { message: thrown.message, warnings: thrown.warnings };
  }
  throw thrown;
}
