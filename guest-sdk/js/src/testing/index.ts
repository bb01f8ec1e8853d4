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
 */
export { componentExports, type ComponentExports } from '../component.ts';
export { FakeHost, host, type LogLine, type RecordedEvent, type Write, type WriteCall } from './host.ts';
