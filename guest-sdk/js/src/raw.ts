/**
 * The host's WIT imports (`wasmop:reconciler`), exactly as the component receives them. Their
 * types are generated from `wit/` by the build (`generated/wit/`); everything else in the SDK is
 * built on these. Use them directly for a call the typed layer does not offer.
 */
/// <reference path="../generated/wit/webhook-reconciler.d.ts" />

import { get, list, listByIndex } from 'wasmop:reconciler/cache@0.1.3';
import {
  create,
  delete as remove,
  patch,
  patchStatus,
  update,
  updateStatus,
} from 'wasmop:reconciler/client@0.1.3';
import { record } from 'wasmop:reconciler/events@0.1.3';
import { log } from 'wasmop:reconciler/log@0.1.3';

export type * as types from 'wasmop:reconciler/types@0.1.3';
export type * as plugin from 'wasmop:reconciler/plugin@0.1.3';
export type * as webhooks from 'wasmop:reconciler/webhooks@0.1.3';

/** The `cache` interface: reads from the host's informer cache. */
export const cache = { get, list, listByIndex };

/** The `client` interface: writes to the apiserver within the declared permissions. */
export const client = { create, update, patch, delete: remove, updateStatus, patchStatus };

/** The `events` interface: Kubernetes Events. */
export const events = { record };

/** The `log` interface: the host's structured logger. */
export const logger = { log };
