/**
 * Admission and conversion requests for testing webhooks without a cluster.
 * {@link buildAdmissionRequest} makes the {@link AdmissionRequest} a validator or defaulter receives
 * in the sandbox, to call it natively; {@link admissionReview} and {@link conversionReview} make the
 * review the apiserver would post (an `admission.k8s.io/v1` AdmissionReview, an
 * `apiextensions.k8s.io/v1` ConversionReview), for fixture files or other tools.
 *
 * What a request leaves out is filled in by the rules `wasmop test` fills in a fixture's with:
 * the operation from the objects given, the kind from the object's `apiVersion` and `kind`, the
 * namespace and name from its metadata, the uid and user `wasmop-test`, not a dry run.
 */
import type { KubeObject } from '../object.ts';
import type { webhooks as wit } from '../raw.ts';
import { admissionRequest, type AdmissionRequest, type Operation } from '../webhooks.ts';

/** The request uid and user name a built request or review gets when none is given. */
const TEST_UID = 'wasmop-test';

/** What {@link buildAdmissionRequest} makes a request of; everything but an object is optional. */
export interface AdmissionRequestOptions<T extends KubeObject = KubeObject> {
  /** The object as it would be stored; given alone, the request is a create. */
  object?: T;
  /** The object as stored; given with `object`, the request is an update, alone a delete. */
  oldObject?: T;
  /** What the request is for, when not the one its objects imply. */
  operation?: Operation;
  /** Who sends it; `wasmop-test` by default. */
  user?: string;
  /** The sender's groups; none by default. */
  groups?: string[];
  /** Whether the request persists nothing; false by default. */
  dryRun?: boolean;
  /** The request's uid; `wasmop-test` by default. */
  uid?: string;
}

/**
 * An admission request as a webhook receives it in the sandbox, made from its objects: the
 * operation is create when only `object` is given, update when both are, delete when only
 * `oldObject` is; the kind (group, version, kind) comes from the object's `apiVersion` and `kind`
 * (or the old object's on a delete; the core group is `""`), the namespace and name from its
 * metadata (empty when absent). The request is decoded by the SDK's own dispatch, so its objects
 * are copies of those given, as the host sends them. Throws when neither object is given.
 *
 * ```ts
 * const req = buildAdmissionRequest({ object: { ...app, spec: { image: 'nginx', replicas: 75 } } });
 * assert.throws(() => webapp.webhooks.validate!.validator(req), Denied);
 * ```
 */
export function buildAdmissionRequest<T extends KubeObject = KubeObject>(
  options: AdmissionRequestOptions<T>,
): AdmissionRequest<T> {
  const object = options.object ?? undefined;
  const oldObject = options.oldObject ?? undefined;
  const shown = object ?? oldObject;
  if (shown === undefined) {
    throw new Error('an admission request needs its object or oldObject');
  }
  const implied: Operation = object === undefined ? 'delete' : oldObject === undefined ? 'create' : 'update';
  const apiVersion = shown.apiVersion ?? '';
  const slash = apiVersion.lastIndexOf('/');
  const record: wit.AdmissionRequest = {
    uid: options.uid ?? TEST_UID,
    kind: {
      group: slash < 0 ? '' : apiVersion.slice(0, slash),
      version: apiVersion.slice(slash + 1),
      kind: shown.kind ?? '',
    },
    namespace: shown.metadata?.namespace ?? '',
    name: shown.metadata?.name ?? '',
    operation: options.operation ?? implied,
    object: object === undefined ? undefined : JSON.stringify(object),
    oldObject: oldObject === undefined ? undefined : JSON.stringify(oldObject),
    userInfo: { username: options.user ?? TEST_UID, uid: '', groups: [...(options.groups ?? [])] },
    dryRun: options.dryRun ?? false,
  };
  return admissionRequest(record) as AdmissionRequest<T>;
}

/** The group, version and resource (plural) of an {@link AdmissionReview}'s request. */
export interface GroupVersionResource {
  /** The API group; `""` for the core group. */
  group: string;
  /** The API version. */
  version: string;
  /** The resource: the kind lower-cased, plus `s`. */
  resource: string;
}

/** An `admission.k8s.io/v1` AdmissionReview as the apiserver posts it to a webhook. */
export interface AdmissionReview {
  /** Always `admission.k8s.io/v1`. */
  apiVersion: 'admission.k8s.io/v1';
  /** Always `AdmissionReview`. */
  kind: 'AdmissionReview';
  /** The request the webhook answers. */
  request: {
    /** The request's uid. */
    uid: string;
    /** The object's kind. */
    kind: { group: string; version: string; kind: string };
    /** The object's resource. */
    resource: GroupVersionResource;
    /** The object's namespace; absent when cluster-scoped. */
    namespace?: string;
    /** The object's name. */
    name: string;
    /** What the request is for. */
    operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
    /** Who sent it; uid and groups absent when empty. */
    userInfo: { username: string; uid?: string; groups?: string[] };
    /** The object as it would be stored; absent on delete. */
    object?: KubeObject;
    /** The object as stored; absent on create. */
    oldObject?: KubeObject;
    /** Whether the request persists nothing. */
    dryRun: boolean;
  };
}

/** An `apiextensions.k8s.io/v1` ConversionReview as the apiserver posts it to a webhook. */
export interface ConversionReview {
  /** Always `apiextensions.k8s.io/v1`. */
  apiVersion: 'apiextensions.k8s.io/v1';
  /** Always `ConversionReview`. */
  kind: 'ConversionReview';
  /** The conversion the webhook does. */
  request: {
    /** The request's uid: `wasmop-test`. */
    uid: string;
    /** The `group/version` to convert the objects to. */
    desiredAPIVersion: string;
    /** The objects to convert. */
    objects: KubeObject[];
  };
}

/** A copy of `obj` as it goes over the wire. */
function copy<T>(obj: T): T {
  return JSON.parse(JSON.stringify(obj)) as T;
}

/**
 * The AdmissionReview the apiserver would post for `request` (one {@link buildAdmissionRequest}
 * made, say): its resource is the kind lower-cased plus `s`, its operation upper-case; the
 * namespace is left out when empty, the user's uid and groups when empty (a built request has
 * neither uid nor groups unless given groups), the objects when absent. Write
 * it out with `JSON.stringify` for a fixture or a tool that reads a review (such as `kwctl run`).
 *
 * ```ts
 * const review = admissionReview(buildAdmissionRequest({ object: app }));
 * writeFileSync('review.json', JSON.stringify(review, null, 2));
 * ```
 */
export function admissionReview(request: AdmissionRequest): AdmissionReview {
  const { group, version, kind } = request.kind;
  const { username, uid, groups } = request.userInfo;
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: request.uid,
      kind: { group, version, kind },
      resource: { group, version, resource: `${kind.toLowerCase()}s` },
      ...(request.namespace ? { namespace: request.namespace } : {}),
      name: request.name,
      operation: request.operation.toUpperCase() as AdmissionReview['request']['operation'],
      userInfo: {
        username,
        ...(uid ? { uid } : {}),
        ...(groups.length > 0 ? { groups: [...groups] } : {}),
      },
      ...(request.object !== undefined ? { object: copy(request.object) } : {}),
      ...(request.oldObject !== undefined ? { oldObject: copy(request.oldObject) } : {}),
      dryRun: request.dryRun,
    },
  };
}

/**
 * The ConversionReview the apiserver would post to convert `objects` to `desiredApiVersion`
 * (`group/version`), with the uid `wasmop-test`.
 *
 * ```ts
 * const review = conversionReview('example.wasmop.dev/v1beta1', [app]);
 * const converted = review.request.objects.map((obj) => convert.converter(obj, review.request.desiredAPIVersion));
 * ```
 */
export function conversionReview(desiredApiVersion: string, objects: KubeObject[]): ConversionReview {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid: TEST_UID, desiredAPIVersion: desiredApiVersion, objects: objects.map(copy) },
  };
}
