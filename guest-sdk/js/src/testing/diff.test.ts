import assert from 'node:assert/strict';
import { test } from 'node:test';

import { diffWrites, type Cached } from './diff.ts';
import type { FixtureWrite } from './fixture.ts';

function apply(name: string, body: unknown): FixtureWrite {
  return { verb: 'apply', status: false, force: true, apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name, body };
}

const WEB = 'write 0 `apply apps/v1 Deployment shop/web`: ';
const NONE: Cached = { given: [], held: [] };

test('bodies differ field by field, by JSON pointer', () => {
  const want = { spec: { replicas: 3, paused: false }, metadata: { labels: { 'a/b': '1' } } };
  const got = { spec: { replicas: 2 }, metadata: { labels: { 'a/b': '1', c: '2' } } };
  assert.deepEqual(diffWrites([apply('web', want)], [apply('web', got)], NONE), [
    `${WEB}at /metadata/labels/c: not expected, sent "2"`,
    `${WEB}at /spec/paused: expected false, absent`,
    `${WEB}at /spec/replicas: expected 3, sent 2`,
  ]);
  assert.deepEqual(diffWrites([apply('web', { a: [1, 2] })], [apply('web', { a: [1] })], NONE), [
    `${WEB}at /a: expected [1,2], sent [1]`,
  ]);
});

test('an added or dropped write shows alone; force is part of the target', () => {
  const [web, api, db] = [apply('web', {}), apply('api', {}), apply('db', {})];
  assert.deepEqual(diffWrites([web, db], [web, api, db], NONE), [
    'write 1 `apply apps/v1 Deployment shop/api`: sent, not expected; the fixture holds no such object: it creates one',
  ]);
  assert.deepEqual(diffWrites([web, api, db], [web, db], NONE), [
    'expected write 1 `apply apps/v1 Deployment shop/api`: not sent',
  ]);
  assert.deepEqual(diffWrites([web], [{ ...web, force: false }], NONE), [
    `${WEB}sent, not expected; the closest expected is write 0 \`apply apps/v1 Deployment shop/web\`, with the same body`,
    'expected write 0 `apply apps/v1 Deployment shop/web`: not sent',
  ]);
});

test('a write not expected is explained against the cached object', () => {
  const cached = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { namespace: 'shop', name: 'web', annotations: { by: 'v1' } },
    spec: { replicas: 2 },
  };
  const body = { metadata: { annotations: { by: 'v2' } }, spec: { replicas: 2 } };
  assert.deepEqual(diffWrites([], [apply('web', body)], { given: [cached], held: [cached] }), [
    `${WEB}sent, not expected; against the cached object it changes:`,
    `${WEB}/metadata/annotations/by from "v1" to "v2"`,
  ]);
});

test('long lists are compared by position, many differences and long values are cut', () => {
  const many = Array.from({ length: 1025 }, (_, i) => apply(`d${i}`, { n: i }));
  const byPosition = diffWrites(many, [apply('first', { n: -1 }), ...many], NONE);
  assert.equal(byPosition.length, 1026);
  assert.equal(byPosition[0], 'write 0 `apply apps/v1 Deployment shop/first`: at /n: expected 0, sent -1');
  const wide = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`k${String(i).padStart(2, '0')}`, i]));
  const lines = diffWrites([apply('web', {})], [apply('web', wide)], NONE);
  assert.equal(lines.length, 21);
  assert.equal(lines[20], `${WEB}5 more differences`);
  const [long] = diffWrites([apply('web', { x: 'y' })], [apply('web', { x: 'x'.repeat(500) })], NONE);
  assert.equal(long, `${WEB}at /x: expected "y", sent "${'x'.repeat(119)}…`);
});
