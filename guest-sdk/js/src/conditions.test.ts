import assert from 'node:assert/strict';
import { test } from 'node:test';

import { condition, isConditionTrue, now, setCondition, type Condition } from './conditions.ts';

function at(second: number, status: boolean, reason: string): Condition {
  const time = new Date(second * 1000).toISOString().replace('.000Z', 'Z');
  return { ...condition('Ready', status, reason, ''), lastTransitionTime: time };
}

test('setCondition adds a missing condition', () => {
  const conditions: Condition[] = [];
  assert.equal(setCondition(conditions, at(10, true, 'Available')), true);
  assert.deepEqual(conditions, [at(10, true, 'Available')]);
});

test('the same status keeps the transition time and reports no change', () => {
  const conditions = [at(10, true, 'Available')];
  assert.equal(setCondition(conditions, at(20, true, 'Available')), false);
  assert.deepEqual(conditions, [at(10, true, 'Available')]);
});

test('the same status with a new reason keeps the transition time', () => {
  const conditions = [at(10, false, 'Progressing')];
  assert.equal(setCondition(conditions, at(20, false, 'Scaling')), true);
  assert.deepEqual(conditions, [at(10, false, 'Scaling')]);
});

test('a status change bumps the transition time', () => {
  const conditions = [at(10, false, 'Progressing')];
  assert.equal(setCondition(conditions, at(20, true, 'Available')), true);
  assert.deepEqual(conditions, [at(20, true, 'Available')]);
  assert.equal(isConditionTrue(conditions, 'Ready'), true);
});

test('other condition types are left alone', () => {
  const other = { ...at(5, false, 'Fine'), type: 'Degraded' };
  const conditions = [other];
  setCondition(conditions, at(10, true, 'Available'));
  assert.deepEqual(conditions[0], other);
  assert.equal(conditions.length, 2);
});

test('now has whole seconds in RFC 3339 UTC', () => {
  assert.match(now(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});
