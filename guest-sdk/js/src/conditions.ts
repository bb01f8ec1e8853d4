/**
 * Status conditions in the standard `metav1.Condition` shape: set one so that its
 * lastTransitionTime moves only when its status does, which keeps a converged status stable.
 */
import type { Condition } from 'kubernetes-types/meta/v1';

import { jsonEqual } from './equal.ts';

export type { Condition };

/** The wall clock at the one-second precision the apiserver stores times with (RFC 3339, UTC). */
export function now(): string {
  const seconds = Math.floor(Date.now() / 1000);
  return new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
}

/** A condition of type `type` with status `True` or `False`, transitioned now. */
export function condition(type: string, status: boolean, reason: string, message: string): Condition {
  return {
    type,
    status: status ? 'True' : 'False',
    reason,
    message,
    lastTransitionTime: now(),
  };
}

/** The condition of type `type`, if present. */
export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether the condition of type `type` is present with status `True`. */
export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/**
 * Sets `condition` in `conditions`, replacing the one of the same type. When the status is
 * unchanged the old lastTransitionTime is kept. Returns whether anything else changed.
 */
export function setCondition(conditions: Condition[], condition: Condition): boolean {
  const index = conditions.findIndex((c) => c.type === condition.type);
  if (index < 0) {
    conditions.push(condition);
    return true;
  }
  const existing = conditions[index]!;
  const updated =
    existing.status === condition.status
      ? { ...condition, lastTransitionTime: existing.lastTransitionTime }
      : condition;
  conditions[index] = updated;
  return !jsonEqual(existing, updated);
}
