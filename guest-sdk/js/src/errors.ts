/**
 * Errors of cache reads and apiserver writes: one class per variant of the WIT `error`, all
 * extending {@link WasmopError}, so that `catch (e) { if (e instanceof NotFound) ... }` works.
 * Left uncaught in `reconcile`, any of them makes a retryable reconcile error.
 */
import type { types } from './raw.ts';

/** An HTTP status from the apiserver, or from the host speaking for it. */
export type Status = types.Status;

/** Who refused a forbidden call: the apiserver's RBAC or the plugin's declared permissions. */
export type DeniedBy = types.DeniedBy;

/** A failed cache read or apiserver write. */
export abstract class WasmopError extends Error {
  /** The WIT variant this error stands for, e.g. `not-found`. */
  abstract readonly variant: types.Error['tag'];
  /** The status the host reported. */
  readonly status: Status;

  /** An error summarised as `summary`, with the host's status. */
  constructor(summary: string, status: Status) {
    super(`${summary}: ${status.message} (${status.code} ${status.reason})`);
    this.status = status;
  }

  /** The HTTP status code, e.g. 404; 0 when there was no HTTP response. */
  get code(): number {
    return this.status.code;
  }

  /** The machine-readable reason, e.g. `NotFound`. */
  get reason(): string {
    return this.status.reason;
  }
}

/** The object does not exist (404). */
export class NotFound extends WasmopError {
  override readonly name = 'NotFound';
  readonly variant = 'not-found';
  constructor(status: Status) {
    super('not found', status);
  }
}

/** The write was based on a stale resourceVersion (409): re-read and retry. */
export class Conflict extends WasmopError {
  override readonly name = 'Conflict';
  readonly variant = 'conflict';
  constructor(status: Status) {
    super('conflict', status);
  }
}

/** An object with that name already exists (409). */
export class AlreadyExists extends WasmopError {
  override readonly name = 'AlreadyExists';
  readonly variant = 'already-exists';
  constructor(status: Status) {
    super('already exists', status);
  }
}

/** The call was not allowed (403), by the apiserver or by the plugin's declared permissions. */
export class Forbidden extends WasmopError {
  override readonly name = 'Forbidden';
  readonly variant = 'forbidden';
  /** Who refused the call. */
  readonly deniedBy: DeniedBy;
  constructor(deniedBy: DeniedBy, status: Status) {
    const by = deniedBy === 'apiserver' ? 'the apiserver' : "the plugin's declared permissions";
    super(`forbidden by ${by}`, status);
    this.deniedBy = deniedBy;
  }
}

/** The object or request was invalid (400, 422). */
export class Invalid extends WasmopError {
  override readonly name = 'Invalid';
  readonly variant = 'invalid';
  constructor(status: Status) {
    super('invalid', status);
  }
}

/** The call did not finish in time. */
export class Timeout extends WasmopError {
  override readonly name = 'Timeout';
  readonly variant = 'timeout';
  constructor(status: Status) {
    super('timed out', status);
  }
}

/** The apiserver or the cache is not available right now; retry later. */
export class Unavailable extends WasmopError {
  override readonly name = 'Unavailable';
  readonly variant = 'unavailable';
  constructor(status: Status) {
    super('unavailable', status);
  }
}

/** Anything else the host reported. */
export class Other extends WasmopError {
  override readonly name = 'Other';
  readonly variant = 'other';
  constructor(status: Status) {
    super('failed', status);
  }
}

/** The SDK error for a WIT `error` value. */
export function fromWit(err: types.Error): WasmopError {
  switch (err.tag) {
    case 'not-found':
      return new NotFound(err.val);
    case 'conflict':
      return new Conflict(err.val);
    case 'already-exists':
      return new AlreadyExists(err.val);
    case 'forbidden':
      return new Forbidden(err.val[0], err.val[1]);
    case 'invalid':
      return new Invalid(err.val);
    case 'timeout':
      return new Timeout(err.val);
    case 'unavailable':
      return new Unavailable(err.val);
    case 'other':
      return new Other(err.val);
  }
}

const variants = new Set<string>([
  'not-found',
  'conflict',
  'already-exists',
  'forbidden',
  'invalid',
  'timeout',
  'unavailable',
  'other',
]);

function isWitError(value: unknown): value is types.Error {
  return typeof value === 'object' && value !== null && variants.has((value as types.Error).tag);
}

/** Calls a host function, turning the WIT error it throws into a {@link WasmopError}. */
export function callHost<T>(call: () => T): T {
  try {
    return call();
  } catch (thrown) {
    const payload =
      typeof thrown === 'object' && thrown !== null && 'payload' in thrown
        ? thrown.payload
        : thrown;
    throw isWitError(payload) ? fromWit(payload) : thrown;
  }
}

/** The call's result, or `undefined` when it failed with {@link NotFound}. */
export function optional<T>(call: () => T): T | undefined {
  try {
    return call();
  } catch (err) {
    if (err instanceof NotFound) {
      return undefined;
    }
    throw err;
  }
}
