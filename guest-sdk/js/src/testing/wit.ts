/**
 * The WIT interfaces (`wasmop:reconciler/cache`, `client`, `events`, `log`) as one module backed
 * by the fake host; the SDK's test bundler resolves every `wasmop:reconciler/*` import here.
 */
import { host } from './host.ts';

export const { get, list, listByIndex, create, update, patch, updateStatus, patchStatus, record, log } =
  host.wit;
const remove = host.wit.delete;
export { remove as delete };
