/**
 * The difference between what a fixture expects and what a plugin did, one line each, as `wasmop
 * test` reports it (the host's `testing/diff.rs`): the writes it sent and the events it recorded.
 *
 * Each pair of lists is aligned by target (for writes the verb, status, kind, key and force; for
 * events the type, reason and object) as a text diff aligns lines, so one write added or dropped
 * shows as that write alone; an aligned pair of writes differs field by field, by JSON pointer. A
 * write sent but not expected is explained against the closest expected write (one to the same
 * object by another verb), or else against the object the host held, whatever its verb. Fields the
 * host gave a fixture object that lacked them (uid, resourceVersion, generation) are not
 * differences where the expected write omits them too.
 */
import { jsonEqual } from '../equal.ts';
import type { KubeObject } from '../object.ts';
import { eventTarget, writeTarget, type FixtureEvent, type FixtureWrite } from './fixture.ts';
import { hostJson } from './json.ts';

/** The most differences reported for one write. */
const MAX_FIELD_DIFFERENCES = 20;
/** The longest JSON value quoted in a difference, in characters. */
const MAX_QUOTED = 120;
/** The largest expected × sent table aligned; longer lists are compared by position. */
const MAX_ALIGNED = 1 << 20;
/** The metadata the host gives a fixture object that lacks it. */
const ASSIGNED = ['uid', 'resourceVersion', 'generation'];

/** One step through the two lists: both name the same target, or one was expected or sent alone. */
type Step = { both: [number, number] } | { expected: number } | { sent: number };

type Mapping = Record<string, unknown>;

/** The objects a fixture's host held before the reconcile: as the fixture gives them, and as the host holds them, in the same order. */
export interface Cached {
  given: KubeObject[];
  held: KubeObject[];
}

/** A line for each difference between `expected` and `sent` writes; `cached` is what the host held before the reconcile. */
export function diffWrites(expected: FixtureWrite[], sent: FixtureWrite[], cached: Cached): string[] {
  const out: string[] = [];
  const steps = align(expected, sent, sameTarget);
  const unmatched = steps.flatMap((step) => ('expected' in step ? [step.expected] : []));
  for (const step of steps) {
    if ('both' in step) {
      const [e, s] = step.both;
      const fields: string[] = [];
      values('', expected[e]!.body, withoutAssigned(cached, sent[s]!, expected[e]!.body), fields);
      bounded(`write ${s} \`${writeTarget(sent[s]!)}\`: `, fields, out);
    } else if ('expected' in step) {
      out.push(`expected write ${step.expected} \`${writeTarget(expected[step.expected]!)}\`: not sent`);
    } else {
      const write = sent[step.sent]!;
      const prefix = `write ${step.sent} \`${writeTarget(write)}\`: `;
      const closest = unmatched.find((e) => sameObject(expected[e]!, write));
      const [summary, details] = unexpected(write, closest === undefined ? undefined : [closest, expected[closest]!], cached);
      out.push(`${prefix}sent, not expected${summary}`);
      bounded(prefix, details, out);
    }
  }
  return out;
}

/** A line for each difference between `expected` and `sent` events. */
export function diffEvents(expected: FixtureEvent[], sent: FixtureEvent[]): string[] {
  const out: string[] = [];
  for (const step of align(expected, sent, (a, b) => eventTarget(a) === eventTarget(b))) {
    if ('both' in step) {
      const [e, s] = step.both;
      if (expected[e]!.message !== sent[s]!.message) {
        const [want, got] = [quote(expected[e]!.message), quote(sent[s]!.message)];
        out.push(`event ${s} \`${eventTarget(sent[s]!)}\`: message: expected ${want}, recorded ${got}`);
      }
    } else if ('expected' in step) {
      out.push(`expected event ${step.expected} \`${eventTarget(expected[step.expected]!)}\`: not recorded`);
    } else {
      const event = sent[step.sent]!;
      out.push(`event ${step.sent} \`${eventTarget(event)}\`: recorded, not expected: ${quote(event.message)}`);
    }
  }
  return out;
}

/** Why `write`, sent but not expected, was not: a few words to follow "sent, not expected", and a line for each field that explains it. */
function unexpected(write: FixtureWrite, closest: [number, FixtureWrite] | undefined, cached: Cached): [string, string[]] {
  const out: string[] = [];
  if (closest !== undefined) {
    const [index, want] = closest;
    values('', want.body, write.body, out);
    const body = out.length > 0 ? ', whose body differs:' : ', with the same body';
    return [`; the closest expected is write ${index} \`${writeTarget(want)}\`${body}`, out];
  }
  const current = cachedObject(cached, write)?.[0];
  if (current === undefined) {
    const creates = write.verb === 'create' || write.verb === 'apply';
    return [creates ? '; the fixture holds no such object: it creates one' : '; the fixture holds no such object (the apiserver answers NotFound)', []];
  }
  let summary: string;
  switch (write.verb) {
    case 'delete':
      return [`; it deletes the cached object, at resourceVersion ${quote(current.metadata?.resourceVersion)}`, []];
    case 'update-status':
      setting('/status', isMapping(write.body) ? (write.body.status ?? null) : null, (current as Mapping).status ?? null, out);
      summary = "; against the cached object's status it changes";
      break;
    case 'json-patch':
      operations(write.body, current, out);
      summary = '; against the cached object its operations';
      break;
    case 'create':
      setting('', write.body, current, out);
      summary = '; the cached object exists already (the apiserver answers AlreadyExists), and it changes';
      break;
    default:
      setting('', write.body, current, out);
      summary = '; against the cached object it changes';
  }
  return [out.length > 0 ? `${summary}:` : `${summary} nothing`, out];
}

/** Adds a line to `out` for each operation of a JSON patch: the path it sets and what `current` held there, or what it removes, moves or copies. */
function operations(patch: unknown, current: unknown, out: string[]): void {
  for (const operation of Array.isArray(patch) ? (patch as Mapping[]) : []) {
    const [op, path] = [String(operation.op ?? ''), String(operation.path ?? '')];
    const [was, value] = [at(current, path), operation.value ?? null];
    if (op === 'add' || op === 'replace') {
      out.push(`${op} ${path} from ${quote(was)} to ${quote(value)}`);
    } else if (op === 'remove') {
      out.push(`remove ${path}, which was ${quote(was)}`);
    } else if (op === 'test') {
      out.push(`test ${path} is ${quote(value)}; it is ${quote(was)}`);
    } else {
      out.push(`${op} ${String(operation.from ?? '')} to ${path}`);
    }
  }
}

/** The value at JSON pointer `path` in `value`, null when there is none. */
function at(value: unknown, path: string): unknown {
  let found = value;
  for (const part of path === '' ? [] : path.split('/').slice(1)) {
    const key = part.replaceAll('~1', '/').replaceAll('~0', '~');
    if (isMapping(found) && Object.hasOwn(found, key)) {
      found = found[key];
    } else if (Array.isArray(found) && /^\d+$/.test(key) && Number(key) < found.length) {
      found = found[Number(key)];
    } else {
      return null;
    }
  }
  return found;
}

/** The object `write` targets, as the host held it and as the fixture gave it. */
function cachedObject(cached: Cached, write: FixtureWrite): [KubeObject, KubeObject] | undefined {
  for (let i = cached.given.length - 1; i >= 0; i--) {
    const obj = cached.given[i]!;
    const targets =
      obj.apiVersion === write.apiVersion &&
      obj.kind === write.kind &&
      (obj.metadata?.namespace ?? '') === write.namespace &&
      obj.metadata?.name === write.name;
    if (targets && cached.held[i] !== undefined) {
      return [cached.held[i]!, obj];
    }
  }
  return undefined;
}

/** `write`'s body without the metadata the host gave its target — fields the fixture's object lacked and `expected` omits too — when it carries the value the host gave. */
function withoutAssigned(cached: Cached, write: FixtureWrite, expected: unknown): unknown {
  const pair = cachedObject(cached, write);
  const body = write.body;
  if (pair === undefined || !isMapping(body) || !isMapping(body.metadata)) {
    return body;
  }
  const [held, given] = pair;
  const metadata: Mapping = { ...body.metadata };
  const meta = (obj: unknown, field: string): unknown => (isMapping(obj) && isMapping(obj.metadata) ? obj.metadata[field] : undefined);
  for (const field of ASSIGNED) {
    const stated = meta(given, field) !== undefined || meta(expected, field) !== undefined;
    if (!stated && Object.hasOwn(metadata, field) && jsonEqual(metadata[field], meta(held, field))) {
      delete metadata[field];
    }
  }
  return { ...body, metadata };
}

/** Whether `a` and `b` write the same object, by whatever verb. */
function sameObject(a: FixtureWrite, b: FixtureWrite): boolean {
  return a.apiVersion === b.apiVersion && a.kind === b.kind && a.namespace === b.namespace && a.name === b.name;
}

/** Adds `fields` to `out` after `prefix`, at most {@link MAX_FIELD_DIFFERENCES} of them. */
function bounded(prefix: string, fields: string[], out: string[]): void {
  for (const field of fields.slice(0, MAX_FIELD_DIFFERENCES)) {
    out.push(`${prefix}${field}`);
  }
  const hidden = fields.length - MAX_FIELD_DIFFERENCES;
  if (hidden > 0) {
    out.push(`${prefix}${hidden} more differences`);
  }
}

function sameTarget(a: FixtureWrite, b: FixtureWrite): boolean {
  return writeTarget(a) === writeTarget(b) && a.force === b.force;
}

/** The longest common subsequence of items that are the `same`, as steps through both lists in order. */
function align<T>(expected: T[], sent: T[], same: (a: T, b: T) => boolean): Step[] {
  const [n, m] = [expected.length, sent.length];
  if (n * m > MAX_ALIGNED) {
    return byPosition(n, m);
  }
  // common[i][j]: the longest common run of expected[i..] and sent[j..].
  const common = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      common[i]![j] = same(expected[i]!, sent[j]!)
        ? common[i + 1]![j + 1]! + 1
        : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
    }
  }
  const steps: Step[] = [];
  let [i, j] = [0, 0];
  while (i < n || j < m) {
    if (i < n && j < m && same(expected[i]!, sent[j]!)) {
      steps.push({ both: [i++, j++] });
    } else if (j < m && (i === n || common[i]![j + 1]! >= common[i + 1]![j]!)) {
      steps.push({ sent: j++ });
    } else {
      steps.push({ expected: i++ });
    }
  }
  return steps;
}

/** Steps pairing the lists by position, for lists too long to align. */
function byPosition(n: number, m: number): Step[] {
  return Array.from({ length: Math.max(n, m) }, (_, k): Step => {
    if (k < n && k < m) {
      return { both: [k, k] };
    }
    return k < n ? { expected: k } : { sent: k };
  });
}

function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Adds a line to `out` for each field where `expected` and `sent` differ, under the JSON pointer `path`. */
function values(path: string, expected: unknown, sent: unknown, out: string[]): void {
  if (isMapping(expected) && isMapping(sent)) {
    const keys = [...new Set([...Object.keys(expected), ...Object.keys(sent)])].sort();
    for (const key of keys) {
      const at = pointer(path, key);
      if (Object.hasOwn(expected, key) && Object.hasOwn(sent, key)) {
        values(at, expected[key], sent[key], out);
      } else if (Object.hasOwn(expected, key)) {
        out.push(`at ${at}: expected ${quote(expected[key])}, absent`);
      } else {
        out.push(`at ${at}: not expected, sent ${quote(sent[key])}`);
      }
    }
  } else if (Array.isArray(expected) && Array.isArray(sent) && expected.length === sent.length) {
    expected.forEach((item, index) => values(`${path}/${index}`, item, sent[index], out));
  } else if (!jsonEqual(expected, sent)) {
    out.push(`at ${path || '/'}: expected ${quote(expected)}, sent ${quote(sent)}`);
  }
}

/**
 * Adds a line to `out` for each leaf of `body` under `path` whose value `current` lacks or holds
 * otherwise; lists of one length are compared item by item, so fields the apiserver defaulted in
 * the cached object are no change.
 */
function setting(path: string, body: unknown, current: unknown, out: string[]): void {
  if (isMapping(body) && (isMapping(current) || current === null)) {
    for (const key of Object.keys(body).sort()) {
      const was = isMapping(current) && Object.hasOwn(current, key) ? current[key] : null;
      setting(pointer(path, key), body[key], was, out);
    }
  } else if (Array.isArray(body) && Array.isArray(current) && body.length === current.length) {
    body.forEach((item, index) => setting(`${path}/${index}`, item, current[index], out));
  } else if (!jsonEqual(body, current)) {
    out.push(`${path || '/'} from ${quote(current)} to ${quote(body)}`);
  }
}

/** `path` extended by `key`, escaped as JSON pointers escape. */
function pointer(path: string, key: string): string {
  return `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/** `value` as compact JSON with sorted keys, cut to {@link MAX_QUOTED} characters. */
function quote(value: unknown): string {
  const characters = Array.from(hostJson(value) ?? 'null');
  return characters.length > MAX_QUOTED ? `${characters.slice(0, MAX_QUOTED).join('')}…` : characters.join('');
}
