/**
 * Testing reconcilers under Node without a cluster: tests bundled by the SDK's `test` command
 * run the plugin against {@link host}, an in-memory fake of the wasmop host;
 * {@link componentExports} shows what the host would receive from the component's exports.
 *
 * ```ts
 * import { host } from '@wasmop/guest/testing';
 * import webapp from '../src/index.ts';
 *
 * host.reset(webapp);
 * host.put(app);
 * webapp.reconcile({ namespace: 'shop', name: 'web' });
 * assert.deepEqual(host.writes.map((w) => w.call), ['update', 'create', 'apply', 'apply', 'patch-status']);
 * ```
 *
 * Fixture files — the format `wasmop test` runs — are judged by `wasmop test` itself, against the
 * component `wasmop build` makes of the project: {@link testFixtures} declares a test per run,
 * a subtest per file; {@link runFixtures} returns the verdicts.
 *
 * ```ts
 * import { testFixtures } from '@wasmop/guest/testing';
 *
 * testFixtures('../fixtures'); // plugins/webapp/fixtures/*.yaml, against the project in the working directory
 * ```
 *
 * Webhooks are called natively with {@link buildAdmissionRequest}, the request a validator or
 * defaulter receives in the sandbox; {@link admissionReview} and {@link conversionReview} make the
 * JSON the apiserver would post.
 *
 * ```ts
 * import { buildAdmissionRequest } from '@wasmop/guest/testing';
 *
 * const req = buildAdmissionRequest({ object: { ...app, spec: { image: 'nginx', replicas: 75 } } });
 * assert.throws(() => webapp.webhooks.validate!.validator(req), /spec.replicas must be between 0 and 50, not 75/);
 * ```
 */
export { componentExports, type ComponentExports } from '../component.ts';
export { atTime } from './clock.ts';
export { buildPlugin, report, runFixtures, testFixtures, type FixtureOptions, type FixtureResult } from './fixtures.ts';
export {
  FakeHost,
  host,
  type LogLine,
  type RecordedEvent,
  type SentWrite,
  type Verb,
  type Write,
  type WriteCall,
} from './host.ts';
export {
  admissionReview,
  buildAdmissionRequest,
  conversionReview,
  type AdmissionRequestOptions,
  type AdmissionReview,
  type ConversionReview,
  type GroupVersionResource,
} from './reviews.ts';
