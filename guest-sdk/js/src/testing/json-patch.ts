/** JSON patch (RFC 6902), as the fake apiserver applies JSON patches. */
import { jsonEqual } from '../equal.ts';

type Container = Record<string, unknown> | unknown[];

interface Operation {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

/** `document` with `operations` applied in order; throws, leaving `document` as it was, when one fails. */
export function jsonPatch(document: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) {
    throw new Error('a JSON patch must be an array of operations');
  }
  return operations.reduce<unknown>(
    (doc, operation, index) => applyOperation(doc, operationOf(operation, index), index),
    structuredClone(document),
  );
}

function operationOf(value: unknown, index: number): Operation {
  const op = value as Partial<Operation> | null;
  if (typeof op?.op !== 'string' || typeof op.path !== 'string') {
    throw new Error(`operation ${index} needs an op and a path`);
  }
  if ((op.op === 'move' || op.op === 'copy') && typeof op.from !== 'string') {
    throw new Error(`operation ${index} (${op.op}) needs a from`);
  }
  if ((op.op === 'add' || op.op === 'replace' || op.op === 'test') && !('value' in op)) {
    throw new Error(`operation ${index} (${op.op}) needs a value`);
  }
  return op as Operation;
}

function applyOperation(doc: unknown, operation: Operation, index: number): unknown {
  const { op, path, from, value } = operation;
  const fail = (why: string) => new Error(`operation ${index} (${op} ${path}): ${why}`);
  switch (op) {
    case 'add':
      return add(doc, path, structuredClone(value), fail);
    case 'remove':
      return remove(doc, path, fail).doc;
    case 'replace':
      return add(remove(doc, path, fail).doc, path, structuredClone(value), fail);
    case 'move': {
      if (path.startsWith(`${from!}/`)) {
        throw fail(`cannot move ${from!} into itself`);
      }
      const removed = remove(doc, from!, fail);
      return add(removed.doc, path, removed.value, fail);
    }
    case 'copy':
      return add(doc, path, structuredClone(get(doc, from!, fail)), fail);
    case 'test':
      if (!jsonEqual(get(doc, path, fail), value)) {
        throw fail('the value differs');
      }
      return doc;
    default:
      throw fail('unknown op');
  }
}

/** The tokens of a JSON pointer. */
function tokens(path: string, fail: (why: string) => Error): string[] {
  if (path === '') {
    return [];
  }
  if (!path.startsWith('/')) {
    throw fail('a path starts with /');
  }
  return path
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isContainer(value: unknown): value is Container {
  return typeof value === 'object' && value !== null;
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return isContainer(value) && !Array.isArray(value);
}

/** The container a path's last token is in, and that token. */
function parentOf(doc: unknown, path: string, fail: (why: string) => Error): [Container, string] {
  const parts = tokens(path, fail);
  const last = parts.pop()!;
  const parent = parts.reduce<unknown>((value, token) => child(value, token, fail), doc);
  if (!isContainer(parent)) {
    throw fail('no such parent');
  }
  return [parent, last];
}

function child(value: unknown, token: string, fail: (why: string) => Error): unknown {
  if (Array.isArray(value)) {
    return value[index(value, token, false, fail)];
  }
  if (!isMapping(value) || !Object.hasOwn(value, token)) {
    throw fail(`no such member ${token}`);
  }
  return value[token];
}

/** The array index `token` names; `-` (past the end) and the length itself only when adding. */
function index(array: unknown[], token: string, adding: boolean, fail: (why: string) => Error): number {
  if (adding && token === '-') {
    return array.length;
  }
  const at = /^(0|[1-9][0-9]*)$/.test(token) ? Number(token) : NaN;
  if (!(at < array.length || (adding && at === array.length))) {
    throw fail(`no index ${token}`);
  }
  return at;
}

function get(doc: unknown, path: string, fail: (why: string) => Error): unknown {
  return tokens(path, fail).reduce<unknown>((value, token) => child(value, token, fail), doc);
}

function add(doc: unknown, path: string, value: unknown, fail: (why: string) => Error): unknown {
  if (path === '') {
    return value;
  }
  const [parent, last] = parentOf(doc, path, fail);
  if (Array.isArray(parent)) {
    parent.splice(index(parent, last, true, fail), 0, value);
  } else {
    parent[last] = value;
  }
  return doc;
}

function remove(doc: unknown, path: string, fail: (why: string) => Error): { doc: unknown; value: unknown } {
  if (path === '') {
    return { doc: null, value: doc };
  }
  const [parent, last] = parentOf(doc, path, fail);
  const value = child(parent, last, fail);
  if (Array.isArray(parent)) {
    parent.splice(index(parent, last, false, fail), 1);
  } else {
    delete parent[last];
  }
  return { doc, value };
}
