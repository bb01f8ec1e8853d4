/**
 * A failed reconcile: {@link Retryable} is retried by the host with per-key exponential backoff,
 * {@link Terminal} is not (the next event on the object reconciles it again). Any other error
 * thrown out of `reconcile`, an SDK error included, counts as retryable.
 */
import { WasmopError } from './errors.ts';
import type { plugin } from './raw.ts';

/** A failed reconcile; throw a {@link Retryable} or a {@link Terminal}. */
export abstract class ReconcileError extends Error {
  /** Whether the host will not retry this failure. */
  abstract readonly terminal: boolean;
}

/** A failure the host retries with per-key exponential backoff. */
export class Retryable extends ReconcileError {
  override readonly name = 'Retryable';
  readonly terminal = false;
}

/** A failure the host does not retry; the next event on the object reconciles it again. */
export class Terminal extends ReconcileError {
  override readonly name = 'Terminal';
  readonly terminal = true;
}

/** The WIT reconcile error for anything thrown out of `reconcile`. */
export function toWitReconcileError(thrown: unknown): plugin.ReconcileError {
  if (thrown instanceof ReconcileError) {
    return { tag: thrown.terminal ? 'terminal' : 'retryable', val: thrown.message };
  }
  if (thrown instanceof WasmopError) {
    return { tag: 'retryable', val: thrown.message };
  }
  if (thrown instanceof Error) {
    return { tag: 'retryable', val: `${thrown.name}: ${thrown.message}` };
  }
  return { tag: 'retryable', val: `thrown: ${String(thrown)}` };
}

