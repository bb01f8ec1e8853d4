/**
 * Kubernetes Events about an object, for `kubectl describe` to show. Recording is best effort:
 * the host logs a failure and never returns it to the plugin.
 */
import { kindOf } from './kind.ts';
import type { KubeObject } from './object.ts';
import * as raw from './raw.ts';

/** Normal or Warning, as Kubernetes Events have it. */
export type EventType = 'normal' | 'warning';

/** The host's event recorder. */
export const events = {
  /** Records an event about `obj`; `reason` is a short CamelCase word, `message` a sentence. */
  record(obj: KubeObject, type: EventType, reason: string, message: string): void {
    const about = {
      kind: kindOf(obj),
      namespace: obj.metadata?.namespace ?? '',
      name: obj.metadata?.name ?? '',
      uid: obj.metadata?.uid ?? '',
    };
    raw.events.record(about, type, reason, message);
  },

  /** Records a `Normal` event about `obj`. */
  normal(obj: KubeObject, reason: string, message: string): void {
    events.record(obj, 'normal', reason, message);
  },

  /** Records a `Warning` event about `obj`. */
  warning(obj: KubeObject, reason: string, message: string): void {
    events.record(obj, 'warning', reason, message);
  },
};
