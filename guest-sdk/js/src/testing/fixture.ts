/**
 * The fixture format of `wasmop test`: one reconcile's world and what it should do, as a YAML (or
 * JSON) file. The objects the cache holds, the time the guest reads, the request, and the outcome
 * and writes expected; see the host's `testing/fixture.rs` for the reference.
 *
 * ```yaml
 * name: a new WebApp gets its Deployment        # optional; the file's name otherwise
 * now: 2026-01-01T00:00:00Z                     # the guest's wall clock; this when absent
 * objects:                                      # what the cache holds before the reconcile
 *   - {apiVersion: example.wasmop.dev/v1, kind: WebApp, metadata: {namespace: shop, name: web}}
 * request: {namespace: shop, name: web}         # a key of the plugin's primary kind
 * expect:
 *   outcome: done                               # done | requeue-after 30s | error; unchecked if absent
 *   writes:                                     # every write, in order; none if absent
 *     - {verb: apply, force: true, apiVersion: apps/v1, kind: Deployment, namespace: shop, name: web, body: {...}}
 *   events:                                     # every event, in order; unchecked if absent
 *     - {type: Normal, reason: Created, message: Created Deployment shop/web, regarding: {apiVersion: example.wasmop.dev/v1, kind: WebApp, namespace: shop, name: web}}
 * ```
 *
 * An outcome's duration compares as a duration: an expected `requeue-after 5m` is met by `300s`.
 */
import { readFileSync } from 'node:fs';

import { parse } from 'yaml';

import type { KubeObject, ObjectKey } from '../object.ts';
import { checkOutcome } from './outcome.ts';

/** The time a fixture's guest reads when the fixture names none. */
export const DEFAULT_NOW = '2026-01-01T00:00:00Z';

/** What a write does, as fixtures name it. */
export type Verb = 'create' | 'update' | 'update-status' | 'merge-patch' | 'json-patch' | 'apply' | 'delete';

const VERBS: readonly Verb[] = ['create', 'update', 'update-status', 'merge-patch', 'json-patch', 'apply', 'delete'];

/** An error the fake apiserver answers a write with instead of applying it. */
export interface Rejection {
  /** `Conflict`, `AlreadyExists`, `NotFound`, `Forbidden`, `Invalid`, `Timeout`, `ServiceUnavailable` or another. */
  reason: string;
  /** The error's message. */
  message: string;
}

/** One write, as a fixture states it. */
export interface FixtureWrite {
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
  /** The error the apiserver answers it with, if any; given as the answer, never compared. */
  rejected?: Rejection;
}

/** The object an event is about. */
export interface Regarding {
  apiVersion: string;
  kind: string;
  /** Empty for a cluster-scoped kind. */
  namespace: string;
  name: string;
}

/** One event, as a fixture states it. */
export interface FixtureEvent {
  type: 'Normal' | 'Warning';
  /** A short CamelCase reason. */
  reason: string;
  /** A sentence for people. */
  message: string;
  /** The object it is about. */
  regarding: Regarding;
}

/** What a reconcile should do. */
export interface Expected {
  /** `done`, `requeue-after <duration>[ priority N]` or `error`; not checked when absent. */
  outcome?: string;
  /** Every write, in the order sent. */
  writes: FixtureWrite[];
  /** Every event, in the order recorded; not checked when absent. */
  events?: FixtureEvent[];
}

/** One reconcile: the objects cached before it, the time, its request and what it should do. */
export interface Fixture {
  /** What it shows: its `name`, or where it came from. */
  name: string;
  /** Where it came from: its file, or `fixture text`. */
  source: string;
  /** The time the guest's wall clock reads (RFC 3339). */
  now: string;
  /** The objects in the cache (and the fake apiserver) before the reconcile. */
  objects: KubeObject[];
  /** The key reconciled, of the plugin's primary kind. */
  request: ObjectKey;
  /** The outcome and writes expected. */
  expect: Expected;
}

/** A fixture that could not be read or is not a fixture; the message names its source. */
export class FixtureError extends Error {
  override readonly name = 'FixtureError';
}

type Mapping = Record<string, unknown>;

const TOP_FIELDS = ['name', 'now', 'objects', 'request', 'expect'];
const REQUEST_FIELDS = ['namespace', 'name'];
const EXPECT_FIELDS = ['outcome', 'writes', 'events'];
const EVENT_FIELDS = ['type', 'reason', 'message', 'regarding'];
const REGARDING_FIELDS = ['apiVersion', 'kind', 'namespace', 'name'];
const EVENT_TYPES = ['Normal', 'Warning'];
const WRITE_FIELDS = ['verb', 'status', 'force', 'apiVersion', 'kind', 'namespace', 'name', 'body', 'rejected'];
const REJECTION_FIELDS = ['reason', 'message'];
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Reads the fixture in the file `path`. */
export function loadFixture(path: string): Fixture {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new FixtureError(`reading fixture ${path}: ${(err as Error).message}`);
  }
  return parseFixture(text, path);
}

/** Reads a fixture from YAML or JSON `text`; `source` names it in messages and stands in for its name. */
export function parseFixture(text: string, source = 'fixture text'): Fixture {
  try {
    return fixtureOf(yaml(text), source);
  } catch (err) {
    throw new FixtureError(`fixture ${source}: ${(err as Error).message}`);
  }
}

/** `verb[ (status)] apiVersion kind namespace/name`: the target of a write, to name it in a report. */
export function writeTarget(write: FixtureWrite): string {
  const status = write.status ? ' (status)' : '';
  const key = write.namespace ? `${write.namespace}/${write.name}` : write.name;
  return `${write.verb}${status} ${write.apiVersion} ${write.kind} ${key}`;
}

/** `type reason apiVersion kind namespace/name`: an event, to name it in a report. */
export function eventTarget(event: FixtureEvent): string {
  const { apiVersion, kind, namespace, name } = event.regarding;
  return `${event.type} ${event.reason} ${apiVersion} ${kind} ${namespace ? `${namespace}/${name}` : name}`;
}

/** The time `time` (RFC 3339) stands for, in milliseconds after the epoch; throws if it is none or before 1970. */
export function millisOf(time: string): number {
  const millis = RFC3339.test(time) ? Date.parse(time.replace(' ', 'T')) : NaN;
  if (Number.isNaN(millis)) {
    throw new Error(`\`${time}\` is not an RFC 3339 time like ${DEFAULT_NOW}`);
  }
  if (millis < 0) {
    throw new Error(`\`${time}\` is before 1970`);
  }
  return millis;
}

function yaml(text: string): unknown {
  try {
    return parse(text) ?? {};
  } catch (err) {
    throw new Error(`not valid YAML: ${(err as Error).message}`);
  }
}

function fixtureOf(value: unknown, source: string): Fixture {
  const top = mapping(value, 'the fixture', TOP_FIELDS);
  const now = optionalText(top, 'now', 'the fixture') ?? DEFAULT_NOW;
  try {
    millisOf(now);
  } catch (err) {
    throw new Error(`now: ${(err as Error).message}`);
  }
  if (top.request === undefined) {
    throw new Error('missing field `request`');
  }
  return {
    name: optionalText(top, 'name', 'the fixture') ?? source,
    source,
    now,
    objects: sequence(top, 'objects', 'the fixture').map(objectOf),
    request: requestOf(top.request),
    expect: expectOf(top.expect ?? {}),
  };
}

function objectOf(value: unknown, index: number): KubeObject {
  const obj = value as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } } | null;
  const named = [obj?.apiVersion, obj?.kind, obj?.metadata?.name].every((field) => typeof field === 'string');
  if (!isMapping(value) || !named) {
    throw new Error(`objects[${index}] has no apiVersion, kind or metadata.name`);
  }
  return value as KubeObject;
}

function requestOf(value: unknown): ObjectKey {
  const request = mapping(value, 'request', REQUEST_FIELDS);
  return { namespace: optionalText(request, 'namespace', 'request') ?? '', name: text(request, 'name', 'request') };
}

function expectOf(value: unknown): Expected {
  const expect = mapping(value, 'expect', EXPECT_FIELDS);
  const writes = sequence(expect, 'writes', 'expect').map((write, i) => writeOf(write, `expect.writes[${i}]`));
  const outcome = optionalText(expect, 'outcome', 'expect');
  const parsed: Expected = { writes };
  if (outcome !== undefined) {
    try {
      checkOutcome(outcome);
    } catch (err) {
      throw new Error(`expect.outcome: ${(err as Error).message}`);
    }
    parsed.outcome = outcome;
  }
  if (expect.events !== undefined && expect.events !== null) {
    parsed.events = sequence(expect, 'events', 'expect').map((event, i) => eventOf(event, `expect.events[${i}]`));
  }
  return parsed;
}

function eventOf(value: unknown, where: string): FixtureEvent {
  const event = mapping(value, where, EVENT_FIELDS);
  const type = text(event, 'type', where);
  if (!EVENT_TYPES.includes(type)) {
    throw new Error(`${where}.type: unknown event type \`${type}\`, expected one of ${EVENT_TYPES.join(', ')}`);
  }
  if (event.regarding === undefined) {
    throw new Error(`${where}: missing field \`regarding\``);
  }
  const about = mapping(event.regarding, `${where}.regarding`, REGARDING_FIELDS);
  const at = `${where}.regarding`;
  return {
    type: type as FixtureEvent['type'],
    reason: text(event, 'reason', where),
    message: text(event, 'message', where),
    regarding: {
      apiVersion: text(about, 'apiVersion', at),
      kind: text(about, 'kind', at),
      namespace: optionalText(about, 'namespace', at) ?? '',
      name: text(about, 'name', at),
    },
  };
}

function writeOf(value: unknown, where: string): FixtureWrite {
  const write = mapping(value, where, WRITE_FIELDS);
  const verb = text(write, 'verb', where);
  if (!VERBS.includes(verb as Verb)) {
    throw new Error(`${where}.verb: unknown verb \`${verb}\`, expected one of ${VERBS.join(', ')}`);
  }
  const parsed: FixtureWrite = {
    verb: verb as Verb,
    status: flag(write, 'status', where),
    force: flag(write, 'force', where),
    apiVersion: text(write, 'apiVersion', where),
    kind: text(write, 'kind', where),
    namespace: optionalText(write, 'namespace', where) ?? '',
    name: text(write, 'name', where),
    body: write.body ?? null,
  };
  if (write.rejected !== undefined && write.rejected !== null) {
    parsed.rejected = rejectionOf(write.rejected, `${where}.rejected`);
  }
  return parsed;
}

function rejectionOf(value: unknown, where: string): Rejection {
  const rejection = mapping(value, where, REJECTION_FIELDS);
  return { reason: text(rejection, 'reason', where), message: optionalText(rejection, 'message', where) ?? '' };
}

function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `value` as a mapping with no fields but `fields`. */
function mapping(value: unknown, where: string, fields: readonly string[]): Mapping {
  if (!isMapping(value)) {
    throw new Error(`${where} must be a mapping, got ${JSON.stringify(value)}`);
  }
  const unknown = Object.keys(value).find((key) => !fields.includes(key));
  if (unknown !== undefined) {
    throw new Error(`unknown field \`${unknown}\` in ${where}, expected one of ${fields.join(', ')}`);
  }
  return value;
}

function optionalText(from: Mapping, key: string, where: string): string | undefined {
  const value = from[key];
  if (value === undefined || value === null) {
    return undefined;
  }
  if (typeof value !== 'string') {
    throw new Error(`${where}: \`${key}\` must be a string, got ${JSON.stringify(value)}`);
  }
  return value;
}

function text(from: Mapping, key: string, where: string): string {
  const value = optionalText(from, key, where);
  if (value === undefined) {
    throw new Error(`${where}: missing field \`${key}\``);
  }
  return value;
}

function flag(from: Mapping, key: string, where: string): boolean {
  const value = from[key] ?? false;
  if (typeof value !== 'boolean') {
    throw new Error(`${where}: \`${key}\` must be true or false, got ${JSON.stringify(value)}`);
  }
  return value;
}

function sequence(from: Mapping, key: string, where: string): unknown[] {
  const value = from[key] ?? [];
  if (!Array.isArray(value)) {
    throw new Error(`${where}: \`${key}\` must be a list, got ${JSON.stringify(value)}`);
  }
  return value;
}
