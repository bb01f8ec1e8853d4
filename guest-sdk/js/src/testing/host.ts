/**
 * A fake wasmop host for unit tests under Node: the SDK's test bundler points the WIT imports at
 * {@link host}, so a plugin's `reconcile` runs against an in-memory store. Like the real host it
 * checks writes (and reads of undeclared kinds) against the registration given to
 * {@link FakeHost.reset}, records every write, event and log line, and can be told to fail the
 * next call of a kind of write.
 */
import { apiVersionOf, formatGvk, kindOf, type Gvk, type Kind } from '../kind.ts';
import { fromJson, toJson, type KubeObject } from '../object.ts';
import type { cache, client, events, logger, plugin, types } from '../raw.ts';
import type { Reconciler } from '../reconciler.ts';
import { mergePatch } from './merge.ts';
import { matchesFields, matchesLabels } from './selectors.ts';
import { hostError, Store, witError } from './store.ts';

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
    this.events.length = 0;
    this.logs.length = 0;
    this.failures = [];
    this.registration = reconciler?.registration;
  }

  /** Stores an object as if someone else created or changed it; returns it as stored. */
  put<T extends KubeObject>(obj: T): T {
    const { namespace = '', name = '' } = obj.metadata ?? {};
    const kind = kindOf(obj);
    return this.store.save(obj, this.store.find(kind, namespace, name)) as T;
  }

  /** The stored object, or undefined. */
  get<T extends KubeObject>(kind: Kind<T>, namespace: string, name: string): T | undefined {
    return this.store.find(kind, namespace, name) as T | undefined;
  }

  /** Makes the next `call` fail with the WIT error `error`, e.g. `{ tag: 'conflict', val: status }`. */
  failNext(call: WriteCall, error: types.Error): void {
    this.failures.push({ call, error: witError(error) });
  }

  /** The `wasmop:reconciler` imports, backed by this host. */
  readonly wit: typeof cache & typeof client & typeof events & typeof logger = {
    get: (kind: Gvk, namespace: string, name: string): string => {
      this.checkRead(kind, 'get');
      return toJson(this.store.get(kind, namespace, name));
    },
    list: (kind: Gvk, options: { namespace?: string; labelSelector?: string; fieldSelector?: string }): string[] => {
      this.checkRead(kind, 'list');
      return this.store
        .all(kind)
        .filter((o) => options.namespace === undefined || o.metadata?.namespace === options.namespace)
        .filter((o) => options.labelSelector === undefined || matchesLabels(o, options.labelSelector))
        .filter((o) => options.fieldSelector === undefined || matchesFields(o, options.fieldSelector))
        .map(toJson);
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
        .map(toJson);
    },
    create: (obj: string): string => {
      const parsed = fromJson<KubeObject>(obj);
      return this.write('create', parsed, () => this.store.create(parsed));
    },
    update: (obj: string): string => {
      const parsed = fromJson<KubeObject>(obj);
      return this.write('update', parsed, () => this.store.update(parsed));
    },
    updateStatus: (obj: string): string => {
      const parsed = fromJson<KubeObject>(obj);
      return this.write('update-status', parsed, () => this.store.updateStatus(parsed));
    },
    patch: (kind: Gvk, namespace: string, name: string, body: PatchBody): string =>
      this.patch(kind, namespace, name, body, false),
    patchStatus: (kind: Gvk, namespace: string, name: string, body: PatchBody): string =>
      this.patch(kind, namespace, name, body, true),
    delete: (kind: Gvk, namespace: string, name: string, options: { preconditions?: { uid?: string; resourceVersion?: string } }): void => {
      const target = { apiVersion: apiVersionOf(kind), kind: kind.kind, metadata: { namespace, name } };
      this.write('delete', target, () => {
        this.store.delete(kind, namespace, name, options.preconditions);
        return target;
      });
    },
    record: (about: { kind: Gvk; namespace: string; name: string }, type: 'normal' | 'warning', reason: string, message: string): void => {
      this.events.push({ kind: formatGvk(about.kind), namespace: about.namespace, name: about.name, type, reason, message });
    },
    log: (level: string, message: string, fields: [string, string][]): void => {
      this.logs.push({ level, message, fields: Object.fromEntries(fields) });
    },
  };

  private patch(kind: Gvk, namespace: string, name: string, body: PatchBody, status: boolean): string {
    const call: WriteCall = status ? 'patch-status' : body.tag;
    const target = { apiVersion: apiVersionOf(kind), kind: kind.kind, metadata: { namespace, name } };
    return this.write(call, target, () => {
      if (body.tag === 'json') {
        throw hostError('invalid', 415, 'UnsupportedMediaType', 'the fake host does not apply JSON patches');
      }
      const patch = body.tag === 'merge' ? JSON.parse(body.val) : JSON.parse(body.val.object);
      const current = body.tag === 'apply' ? this.store.find(kind, namespace, name) : this.store.get(kind, namespace, name);
      const merged = mergePatch(current ?? {}, patch) as KubeObject & { status?: unknown };
      const next = status ? { ...current, status: merged.status } : { ...merged, status: current?.status };
      return this.store.save(next, current);
    });
  }

  private write(call: WriteCall, obj: KubeObject, perform: () => KubeObject): string {
    const kind = kindOf(obj);
    const { namespace = '', name = '' } = obj.metadata ?? {};
    this.checkWrite(kind, namespace, verbOf[call]);
    const failure = this.failures.findIndex((f) => f.call === call);
    if (failure >= 0) {
      throw this.failures.splice(failure, 1)[0]!.error;
    }
    const result = perform();
    this.writes.push({ call, kind: formatGvk(kind), namespace, name });
    return toJson(result);
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

function sameKind(a: Gvk, b: Gvk): boolean {
  return a.group === b.group && a.version === b.version && a.kind === b.kind;
}

function fieldAt(obj: unknown, path: string): unknown {
  return path.split('.').reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], obj);
}

/** The fake host the test bundle's WIT imports call. */
export const host = new FakeHost();
