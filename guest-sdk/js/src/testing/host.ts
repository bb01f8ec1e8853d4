/**
 * A fake wasmop host for unit tests under Node: the SDK's test bundler points the WIT imports at
 * {@link host}, so a plugin's `reconcile` runs against an in-memory store. Like the real host it
 * refuses malformed objects and patches, checks writes (and reads of undeclared kinds) against the
 * registration given to {@link FakeHost.reset}, records every write, event and log line, and can
 * be told to fail the next call of a kind of write. Fixture files are run by `wasmop test` against
 * the built component instead ({@link testFixtures}).
 */
import { apiVersionOf, formatGvk, type Gvk, type Kind } from '../kind.ts';
import { fromJson, type KubeObject } from '../object.ts';
import type { cache, client, events, logger, plugin, types } from '../raw.ts';
import type { Reconciler } from '../reconciler.ts';
import { hostJson } from './json.ts';
import { matchesFields, matchesLabels } from './selectors.ts';
import { hostError, Store, targetOf, witError, type Target } from './store.ts';

/** What a write does, as `wasmop test`'s fixtures name it. */
export type Verb = 'create' | 'update' | 'update-status' | 'merge-patch' | 'json-patch' | 'apply' | 'delete';

/** A write the plugin sent, with its body, as `wasmop test`'s fixtures state one. */
export interface SentWrite {
  /** What it does. */
  verb: Verb;
  /** A patch (merge, JSON or apply) of the status subresource. */
  status: boolean;
  /** A server-side apply that takes conflicting fields. */
  force: boolean;
  /** The target's apiVersion. */
  apiVersion: string;
  /** The target's kind. */
  kind: string;
  /** The target's namespace; empty for a cluster-scoped kind. */
  namespace: string;
  /** The target's name. */
  name: string;
  /** The object or patch sent; a delete's options (`uid`, `resourceVersion`, `propagationPolicy`); `null` when none. */
  body: unknown;
}

/** A write the plugin made. */
export interface Write {
  /** Which client call: `create`, `update`, `merge`, `json`, `apply`, `delete`, `update-status`, `patch-status`. */
  call: WriteCall;
  /** The kind, e.g. `apps/v1/Deployment`. */
  kind: string;
  namespace: string;
  name: string;
}

/** The client calls a {@link Write} records. */
export type WriteCall = 'create' | 'update' | 'merge' | 'json' | 'apply' | 'delete' | 'update-status' | 'patch-status';

/** An event the plugin recorded. */
export interface RecordedEvent {
  /** The kind of the object, e.g. `example.wasmop.dev/v1alpha1/WebApp`. */
  kind: string;
  /** The kind of the object, as its group, version and kind. */
  gvk: Gvk;
  namespace: string;
  name: string;
  type: 'normal' | 'warning';
  reason: string;
  message: string;
}

/** A line the plugin logged. */
export interface LogLine {
  level: string;
  message: string;
  fields: Record<string, string>;
}

const verbOf: Record<WriteCall, plugin.Verb> = {
  create: 'create',
  update: 'update',
  merge: 'patch',
  json: 'patch',
  apply: 'patch',
  delete: 'delete',
  'update-status': 'status',
  'patch-status': 'status',
};

/** The fake host: an in-memory apiserver and cache plus what the plugin wrote, recorded and logged. */
export class FakeHost {
  /** Every successful write, in order. */
  readonly writes: Write[] = [];
  /** Every write sent past the declared permissions, in order, with its body: those answered with an error too. */
  readonly sent: SentWrite[] = [];
  /** Every recorded event, in order. */
  readonly events: RecordedEvent[] = [];
  /** Every log line, in order. */
  readonly logs: LogLine[] = [];
  private readonly store = new Store();
  private registration: plugin.Registration | undefined;
  private failures: { call: WriteCall; error: Error }[] = [];

  /** Empties the store and the records; checks permissions against `reconciler`'s registration. */
  reset(reconciler?: Reconciler): void {
    this.store.clear();
    this.writes.length = 0;
    this.sent.length = 0;
    this.events.length = 0;
    this.logs.length = 0;
    this.failures = [];
    this.registration = reconciler?.registration;
  }

  /** Stores an object as if someone else created or changed it; returns it as stored. */
  put<T extends KubeObject>(obj: T): T {
    const target = targetOf(obj);
    return this.store.save(target, obj, this.store.find(target)) as T;
  }

  /** The stored object, or undefined. */
  get<T extends KubeObject>(kind: Kind<T>, namespace: string, name: string): T | undefined {
    return this.store.find({ kind, namespace, name }) as T | undefined;
  }

  /** Makes the next `call` fail with the WIT error `error`, e.g. `{ tag: 'conflict', val: status }`. */
  failNext(call: WriteCall, error: types.Error): void {
    this.failures.push({ call, error: witError(error) });
  }

  /** The `wasmop:reconciler` imports, backed by this host. */
  readonly wit: typeof cache & typeof client & typeof events & typeof logger = {
    get: (kind: Gvk, namespace: string, name: string): string => {
      this.checkRead(kind, 'get');
      return hostJson(this.store.get({ kind, namespace, name }));
    },
    list: (kind: Gvk, options: { namespace?: string; labelSelector?: string; fieldSelector?: string }): string[] => {
      this.checkRead(kind, 'list');
      return this.store
        .all(kind)
        .filter((o) => options.namespace === undefined || (o.metadata?.namespace ?? '') === options.namespace)
        .filter((o) => options.labelSelector === undefined || matchesLabels(o, options.labelSelector))
        .filter((o) => options.fieldSelector === undefined || matchesFields(o, options.fieldSelector))
        .map(hostJson);
    },
    listByIndex: (kind: Gvk, index: string, value: string): string[] => {
      this.checkRead(kind, 'list');
      const declared = this.registration?.indexes.find((i) => i.name === index);
      if (!declared) {
        throw hostError('invalid', 400, 'BadRequest', `no index '${index}' is declared`);
      }
      return this.store
        .all(kind)
        .filter((o) => fieldAt(o, declared.field) === value)
        .map(hostJson);
    },
    create: (obj: string): string => this.sendObject('create', obj, (parsed) => this.store.create(parsed)),
    update: (obj: string): string => this.sendObject('update', obj, (parsed) => this.store.update(parsed)),
    updateStatus: (obj: string): string =>
      this.sendObject('update-status', obj, (parsed) => this.store.updateStatus(parsed)),
    patch: (kind: Gvk, namespace: string, name: string, body: PatchBody): string =>
      this.sendPatch({ kind, namespace, name }, body, false),
    patchStatus: (kind: Gvk, namespace: string, name: string, body: PatchBody): string =>
      this.sendPatch({ kind, namespace, name }, body, true),
    delete: (kind: Gvk, namespace: string, name: string, options: DeleteOptions): void => {
      const target = { kind, namespace, name };
      this.send('delete', target, sentWrite('delete', target, deleteBody(options)), () => {
        this.store.delete(target, options.preconditions);
        return '';
      });
    },
    record: (about: { kind: Gvk; namespace: string; name: string }, type: 'normal' | 'warning', reason: string, message: string): void => {
      const gvk = { group: about.kind.group, version: about.kind.version, kind: about.kind.kind };
      this.events.push({ kind: formatGvk(gvk), gvk, namespace: about.namespace, name: about.name, type, reason, message });
    },
    log: (level: string, message: string, fields: [string, string][]): void => {
      this.logs.push({ level, message, fields: Object.fromEntries(fields) });
    },
  };

  /** Sends a create, update or status update of the object in the JSON text `json`. */
  private sendObject(call: 'create' | 'update' | 'update-status', json: string, perform: (obj: KubeObject) => KubeObject): string {
    const obj = parsed(json, 'object');
    if (!isMapping(obj) || !obj.apiVersion || !obj.kind || typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
      throw invalid('object has no apiVersion or kind');
    }
    const target = targetOf(obj);
    return this.send(call, target, sentWrite(call, target, fromJson(json)), () => hostJson(perform(obj)));
  }

  /** Sends a merge patch, JSON patch or apply of `target` or of its status. */
  private sendPatch(target: Target, body: PatchBody, status: boolean): string {
    const text = body.tag === 'apply' ? body.val.object : body.val;
    const patch = parsed(text, PATCH_NAMES[body.tag]);
    if (body.tag === 'json' ? !Array.isArray(patch) : !isMapping(patch)) {
      throw invalid(PATCH_SHAPES[body.tag]);
    }
    const write = sentWrite(PATCH_VERBS[body.tag], target, fromJson(text));
    write.status = status;
    write.force = body.tag === 'apply' && body.val.force;
    const call: WriteCall = status ? 'patch-status' : body.tag;
    return this.send(call, target, write, () => hostJson(this.store.patch(target, body.tag, patch, status)));
  }

  /**
   * Checks `write` against the declared permissions, records it, and answers it: with the
   * failure given for it, if any, or by performing it.
   */
  private send(call: WriteCall, target: Target, write: SentWrite, perform: () => string): string {
    this.checkWrite(target.kind, target.namespace, verbOf[call]);
    this.sent.push(write);
    const failure = this.failures.findIndex((f) => f.call === call);
    if (failure >= 0) {
      throw this.failures.splice(failure, 1)[0]!.error;
    }
    const result = perform();
    this.writes.push({ call, kind: formatGvk(target.kind), namespace: target.namespace, name: target.name });
    return result;
  }

  private checkRead(kind: Gvk, verb: plugin.Verb): void {
    const reg = this.registration;
    const implied = reg && [reg.primary, ...reg.owns, ...reg.watches.map((w) => w.kind)].some((k) => sameKind(k, kind));
    if (reg && !implied) {
      this.checkWrite(kind, '', verb);
    }
  }

  private checkWrite(kind: Gvk, namespace: string, verb: plugin.Verb): void {
    const reg = this.registration;
    const allowed = reg?.permissions.some(
      (p) => sameKind(p.kind, kind) && p.verbs.includes(verb) && (p.namespaces.length === 0 || !namespace || p.namespaces.includes(namespace)),
    );
    if (reg && !allowed) {
      const message = `plugin '${reg.name}' did not declare '${verb}' on ${formatGvk(kind)}`;
      const status = { code: 403, reason: 'Forbidden', message };
      throw witError({ tag: 'forbidden', val: ['declared-permissions', status] });
    }
  }
}

type PatchBody = Parameters<typeof client.patch>[3];
type DeleteOptions = Parameters<typeof client.delete>[3];

const PATCH_VERBS: Record<PatchBody['tag'], Verb> = { merge: 'merge-patch', json: 'json-patch', apply: 'apply' };
const PATCH_NAMES: Record<PatchBody['tag'], string> = { merge: 'merge patch', json: 'JSON patch', apply: 'applied object' };
const PATCH_SHAPES: Record<PatchBody['tag'], string> = {
  merge: 'a merge patch must be a JSON object',
  json: 'a JSON patch must be an array of operations',
  apply: 'an applied object must be a JSON object',
};
const PROPAGATION_POLICIES = { background: 'Background', foreground: 'Foreground', orphan: 'Orphan' } as const;

function invalid(message: string): Error {
  return hostError('invalid', 422, 'Invalid', message);
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The JSON text a guest sent, parsed; `invalid` when it is not JSON. */
function parsed(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalid(`${what} is not valid JSON: ${(err as Error).message}`);
  }
}

/** A write of `verb` to `target` sending `body`. */
function sentWrite(verb: Verb, { kind, namespace, name }: Target, body: unknown): SentWrite {
  return { verb, status: false, force: false, apiVersion: apiVersionOf(kind), kind: kind.kind, namespace, name, body };
}

/** A delete's options as its body: only those set, or `null`. */
function deleteBody({ preconditions, propagation }: DeleteOptions): unknown {
  const options = {
    uid: preconditions?.uid,
    resourceVersion: preconditions?.resourceVersion,
    propagationPolicy: propagation && PROPAGATION_POLICIES[propagation],
  };
  const set = Object.entries(options).filter(([, value]) => value !== undefined);
  return set.length ? Object.fromEntries(set) : null;
}

function sameKind(a: Gvk, b: Gvk): boolean {
  return a.group === b.group && a.version === b.version && a.kind === b.kind;
}

function fieldAt(obj: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], obj);
}

/** The fake host the test bundle's WIT imports call. */
export const host = new FakeHost();
