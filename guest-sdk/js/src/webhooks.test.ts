import assert from 'node:assert/strict';
import { test } from 'node:test';

import { componentExports } from './component.ts';
import { defineKind } from './kind.ts';
import type { KubeObject } from './object.ts';
import { done } from './outcome.ts';
import { defineReconciler } from './reconciler.ts';
import { ConversionFailed, Denied, type Webhooks } from './webhooks.ts';

interface App extends KubeObject {
  spec?: { replicas?: number; port?: number };
}
const WebApp = defineKind<App>('example.wasmop.dev/v1alpha1', 'WebApp');
const webAppGvk = { group: 'example.wasmop.dev', version: 'v1alpha1', kind: 'WebApp' };

const webhooks: Webhooks = {
  validate: {
    rules: [{ kind: WebApp }],
    validator(req) {
      if (((req.object as App).spec?.replicas ?? 0) > 5) {
        throw new Denied('too many', ['really']);
      }
      if (req.operation === 'connect') {
        throw new RangeError('a bug');
      }
      return [`fine by ${req.userInfo.username}`];
    },
  },
  default: {
    rules: [{ kind: WebApp, operations: ['create'] }],
    defaulter(req) {
      if (req.operation !== 'create') {
        throw new Denied('only creates');
      }
      const app = req.object as App;
      return { ...app, spec: { port: 8080, ...app.spec } };
    },
  },
  convert: {
    kinds: [WebApp],
    converter(obj, apiVersion) {
      if (apiVersion.endsWith('/v9')) {
        throw new ConversionFailed(`no ${apiVersion}`);
      }
      return { ...obj, apiVersion };
    },
  },
};

const exports = componentExports(
  defineReconciler({ name: 'hooks', version: '1.0.0', primary: WebApp, reconcile: () => done, webhooks }),
).webhooks;

function request(operation: 'create' | 'update' | 'connect', object: App) {
  return {
    uid: 'u', kind: webAppGvk, namespace: 'default', name: 'shop', operation,
    object: JSON.stringify(object), userInfo: { username: 'alice', uid: '1', groups: [] }, dryRun: false,
  };
}

test('webhooks are declared with create and update unless their rules say', () => {
  const reg = exports.describeWebhooks();
  assert.deepEqual(reg.validate, [{ kind: webAppGvk, operations: ['create', 'update'] }]);
  assert.deepEqual(reg.default, [{ kind: webAppGvk, operations: ['create'] }]);
  assert.deepEqual(reg.convert, [webAppGvk]);
  const none = componentExports(defineReconciler({ name: 'p', version: '1', primary: WebApp, reconcile: () => done }));
  assert.deepEqual(none.webhooks.describeWebhooks(), { validate: [], default: [], convert: [] });
});

test('a validator admits with warnings and refuses by throwing Denied', () => {
  assert.deepEqual(exports.validate(request('create', { spec: { replicas: 2 } })), { tag: 'allowed', val: ['fine by alice'] });
  assert.deepEqual(exports.validate(request('update', { spec: { replicas: 9 } })), {
    tag: 'denied',
    val: { message: 'too many', warnings: ['really'] },
  });
  assert.throws(() => exports.validate(request('connect', {})), RangeError, 'any other throw fails the call');
});

test('a defaulter returns the object or refuses with a WIT denial', () => {
  assert.deepEqual(JSON.parse(exports.default(request('create', { spec: {} }))), { spec: { port: 8080 } });
  assert.throws(() => exports.default(request('update', { spec: {} })), (thrown) => {
    assert.deepEqual(thrown, { message: 'only creates', warnings: [] });
    return true;
  });
});

test('a converter fails a conversion with its message', () => {
  const beta = exports.convert('{"apiVersion":"example.wasmop.dev/v1alpha1"}', 'example.wasmop.dev/v1beta1');
  assert.deepEqual(JSON.parse(beta), { apiVersion: 'example.wasmop.dev/v1beta1' });
  assert.throws(() => exports.convert('{}', 'example.wasmop.dev/v9'), (thrown) => thrown === 'no example.wasmop.dev/v9');
});

test('webhooks without kinds or with unknown operations are refused when declared', () => {
  const declare = (hooks: Webhooks) => () =>
    defineReconciler({ name: 'p', version: '1', primary: WebApp, reconcile: () => done, webhooks: hooks });
  assert.throws(declare({ convert: { kinds: [], converter: (o) => o } }), /webhooks.convert declares no kinds/);
  const patch = [{ kind: WebApp, operations: ['patch' as 'create'] }];
  assert.throws(declare({ validate: { rules: patch, validator: () => [] } }), /operations must be some of/);
});
