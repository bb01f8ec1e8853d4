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
 * Fixture files — the format `wasmop test` runs against the built component — run in-process
 * too: {@link testFixtures} declares a test per file, {@link runFixture} and
 * {@link assertFixture} run one.
 *
 * ```ts
 * import { testFixtures } from '@wasmop/guest/testing';
 * import webapp from './index.ts';
 *
 * testFixtures(webapp, '../fixtures'); // plugins/webapp/fixtures/*.yaml
 * ```
 */
export { componentExports, type ComponentExports } from '../component.ts';
export { atTime } from './clock.ts';
export {
  DEFAULT_NOW,
  FixtureError,
  loadFixture,
  parseFixture,
  type Expected,
  type Fixture,
  type FixtureEvent,
  type FixtureWrite,
  type Regarding,
  type Rejection,
  type Verb,
} from './fixture.ts';
export { FakeHost, host, type LogLine, type RecordedEvent, type Write, type WriteCall } from './host.ts';
export { assertFixture, runFixture, testFixtures, type FixtureResult } from './run.ts';
