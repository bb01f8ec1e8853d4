/**
 * The component's exports (`describe`, `reconcile`, `map`) for a {@link Reconciler}. The build
 * generates the component's entry module from this; plugins never call it.
 *
 * A WIT `result` export returns its ok value and throws its error value, which is why
 * `reconcile` throws the WIT reconcile error rather than an `Error`.
 */
import { forwardConsole } from './console.ts';
import { fromJson, type KubeObject, type Request } from './object.ts';
import { toWitOutcome } from './outcome.ts';
import type { plugin, types } from './raw.ts';
import { toWitReconcileError } from './reconcile-error.ts';
import type { Reconciler } from './reconciler.ts';

/** The functions the component exports, in their WIT shapes. */
export interface ComponentExports {
  /** Declares the plugin. */
  describe(): plugin.Registration;
  /** Reconciles one request; throws a WIT reconcile error on failure. */
  reconcile(request: Request): plugin.Outcome;
  /** Maps a changed object (JSON text) of a watched kind to requests. */
  map(kind: types.Gvk, obj: types.Object): types.ObjectKey[];
}

/** The WIT exports of `reconciler`; also sends `console.*` to the host's logger. */
export function componentExports(reconciler: Reconciler): ComponentExports {
  forwardConsole();
  return {
    describe: () => reconciler.registration,
    reconcile(request) {
      try {
        return toWitOutcome(reconciler.reconcile(request));
      } catch (thrown) {
        throw toWitReconcileError(thrown);
      }
    },
    map: (kind, obj) => reconciler.map(kind, fromJson<KubeObject>(obj)),
  };
}
