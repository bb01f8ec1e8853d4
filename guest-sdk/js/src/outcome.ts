/**
 * What a successful reconcile returns: {@link done}, or {@link requeueAfter} to look again later.
 * Returning nothing is the same as returning `done`.
 */
import type { plugin } from './raw.ts';

/** A successful reconcile. */
export type Outcome =
  | { readonly type: 'done' }
  | { readonly type: 'requeue-after'; readonly afterMs: number; readonly priority?: number };

/** Converged: nothing more to do until the next event. */
export const done: Outcome = Object.freeze({ type: 'done' });

/** Reconcile the same object again after `afterMs` milliseconds; a higher priority runs first. */
export function requeueAfter(afterMs: number, options: { priority?: number } = {}): Outcome {
  if (!Number.isFinite(afterMs) || afterMs < 0) {
    throw new RangeError(`requeueAfter needs a delay of 0 ms or more, got ${afterMs}`);
  }
  return { type: 'requeue-after', afterMs, priority: options.priority };
}

/** The WIT outcome of an SDK outcome. */
export function toWitOutcome(outcome: Outcome): plugin.Outcome {
  if (outcome.type === 'done') {
    return { tag: 'done' };
  }
  const after = BigInt(Math.round(outcome.afterMs));
  return { tag: 'requeue-after', val: { after, priority: outcome.priority } };
}
