/**
 * A set wall clock, as `wasmop test` sets the one a component's guest reads: inside
 * {@link atTime}, `Date.now()`, `new Date()` and `Date()` read the given time, so a reconcile that
 * stamps a time (a condition's lastTransitionTime) writes the same on every run; and local time is
 * UTC, as it is in a component.
 */
/** Runs `run` with the wall clock reading `time` (RFC 3339) in the UTC time zone, then gives both back. */
export function atTime<T>(time: string, run: () => T): T {
  const millis = millisOf(time);
  const [RealDate, zone] = [globalThis.Date, process.env.TZ];
  globalThis.Date = new Proxy(RealDate, {
    construct: (target, args, newTarget) => Reflect.construct(target, args.length ? args : [millis], newTarget),
    apply: () => new RealDate(millis).toString(),
    get: (target, key, receiver) => (key === 'now' ? () => millis : Reflect.get(target, key, receiver)),
  });
  process.env.TZ = 'UTC';
  try {
    return run();
  } finally {
    globalThis.Date = RealDate;
    restoreZone(zone);
  }
}

/** The time `time` (RFC 3339) stands for, in milliseconds after the epoch; throws if it is none. */
function millisOf(time: string): number {
  const millis = RFC3339.test(time) ? Date.parse(time) : NaN;
  if (Number.isNaN(millis)) {
    throw new Error(`\`${time}\` is not an RFC 3339 time like 2026-01-01T00:00:00Z`);
  }
  return millis;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function restoreZone(zone: string | undefined): void {
  if (zone === undefined) {
    delete process.env.TZ;
  } else {
    process.env.TZ = zone;
  }
}
