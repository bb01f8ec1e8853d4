import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Denied, type KubeObject, type Webhooks } from '@wasmop/guest';
import { buildAdmissionRequest, conversionReview } from '@wasmop/guest/testing';

import { wellFormedImage } from './admission.ts';
import webapp from './index.ts';

// The webhooks as the plugin's definition declares them, called natively.
const { validate, default: defaults, convert } = webapp.webhooks as Required<Webhooks>;

/** A WebApp of either version, its spec as the webhooks see it. */
interface AnyWebApp extends KubeObject {
  spec: Record<string, unknown>;
}

/** A WebApp in `version` whose spec is `spec`. */
function app(spec: Record<string, unknown>, version = 'v1alpha1'): AnyWebApp {
  return { apiVersion: `example.wasmop.dev/${version}`, kind: 'WebApp', metadata: { namespace: 'shop', name: 'web' }, spec };
}

/** The Denied `run` throws. */
function denial(run: () => unknown): Denied {
  try {
    run();
  } catch (thrown) {
    assert.ok(thrown instanceof Denied, `expected a Denied, got ${String(thrown)}`);
    return thrown;
  }
  assert.fail('expected a Denied, the request was admitted');
}

test('images are checked as the distribution spec writes them', () => {
  for (const ref of ['nginx', 'nginx:1.27', 'localhost:5000/team/app:v1', `ghcr.io/a/b@sha256:${'ab'.repeat(32)}`]) {
    assert.ok(wellFormedImage(ref), ref);
  }
  for (const ref of ['Not An Image!', 'nginx:', 'UPPER/case', `a/${'b'.repeat(260)}`]) {
    assert.ok(!wellFormedImage(ref), ref);
  }
});

test('a WebApp asking for more than 50 replicas is refused', () => {
  const req = buildAdmissionRequest({ object: app({ image: 'nginx:1.27', replicas: 75 }) });
  assert.equal(denial(() => validate.validator(req)).message, 'spec.replicas must be between 0 and 50, not 75');
  const beta = buildAdmissionRequest({ object: app({ image: 'nginx:1.27', instances: 51 }, 'v1beta1') });
  assert.equal(denial(() => validate.validator(beta)).message, 'spec.instances must be between 0 and 50, not 51');
});

test('a WebApp within bounds is admitted, and a delete is not checked', () => {
  const update = buildAdmissionRequest({
    object: app({ image: 'nginx:1.27', replicas: 3 }),
    oldObject: app({ image: 'nginx:1.27', replicas: 2 }),
  });
  assert.equal(update.operation, 'update');
  assert.equal(validate.validator(update), undefined);
  const removal = buildAdmissionRequest({ oldObject: app({ image: 'nginx:1.27', replicas: 75 }) });
  assert.equal(validate.validator(removal), undefined);
  const bad = buildAdmissionRequest({ object: app({ image: 'Not An Image!' }) });
  assert.equal(denial(() => validate.validator(bad)).message, "spec.image 'Not An Image!' is not a well-formed image reference");
});

test('a WebApp without a port gets 8080, one with a port keeps it', () => {
  const req = buildAdmissionRequest({ object: app({ image: 'nginx:1.27', replicas: 2 }) });
  assert.deepEqual(defaults.defaulter(req), app({ image: 'nginx:1.27', replicas: 2, port: 8080 }));
  const named = buildAdmissionRequest({ object: app({ image: 'nginx:1.27', port: 9090 }) });
  assert.deepEqual(defaults.defaulter(named), app({ image: 'nginx:1.27', port: 9090 }));
});

test('a v1alpha1 WebApp converts to v1beta1, its replicas as instances, and back', () => {
  const { request } = conversionReview('example.wasmop.dev/v1beta1', [app({ image: 'nginx:1.27', replicas: 2 })]);
  const beta = request.objects.map((obj) => convert.converter(obj, request.desiredAPIVersion));
  assert.deepEqual(beta, [app({ image: 'nginx:1.27', instances: 2 }, 'v1beta1')]);
  const alpha = convert.converter(beta[0]!, 'example.wasmop.dev/v1alpha1');
  assert.deepEqual(alpha, app({ image: 'nginx:1.27', replicas: 2 }));
});
