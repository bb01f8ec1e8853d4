// `@NAME@`: marks each @KIND@ (`@API_VERSION@`) with the generation it last reconciled, in the
// annotation `@NAME@.wasmop.dev/observed-generation`. Replace `reconcile` with your own logic and
// `fixtures/` with what it should do.
import { cache, client, defineKind, defineReconciler, optional } from '@wasmop/guest';

const OBSERVED = '@NAME@.wasmop.dev/observed-generation';
const Primary = defineKind('@API_VERSION@', '@KIND@');

export default defineReconciler({
  name: '@NAME@',
  version: '0.1.0',
  primary: Primary,
  permissions: [{ kind: Primary, verbs: ['patch'] }],
  reconcile({ namespace, name }) {
    const obj = optional(() => cache.get(Primary, namespace, name));
    if (!obj) {
      return;
    }
    const generation = String(obj.metadata?.generation ?? 0);
    if (obj.metadata?.annotations?.[OBSERVED] !== generation) {
      client.patch(Primary, namespace, name, { metadata: { annotations: { [OBSERVED]: generation } } });
    }
  },
});
