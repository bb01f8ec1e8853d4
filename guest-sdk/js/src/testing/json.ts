/** JSON as wasmop's host writes it: every object's keys in sorted order. */

/** `value` with the keys of every object in it sorted. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(sortedKeys);
  }
  if (typeof value !== 'object' || value === null) {
    return value;
  }
  const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([key, item]) => [key, sortedKeys(item)]));
}

/** The JSON text of `value`, keys sorted, as the host returns objects to a guest. */
export function hostJson(value: unknown): string {
  return JSON.stringify(sortedKeys(value));
}
