/**
 * How a reconcile ended, in a fixture's words: `done`, `error`, or `requeue-after <duration>` with
 * ` priority N` when it asked for one. Durations compare as durations, as `wasmop test` compares
 * them: an expected `requeue-after 5m` is met by a reconcile that asked for 300 seconds, whichever
 * way either is written (`300s`, `5m`, `0.5s`, `500ms`, `1m30s`, `1h`).
 */

/** Nanoseconds per unit. */
const UNITS: Record<string, number> = { ms: 1e6, h: 3.6e12, m: 6e10, s: 1e9 };
const PART = /(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)/gy;

/** Throws when `text` is not an outcome a fixture may state. */
export function checkOutcome(text: string): void {
  read(text);
}

/** Whether the outcome a fixture `expected` is the one a reconcile `got`: the same words, or the same requeue after the same duration at the same priority. */
export function sameOutcome(expected: string, got: string): boolean {
  try {
    return read(expected) === read(got);
  } catch {
    return expected === got;
  }
}

/** `text` as a comparable string: `done`, `error` or `requeue-after <nanoseconds> <priority>`. */
function read(text: string): string {
  const words = text.split(/\s+/).filter((word) => word !== '');
  if (words.length === 1 && (words[0] === 'done' || words[0] === 'error')) {
    return words[0];
  }
  if (words[0] === 'requeue-after' && (words.length === 2 || words.length === 4)) {
    const nanos = durationNanos(words[1]!);
    if (nanos !== undefined && words.length === 2) {
      return `requeue-after ${nanos}`;
    }
    if (nanos !== undefined && words[2] === 'priority' && /^[+-]?\d+$/.test(words[3]!)) {
      return `requeue-after ${nanos} ${Number(words[3])}`;
    }
  }
  throw new Error(
    `\`${text}\` is no outcome: done, error or requeue-after <duration> like 30s or 5m, then priority N if asked`,
  );
}

/** A duration like `300s`, `5m`, `1.5s` or `1m30s` in nanoseconds; undefined when it is none. */
function durationNanos(text: string): number | undefined {
  PART.lastIndex = 0;
  let [total, read] = [0, 0];
  for (let part = PART.exec(text); part !== null; part = PART.exec(text)) {
    total += Number(part[1]) * UNITS[part[2]!]!;
    read = PART.lastIndex;
  }
  return text !== '' && read === text.length ? Math.round(total) : undefined;
}
