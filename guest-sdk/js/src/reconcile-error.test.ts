import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Unavailable } from './errors.ts';
import { done, requeueAfter, toWitOutcome } from './outcome.ts';
import { Retryable, Terminal, toWitReconcileError } from './reconcile-error.ts';

test('terminal and retryable errors keep their kind and message', () => {
  assert.deepEqual(toWitReconcileError(new Terminal('bad spec')), { tag: 'terminal', val: 'bad spec' });
  assert.deepEqual(toWitReconcileError(new Retryable('later')), { tag: 'retryable', val: 'later' });
});

test('an uncaught SDK error is retryable with its message', () => {
  const err = new Unavailable({ code: 503, reason: 'ServiceUnavailable', message: 'apiserver down' });
  assert.deepEqual(toWitReconcileError(err), {
    tag: 'retryable',
    val: 'unavailable: apiserver down (503 ServiceUnavailable)',
  });
});

test('any other thrown value is retryable and named', () => {
  assert.deepEqual(toWitReconcileError(new TypeError('x is undefined')), {
    tag: 'retryable',
    val: 'TypeError: x is undefined',
  });
  assert.deepEqual(toWitReconcileError('oops'), { tag: 'retryable', val: 'thrown: oops' });
});

test('outcomes convert to their WIT variants with millisecond bigints', () => {
  assert.deepEqual(toWitOutcome(done), { tag: 'done' });
  assert.deepEqual(toWitOutcome(requeueAfter(2000, { priority: 3 })), {
    tag: 'requeue-after',
    val: { after: 2000n, priority: 3 },
  });
  assert.throws(() => requeueAfter(-1), RangeError);
});
