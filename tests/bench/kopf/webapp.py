"""The ``webapp`` operator written with kopf, the Python comparator of the benchmarks (tests/bench).

Each WebApp (``example.wasmop.dev/v1alpha1``) gets a finalizer, an external marker ConfigMap, a
Deployment and a ClusterIP Service it controls, and a status: the behaviour of the ``webapp``
plugin (plugins/webapp), written the way kopf users write an operator. kopf handles the WebApps
(create, update, resume and delete handlers, its finalizer and retries); the ``kubernetes`` client
does the writes, applying the Deployment and Service by server-side apply. kopf has no cache, so
each reconcile reads the marker, Deployment and Service from the apiserver, and writes only what
drifted. Events on the owned Deployments and Services (deleted, edited, their readiness) converge
their WebApp again.

It reads the kubeconfig from ``KUBECONFIG`` (or the in-cluster config) and watches the namespace
``WEBAPP_NAMESPACE``, or all namespaces when that is unset. It has no peering, no liveness
endpoint and no other HTTP port, logs to stderr, and stops on SIGTERM or SIGINT.

    target/bench/kopf-venv/bin/python tests/bench/kopf/webapp.py
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import kopf
import kubernetes
import urllib3
from kubernetes.client.exceptions import ApiException, OpenApiException

GROUP = 'example.wasmop.dev'
"""The API group of WebApps."""
VERSION = 'v1alpha1'
"""The version of WebApps served."""
PLURAL = 'webapps'
"""The resource name of WebApps."""
NAMESPACE_ENV = 'WEBAPP_NAMESPACE'
"""The environment variable naming the one namespace to watch."""
MANAGER = 'webapp-kopf'
"""The field manager of every write."""
FINALIZER = 'example.wasmop.dev/cleanup'
"""The finalizer that keeps a WebApp until its marker ConfigMap is gone."""
CONCURRENCY = 4
"""How many reconciles run at once (the plugin's ``max_concurrent_reconciles``)."""
REQUEST_TIMEOUT = 10.0
"""How long one request may take, in seconds (the plugin's ``reconcile_timeout``)."""
BASE_DELAY = 0.005
"""The first retry delay after a failure, in seconds."""
MAX_DELAY = 1000.0
"""The largest retry delay, in seconds."""
OWNED_ATTEMPTS = 10
"""How often an owned object's event tries to converge its WebApp (about 5 s of backoff)."""

NAME_LABEL = 'app.kubernetes.io/name'
"""Names the WebApp; the Deployment selects its pods by it."""
MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
"""Says who manages the owned objects."""
MANAGED_BY = 'wasmop'
"""The value of the managed-by label."""
MARKER_LABEL = 'example.wasmop.dev/webapp'
"""On the marker ConfigMap, names its WebApp."""
APPLIED_BY_ANNOTATION = 'example.wasmop.dev/applied-by'
"""Names the version that last applied an owned object."""
BEHAVIOUR_VERSION = '0.1.0'
"""The version of the webapp behaviour, in the applied-by annotation."""
CONTAINER = 'web'
"""The name of the web container."""

APPLY = 'application/apply-patch+yaml'
"""The content type of server-side apply (a JSON body is YAML too)."""
MERGE = 'application/merge-patch+json'
"""The content type of a JSON merge patch."""

Object = dict[str, Any]
"""A Kubernetes object as JSON."""
RETRIED = (OpenApiException, urllib3.exceptions.HTTPError, OSError)
"""The failures a reconcile is retried after: failed requests."""


@dataclasses.dataclass(frozen=True)
class Clients:
    """The typed APIs of the ``kubernetes`` client the operator writes with."""

    core: kubernetes.client.CoreV1Api
    apps: kubernetes.client.AppsV1Api
    custom: kubernetes.client.CustomObjectsApi

    @classmethod
    def load(cls) -> Clients:
        """Clients for the kubeconfig of ``KUBECONFIG``, or for the in-cluster config."""
        try:
            kubernetes.config.load_incluster_config()
        except kubernetes.config.ConfigException:
            kubernetes.config.load_kube_config()
        config = kubernetes.client.Configuration.get_default_copy()
        config.connection_pool_maxsize = CONCURRENCY
        api = kubernetes.client.ApiClient(config)
        return cls(
            core=kubernetes.client.CoreV1Api(api),
            apps=kubernetes.client.AppsV1Api(api),
            custom=kubernetes.client.CustomObjectsApi(api),
        )


def body_of(response: Any) -> Object:
    """The JSON of a response read without the client's models."""
    return json.loads(response.data)


def get_or_none(read: Callable[..., Any], *args: str) -> Object | None:
    """The object ``read(*args)`` returns, or None when it does not exist."""
    try:
        return body_of(read(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT))
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def delay(retry: int) -> float:
    """The backoff before retry number ``retry + 1``: 5 ms doubling up to 1000 s."""
    return min(BASE_DELAY * 2 ** min(retry, 40), MAX_DELAY)


def marker_name(name: str) -> str:
    """The name of the marker ConfigMap of the WebApp ``name``."""
    return f'webapp-marker-{name}'


def desired_marker(app: Mapping[str, Any]) -> Object:
    """The marker ConfigMap: external state the finalizer cleans up, so it has no owner."""
    meta = app['metadata']
    return {
        'apiVersion': 'v1',
        'kind': 'ConfigMap',
        'metadata': {
            'name': marker_name(meta['name']),
            'namespace': meta['namespace'],
            'labels': {MARKER_LABEL: meta['name']},
        },
    }


def controller_ref(app: Mapping[str, Any]) -> Object:
    """The owner reference that makes ``app`` the controller of an object."""
    return {
        'apiVersion': f'{GROUP}/{VERSION}',
        'kind': 'WebApp',
        'name': app['metadata']['name'],
        'uid': app['metadata']['uid'],
        'controller': True,
        'blockOwnerDeletion': True,
    }


def owned_metadata(app: Mapping[str, Any]) -> Object:
    """The metadata of an owned object: name, labels, annotation and controller."""
    meta = app['metadata']
    return {
        'name': meta['name'],
        'namespace': meta['namespace'],
        'labels': {NAME_LABEL: meta['name'], MANAGED_BY_LABEL: MANAGED_BY},
        'annotations': {APPLIED_BY_ANNOTATION: f'webapp/{BEHAVIOUR_VERSION}'},
        'ownerReferences': [controller_ref(app)],
    }


def desired_deployment(app: Mapping[str, Any]) -> Object:
    """The Deployment the WebApp asks for, controlled by it."""
    spec = app['spec']
    selector = {NAME_LABEL: app['metadata']['name']}
    container = {
        'name': CONTAINER,
        'image': spec['image'],
        'ports': [{'name': 'http', 'containerPort': spec.get('port', 8080), 'protocol': 'TCP'}],
    }
    return {
        'apiVersion': 'apps/v1',
        'kind': 'Deployment',
        'metadata': owned_metadata(app),
        'spec': {
            'replicas': spec.get('replicas', 1),
            'selector': {'matchLabels': selector},
            'template': {
                'metadata': {'labels': selector},
                'spec': {'containers': [container]},
            },
        },
    }


def desired_service(app: Mapping[str, Any]) -> Object:
    """The ClusterIP Service the WebApp asks for, controlled by it."""
    port = app['spec'].get('port', 8080)
    return {
        'apiVersion': 'v1',
        'kind': 'Service',
        'metadata': owned_metadata(app),
        'spec': {
            'type': 'ClusterIP',
            'selector': {NAME_LABEL: app['metadata']['name']},
            'ports': [{'name': 'http', 'port': port, 'targetPort': port, 'protocol': 'TCP'}],
        },
    }


def contains(actual: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether ``actual`` has every key of ``desired`` with the same value."""
    actual = actual or {}
    return all(actual.get(key) == value for key, value in desired.items())


def controller_uid(meta: Mapping[str, Any]) -> str | None:
    """The uid of the controller an object's owner references name, if any."""
    for ref in meta.get('ownerReferences') or []:
        if ref.get('controller'):
            return ref.get('uid')
    return None


def metadata_matches(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the stored object has the desired labels, annotations and controller."""
    meta, want = actual.get('metadata', {}), desired['metadata']
    return (contains(meta.get('labels'), want['labels'])
            and contains(meta.get('annotations'), want['annotations'])
            and controller_uid(meta) == controller_uid(want))


def web_container(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The web container of a pod spec, or None."""
    return next((c for c in pod.get('containers') or [] if c.get('name') == CONTAINER), None)


def container_ports(container: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What the operator sets of a container's ports, absent fields as the apiserver has them."""
    return [(p.get('name', ''), p.get('containerPort', 0), p.get('protocol', 'TCP'),
             p.get('hostPort', 0), p.get('hostIP', ''))
            for p in container.get('ports') or []]


def deployment_matches(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the stored Deployment has every field the desired one sets, so that a Deployment
    with the apiserver's defaults needs no apply."""
    spec, want = actual.get('spec', {}), desired['spec']
    selector = spec.get('selector') or {}
    template = spec.get('template') or {}
    got = web_container(template.get('spec') or {})
    wanted = web_container(want['template']['spec'])
    return (metadata_matches(actual, desired)
            and spec.get('replicas') == want['replicas']
            and not selector.get('matchExpressions')
            and selector.get('matchLabels') == want['selector']['matchLabels']
            and contains((template.get('metadata') or {}).get('labels'),
                         want['template']['metadata']['labels'])
            and got is not None and wanted is not None
            and got.get('image') == wanted['image']
            and container_ports(got) == container_ports(wanted))


def service_ports(spec: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What the operator sets of a Service's ports."""
    return [(p.get('name', ''), p.get('port', 0), p.get('targetPort'), p.get('protocol', 'TCP'))
            for p in spec.get('ports') or []]


def service_matches(actual: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether the stored Service has every field the desired one sets."""
    spec, want = actual.get('spec', {}), desired['spec']
    return (metadata_matches(actual, desired)
            and spec.get('type') == want['type']
            and spec.get('selector') == want['selector']
            and service_ports(spec) == service_ports(want))


def now() -> str:
    """The current time as a Kubernetes timestamp."""
    return datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%dT%H:%M:%SZ')


def desired_status(app: Mapping[str, Any], ready_replicas: int) -> Object:
    """The status the WebApp should have given its Deployment's ready replicas; the Ready
    condition keeps its lastTransitionTime while its status holds."""
    status: Object = copy.deepcopy(dict(app.get('status') or {}))
    generation = app['metadata'].get('generation')
    replicas = app['spec'].get('replicas', 1)
    available = ready_replicas >= replicas
    ready = {
        'type': 'Ready',
        'status': 'True' if available else 'False',
        'reason': 'Available' if available else 'Progressing',
        'message': f'{ready_replicas}/{replicas} replicas ready',
        'observedGeneration': generation,
    }
    status['observedGeneration'] = generation
    status['readyReplicas'] = ready_replicas
    conditions = status.setdefault('conditions', [])
    current = next((c for c in conditions if c.get('type') == 'Ready'), None)
    if current is None:
        conditions.append({**ready, 'lastTransitionTime': now()})
    else:
        if current.get('status') != ready['status']:
            current['lastTransitionTime'] = now()
        current.update(ready)
    return status


def plain(body: Mapping[str, Any]) -> Object:
    """A WebApp as plain JSON, from kopf's read-only view of it."""
    return json.loads(json.dumps(body, default=dict))


class Reconciler:
    """Converges WebApps: finalizer (kopf's), marker ConfigMap, Deployment, Service, then status.

    One WebApp is converged by one thread at a time, whether its own handler or an event on an
    object it owns asked for it, so that the two do not apply the same objects twice.
    """

    def __init__(self, clients: Clients) -> None:
        """A reconciler writing through ``clients``."""
        self.clients = clients
        self._locks: weakref.WeakValueDictionary[tuple[str, str], threading.RLock] = (
            weakref.WeakValueDictionary())
        self._guard = threading.Lock()

    def lock(self, namespace: str, name: str) -> threading.RLock:
        """The lock held while the WebApp ``namespace/name`` is converged."""
        with self._guard:
            lock = self._locks.get((namespace, name))
            if lock is None:
                lock = threading.RLock()
                self._locks[(namespace, name)] = lock
            return lock

    def converge(self, app: Object) -> None:
        """Brings the WebApp's marker, Deployment, Service and status to what it asks for,
        writing only what differs; raises on the first failed request."""
        meta = app['metadata']
        namespace, name = meta['namespace'], meta['name']
        with self.lock(namespace, name):
            self.ensure_marker(app)
            ready = self.ensure_deployment(app, desired_deployment(app))
            self.ensure_service(desired_service(app))
            status = desired_status(app, ready)
            if app.get('status') != status:
                # At the resourceVersion read, so that a status computed from a stale WebApp
                # fails with a conflict and is retried.
                patch = {'metadata': {'resourceVersion': meta['resourceVersion']}, 'status': status}
                self.clients.custom.patch_namespaced_custom_object_status(
                    GROUP, VERSION, namespace, PLURAL, name, patch, field_manager=MANAGER,
                    _content_type=MERGE, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)

    def ensure_marker(self, app: Object) -> None:
        """Creates the marker ConfigMap unless it exists."""
        marker = desired_marker(app)
        namespace, name = marker['metadata']['namespace'], marker['metadata']['name']
        if get_or_none(self.clients.core.read_namespaced_config_map, name, namespace) is not None:
            return
        try:
            self.clients.core.create_namespaced_config_map(
                namespace, marker, field_manager=MANAGER,
                _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status != 409:
                raise

    def apply(self, patch: Callable[..., Any], desired: Object) -> Object:
        """Applies ``desired`` with force by server-side apply; returns the object as stored."""
        meta = desired['metadata']
        return body_of(patch(
            meta['name'], meta['namespace'], desired, field_manager=MANAGER, force=True,
            _content_type=APPLY, _preload_content=False, _request_timeout=REQUEST_TIMEOUT))

    def ensure_deployment(self, app: Object, desired: Object) -> int:
        """Applies the Deployment when it is missing or drifted, with a ``Created`` event when it
        was missing; returns its ready replicas as they stand."""
        meta = desired['metadata']
        current = get_or_none(self.clients.apps.read_namespaced_deployment,
                              meta['name'], meta['namespace'])
        if current is None or not deployment_matches(current, desired):
            applied = self.apply(self.clients.apps.patch_namespaced_deployment, desired)
            if current is None:
                kopf.event(app, type='Normal', reason='Created',
                           message=f"Created Deployment {meta['namespace']}/{meta['name']}")
            current = applied
        return int((current.get('status') or {}).get('readyReplicas') or 0)

    def ensure_service(self, desired: Object) -> None:
        """Applies the Service when it is missing or drifted."""
        meta = desired['metadata']
        current = get_or_none(self.clients.core.read_namespaced_service,
                              meta['name'], meta['namespace'])
        if current is None or not service_matches(current, desired):
            self.apply(self.clients.core.patch_namespaced_service, desired)

    def release(self, app: Object) -> None:
        """Deletes the marker ConfigMap; kopf then removes the finalizer."""
        meta = app['metadata']
        with self.lock(meta['namespace'], meta['name']):
            try:
                self.clients.core.delete_namespaced_config_map(
                    marker_name(meta['name']), meta['namespace'],
                    _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
            except ApiException as error:
                if error.status != 404:
                    raise

    def converge_owner(self, namespace: str, owner: Mapping[str, Any]) -> None:
        """Converges the WebApp the controller reference ``owner`` names, read once its lock is
        held, unless it is gone, replaced, being deleted or not yet handled by its own handlers
        (which add the finalizer first)."""
        with self.lock(namespace, owner['name']):
            app = get_or_none(self.clients.custom.get_namespaced_custom_object,
                              GROUP, VERSION, namespace, PLURAL, owner['name'])
            meta = (app or {}).get('metadata', {})
            if (app is None or meta.get('uid') != owner.get('uid')
                    or meta.get('deletionTimestamp')
                    or FINALIZER not in (meta.get('finalizers') or [])):
                return
            self.converge(app)

def reconciler(memo: kopf.Memo) -> Reconciler:
    """The reconciler the startup handler put in the operator's memo."""
    return memo['reconciler']


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Settings of the operator, the ``webapp`` plugin's where it has them, and its clients."""
    settings.persistence.finalizer = FINALIZER
    # kopf keeps a handler's retries and the spec it last handled on the WebApp. The WebApp's
    # status schema is structural, so the apiserver would prune them from the status (and a
    # retry would then wait for an event that never comes): they go in annotations.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage()
    # Four sync handlers run at once, as the other operators reconcile four WebApps at once.
    # kopf's per-object workers stay unlimited, as its users run it: each lingers for
    # `batching.idle_timeout` (5 s) after its object's last event, so a limit of four would
    # hold every slot idle for seconds per WebApp.
    settings.execution.max_workers = CONCURRENCY
    settings.peering.standalone = True
    # One namespace and three fixed resources: no watching of namespaces and CRDs.
    settings.scanning.disabled = True
    memo['reconciler'] = Reconciler(Clients.load())


@kopf.on.resume(GROUP, VERSION, PLURAL, id='converge')
@kopf.on.create(GROUP, VERSION, PLURAL, id='converge')
@kopf.on.update(GROUP, VERSION, PLURAL, id='converge')
def converge(body: kopf.Body, memo: kopf.Memo, retry: int, **_: Any) -> None:
    """Converges a WebApp created, changed or found at startup; kopf has added the finalizer.
    Failures are retried with a per-WebApp exponential backoff, reset by a success."""
    try:
        reconciler(memo).converge(plain(body))
    except RETRIED as error:
        raise kopf.TemporaryError(f'{describe(error)}; retrying', delay=delay(retry)) from error


@kopf.on.delete(GROUP, VERSION, PLURAL, id='release')
def release(body: kopf.Body, memo: kopf.Memo, retry: int, logger: kopf.Logger,
            **_: Any) -> None:
    """Deletes the marker of a deleted WebApp; kopf then removes the finalizer."""
    try:
        reconciler(memo).release(plain(body))
    except RETRIED as error:
        raise kopf.TemporaryError(f'{describe(error)}; retrying', delay=delay(retry)) from error
    logger.info('released WebApp')


@kopf.on.event('apps', 'v1', 'deployments', labels={MANAGED_BY_LABEL: MANAGED_BY})
@kopf.on.event('v1', 'services', labels={MANAGED_BY_LABEL: MANAGED_BY})
def owned_changed(event: kopf.RawEvent, body: kopf.Body, memo: kopf.Memo, logger: kopf.Logger,
                  **_: Any) -> None:
    """Converges the WebApp controlling a Deployment or Service that was deleted or changed (by
    someone else, or its readiness). kopf does not retry event handlers, so this one retries
    with backoff a few times; the WebApp's own handlers retry for longer."""
    if event['type'] is None:
        return  # listed at startup: the resume handlers converge every WebApp
    meta = body.get('metadata', {})
    owner = next((ref for ref in meta.get('ownerReferences') or []
                  if ref.get('controller') and ref.get('kind') == 'WebApp'
                  and ref.get('apiVersion') == f'{GROUP}/{VERSION}'), None)
    if owner is None:
        return
    for attempt in range(OWNED_ATTEMPTS):
        try:
            reconciler(memo).converge_owner(meta['namespace'], owner)
            return
        except RETRIED as error:
            logger.warning(f"converging WebApp {owner['name']} failed: {describe(error)}")
            time.sleep(delay(attempt))
    logger.warning(f"gave up converging WebApp {owner['name']} on this event")


def describe(error: Exception) -> str:
    """A one-line account of a failed request."""
    if isinstance(error, ApiException):
        return f'{error.status} {error.reason}'
    return f'{error.__class__.__name__}: {error}'


def main() -> None:
    """Runs the operator until SIGTERM or SIGINT."""
    kopf.configure(verbose=False)  # INFO to stderr
    namespace = os.environ.get(NAMESPACE_ENV) or None
    logging.getLogger('webapp-kopf').info(
        'webapp-kopf starting: namespace=%s concurrency=%d', namespace or '<all>', CONCURRENCY)
    kopf.run(
        standalone=True,
        clusterwide=namespace is None,
        namespaces=[namespace] if namespace else [],
        liveness_endpoint=None,
    )


if __name__ == '__main__':
    main()
