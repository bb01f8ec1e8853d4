import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  AlreadyExists,
  Conflict,
  Forbidden,
  Invalid,
  NotFound,
  Other,
  Timeout,
  Unavailable,
  WasmopError,
  callHost,
  fromWit,
  optional,
} from './errors.ts';
import type { types } from './raw.ts';

function status(code: number, reason: string): types.Status {
  return { code, reason, message: `${reason} happened` };
}

test('every WIT error maps to its own class', () => {
  const cases: [types.Error, Function, string][] = [
    [{ tag: 'not-found', val: status(404, 'NotFound') }, NotFound, 'not found'],
    [{ tag: 'conflict', val: status(409, 'Conflict') }, Conflict, 'conflict'],
    [{ tag: 'already-exists', val: status(409, 'AlreadyExists') }, AlreadyExists, 'already exists'],
    [
      { tag: 'forbidden', val: ['declared-permissions', status(403, 'Forbidden')] },
      Forbidden,
      "forbidden by the plugin's declared permissions",
    ],
    [{ tag: 'invalid', val: status(422, 'Invalid') }, Invalid, 'invalid'],
    [{ tag: 'timeout', val: status(504, 'Timeout') }, Timeout, 'timed out'],
    [{ tag: 'unavailable', val: status(503, 'ServiceUnavailable') }, Unavailable, 'unavailable'],
    [{ tag: 'other', val: status(0, '') }, Other, 'failed'],
  ];
  for (const [wit, cls, prefix] of cases) {
    const err = fromWit(wit);
    assert.ok(err instanceof cls, `${wit.tag} -> ${err.name}`);
    assert.ok(err instanceof WasmopError);
    assert.equal(err.variant, wit.tag);
    assert.equal(err.code, wit.tag === 'forbidden' ? wit.val[1].code : wit.val.code);
    assert.ok(err.message.startsWith(prefix), err.message);
  }
});

test('forbidden keeps who denied it', () => {
  const err = fromWit({ tag: 'forbidden', val: ['apiserver', status(403, 'Forbidden')] });
  assert.ok(err instanceof Forbidden);
  assert.equal(err.deniedBy, 'apiserver');
  assert.equal(err.reason, 'Forbidden');
  assert.equal(err.message, 'forbidden by the apiserver: Forbidden happened (403 Forbidden)');
});

test('callHost turns a thrown WIT error, wrapped in payload or not, into an SDK error', () => {
  const wrapped = Object.assign(new Error('x'), { payload: { tag: 'conflict', val: status(409, 'Conflict') } });
  assert.throws(() => callHost(() => { throw wrapped; }), Conflict);
  const bare = { tag: 'timeout', val: status(504, 'Timeout') };
  assert.throws(() => callHost(() => { throw bare; }), Timeout);
  const bug = new TypeError('not a host error');
  assert.throws(() => callHost(() => { throw bug; }), (e) => e === bug);
});

test('optional turns only NotFound into undefined', () => {
  assert.equal(optional(() => { throw new NotFound(status(404, 'NotFound')); }), undefined);
  assert.equal(optional(() => 7), 7);
  assert.throws(() => optional(() => { throw new Conflict(status(409, 'Conflict')); }), Conflict);
});
