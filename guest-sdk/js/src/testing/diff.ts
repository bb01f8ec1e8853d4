/**
 * The difference between the writes a fixture expects and those a plugin sent, one line each, as
 * `wasmop test` reports it (the host's `testing/diff.rs`).
 *
 * The two lists are aligned by target (verb, status, kind, key and force) as a text diff aligns
 * lines, so one write added or dropped shows as that write alone; an aligned pair differs field by
 * field, by JSON pointer. A write sent but not expected is explained by what it would change in
 * the object as the fixture cached it.
 */
import { jsonEqual } from '../equal.ts';
import type { KubeObject } from '../object.ts';
import { writeTarget, type FixtureWrite } from './fixture.ts';
import { hostJson } from './json.ts';

/** The most differences reported for one write. */
const MAX_FIELD_DIFFERENCES = 20;
/** The longest JSON value quoted in a difference, in characters. */
const MAX_QUOTED = 120;
/** The largest expected × sent table aligned; longer lists are compared by position. */
const MAX_ALIGNED = 1 << 20;

/** One step through the two lists: both name the same target, or one was expected or sent alone. */
type Step = { both: [number, number] } | { expected: number } | { sent: number };

type Mapping = Record<string, unknown>;

/** A line for each difference between `expected` and `sent` writes; `objects` are the fixture's cached objects. */
export function diffWrites(expected: FixtureWrite[], sent: FixtureWrite[], objects: KubeObject[]): string[] {
  const out: string[] = [];
  for (const step of align(expected, sent)) {
    if ('both' in step) {
      const [e, s] = step.both;
      const fields: string[] = [];
      values('', expected[e]!.body, sent[s]!.body, fields);
      bounded(`write ${s} \`${writeTarget(sent[s]!)}\`: `, fields, out);
    } else if ('expected' in step) {
      out.push(`expected write ${step.expected} \`${writeTarget(expected[step.expected]!)}\`: not sent`);
    } else {
      const write = sent[step.sent]!;
      const prefix = `write ${step.sent} \`${writeTarget(write)}\`: `;
      const current = explained(write) ? cached(write, objects) : undefined;
      if (current === undefined) {
        out.push(`${prefix}sent, not expected`);
      } else {
        out.push(`${prefix}sent, not expected; against the cached object it changes:`);
        const changes: string[] = [];
        setting('', write.body, current, changes);
        bounded(prefix, changes, out);
      }
    }
  }
  return out;
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

/** The longest common subsequence of targets, as steps through both lists in order. */
function align(expected: FixtureWrite[], sent: FixtureWrite[]): Step[] {
  const [n, m] = [expected.length, sent.length];
  if (n * m > MAX_ALIGNED) {
    return byPosition(n, m);
  }
  // common[i][j]: the longest common run of expected[i..] and sent[j..].
  const common = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      common[i]![j] = sameTarget(expected[i]!, sent[j]!)
        ? common[i + 1]![j + 1]! + 1
        : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
    }
  }
  const steps: Step[] = [];
  let [i, j] = [0, 0];
  while (i < n || j < m) {
    if (i < n && j < m && sameTarget(expected[i]!, sent[j]!)) {
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

/** Whether a write sent but not expected is explained field by field: an apply, merge patch or update. */
function explained(write: FixtureWrite): boolean {
  return write.verb === 'apply' || write.verb === 'merge-patch' || write.verb === 'update';
}

/** The cached object `write` targets, if the fixture holds it. */
function cached(write: FixtureWrite, objects: KubeObject[]): KubeObject | undefined {
  return objects.find(
    (obj) =>
      obj.apiVersion === write.apiVersion &&
      obj.kind === write.kind &&
      (obj.metadata?.namespace ?? '') === write.namespace &&
      obj.metadata?.name === write.name,
  );
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
