/**
 * Equality of JSON values, as the apiserver sees them: a key whose value is `undefined` is the
 * same as a missing key. Used to decide whether a write would change anything.
 */

/** Whether two JSON values are equal; `undefined`-valued keys count as absent. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return false;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => jsonEqual(item, b[i]))
    );
  }
  const left = definedKeys(a);
  const right = definedKeys(b);
  const rightObject = b as Record<string, unknown>;
  return (
    left.length === right.length &&
    left.every((key) => jsonEqual((a as Record<string, unknown>)[key], rightObject[key]))
  );
}

function definedKeys(obj: object): string[] {
  return Object.entries(obj)
    .filter(([, value]) => value !== undefined)
    .map(([key]) => key);
}
