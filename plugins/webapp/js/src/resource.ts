/**
 * The `WebApp` custom resource (`example.wasmop.dev/v1alpha1`), as `deploy/crds/webapp.yaml`
 * declares it.
 */
import { defineKind, type Condition, type ObjectMeta } from '@wasmop/guest';

/** A web application: an image served on a port by some replicas. */
export interface WebApp {
  apiVersion?: 'example.wasmop.dev/v1alpha1';
  kind?: 'WebApp';
  metadata?: ObjectMeta;
  spec: WebAppSpec;
  status?: WebAppStatus;
}

/** The desired state of a {@link WebApp}; the apiserver fills the defaults the CRD declares. */
export interface WebAppSpec {
  /** The container image to run. */
  image: string;
  /** How many pods to run (default 1). */
  replicas?: number;
  /** The port the container listens on and the Service exposes (default 8080). */
  port?: number;
}

/** The observed state of a {@link WebApp}. */
export interface WebAppStatus {
  /** The metadata.generation this status describes. */
  observedGeneration?: number;
  /** Pods of the Deployment that are ready. */
  readyReplicas: number;
  /** Standard conditions; `Ready` says whether all replicas are ready. */
  conditions?: Condition[];
}

/** The WebApp kind. */
export const WebApp = defineKind<WebApp>('example.wasmop.dev/v1alpha1', 'WebApp');

/** The spec with the CRD's defaults filled in. */
export function specOf(app: WebApp): Required<WebAppSpec> {
  return { image: app.spec.image, replicas: app.spec.replicas ?? 1, port: app.spec.port ?? 8080 };
}
