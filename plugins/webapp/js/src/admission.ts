/**
 * The `webapp` plugin's webhooks, as the Rust, Python and Go plugins': WebApps are refused with
 * more than 50 replicas or an image that is not a well-formed reference, get port 8080 when they
 * name none, and convert between `v1alpha1` and `v1beta1`, which calls `spec.replicas`
 * `spec.instances`.
 */
import { ConversionFailed, Denied, type AdmissionRequest, type KubeObject, type Webhooks } from '@wasmop/guest';

import { WebApp } from './resource.ts';

/** The most replicas a WebApp may ask for. */
export const MAX_REPLICAS = 50;

/** The port a WebApp that names none gets. */
export const DEFAULT_PORT = 8080;

const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?';
const HOST = `(?:${LABEL}(?:\\.${LABEL})*(?::[0-9]{1,5})?)`;
const IMAGE = new RegExp(
  `^(?:(?<host>${HOST})/)?${COMPONENT}(?:/${COMPONENT})*` +
    '(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?' +
    '(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$',
);
const PATH_COMPONENT = new RegExp(`^${COMPONENT}$`);

/** Whether `image` is `[host[:port]/]path[:tag][@algorithm:digest]` as the distribution spec
 * writes it: a first part is a host only if it has a dot or a port or is `localhost`. */
export function wellFormedImage(image: string): boolean {
  const match = IMAGE.exec(image);
  const named = image.split('@')[0] ?? '';
  const colon = named.lastIndexOf(':');
  if (!match || (colon < 0 ? named : named.slice(0, colon)).length > 255) {
    return false;
  }
  const host = match.groups?.host;
  return host === undefined || /[.:]/.test(host) || host === 'localhost' || PATH_COMPONENT.test(host);
}

type Spec = Record<string, unknown>;

/** The request's WebApp spec; refuses a WebApp without one. */
function specOf(obj: KubeObject): Spec {
  const spec = (obj as { spec?: unknown }).spec;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new Denied('a WebApp needs a spec');
  }
  return spec as Spec;
}

/** Admits a WebApp whose replicas are within 0..=50 and whose image is well-formed. */
function validate(request: AdmissionRequest): void {
  if (!request.object) {
    return;
  }
  const spec = specOf(request.object);
  const field = request.kind.version === 'v1beta1' ? 'instances' : 'replicas';
  const replicas = spec[field];
  if (replicas !== undefined && !(Number.isInteger(replicas) && (replicas as number) >= 0 && (replicas as number) <= MAX_REPLICAS)) {
    throw new Denied(`spec.${field} must be between 0 and ${MAX_REPLICAS}, not ${JSON.stringify(replicas)}`);
  }
  if (typeof spec.image !== 'string') {
    throw new Denied('spec.image is required');
  }
  if (!wellFormedImage(spec.image)) {
    throw new Denied(`spec.image '${spec.image}' is not a well-formed image reference`);
  }
}

/** The request's WebApp with `spec.port` set to 8080 when it names none. */
function setDefaults(request: AdmissionRequest): KubeObject {
  if (!request.object) {
    throw new Denied('no WebApp to default');
  }
  const spec = specOf(request.object);
  spec.port ??= DEFAULT_PORT;
  return request.object;
}

/** The version of a WebApp `apiVersion`; fails the conversion for any other. */
function versionOf(apiVersion: string | undefined): string {
  const [group, version] = (apiVersion ?? '').split('/');
  if (group !== WebApp.group || (version !== 'v1alpha1' && version !== 'v1beta1')) {
    throw new ConversionFailed(`${apiVersion} is not a WebApp version`);
  }
  return version;
}

/** `obj` as a WebApp of `apiVersion` (`example.wasmop.dev/v1alpha1` or `.../v1beta1`). */
function convert(obj: KubeObject, apiVersion: string): KubeObject {
  const [source, target] = [versionOf(obj.apiVersion), versionOf(apiVersion)];
  const spec = (obj as { spec?: Spec }).spec;
  if (spec && typeof spec === 'object' && source !== target) {
    const [from, to] = target === 'v1beta1' ? ['replicas', 'instances'] : ['instances', 'replicas'];
    if (from in spec) {
      spec[to] = spec[from];
      delete spec[from];
    }
  }
  return { ...obj, apiVersion };
}

/** What webapp serves for WebApps. */
export const webhooks: Webhooks = {
  validate: { rules: [{ kind: WebApp }], validator: validate },
  default: { rules: [{ kind: WebApp }], defaulter: setDefaults },
  convert: { kinds: [WebApp], converter: convert },
};
