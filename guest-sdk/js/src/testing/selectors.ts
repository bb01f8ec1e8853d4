/**
 * Label and field selectors for the fake host's `list`: label selectors with `=`, `==`, `!=`,
 * `key` and `!key` terms, field selectors on `metadata.name` and `metadata.namespace`.
 */
import type { KubeObject } from '../object.ts';

/** Whether `obj` matches every term of the label selector; throws on syntax the fake lacks. */
export function matchesLabels(obj: KubeObject, selector: string): boolean {
  const labels = obj.metadata?.labels ?? {};
  return terms(selector).every((term) => {
    const match = /^(!?)([^!=]+?)\s*(?:(==|=|!=)\s*(.*))?$/.exec(term);
    if (!match || (match[1] && match[3])) {
      throw new Error(`the fake host does not understand the label selector term '${term}'`);
    }
    const [, not, key, op, value] = match as unknown as [string, string, string, string?, string?];
    const present = key in labels;
    if (!op) {
      return not ? !present : present;
    }
    return op === '!=' ? labels[key] !== value : labels[key] === value;
  });
}

/** Whether `obj` matches every term of the field selector (metadata.name and metadata.namespace). */
export function matchesFields(obj: KubeObject, selector: string): boolean {
  return terms(selector).every((term) => {
    const [field, value] = term.split(/==?/, 2).map((s) => s.trim());
    if (field === 'metadata.name') {
      return obj.metadata?.name === value;
    }
    if (field === 'metadata.namespace') {
      return obj.metadata?.namespace === value;
    }
    throw new Error(`the fake host cannot select on the field '${term}'`);
  });
}

function terms(selector: string): string[] {
  return selector
    .split(',')
    .map((term) => term.trim())
    .filter(Boolean);
}
