"""The `webapp` plugin: each `WebApp` (`example.wasmop.dev/v1alpha1`) becomes a Deployment and a
ClusterIP Service it controls, plus an external marker ConfigMap that its finalizer deletes. Its
status reports the Deployment's ready replicas and a `Ready` condition. A converged WebApp is
reconciled without a single write. Its webhooks (`admission`) validate, default and convert
WebApps as the Rust plugin's do.

The finalizer is added and removed by updating the whole WebApp at the resourceVersion it was
read at, so a concurrent change makes the write fail with `Conflict`, which retries the
reconcile.
"""

import logging

from wasmop import AlreadyExists, Permission, Request, Terminal, cache, client, events, reconciler
from wasmop.kinds import ConfigMap, Deployment, Service

from . import admission, desired
from .resource import WebApp, WebAppSpec

__all__ = ["FINALIZER", "WebApp", "WebAppSpec", "reconcile"]

FINALIZER = "example.wasmop.dev/cleanup"
"""The finalizer that keeps a WebApp until its marker ConfigMap is gone."""

WRITES = ["create", "update", "patch", "delete"]
"""The verbs the plugin needs on the kinds it owns."""

log = logging.getLogger(__name__)


@reconciler(
    name="webapp",
    version=desired.VERSION,
    primary=WebApp,
    owns=[Deployment, Service],
    permissions=[
        Permission(Deployment, WRITES),
        Permission(Service, WRITES),
        Permission(WebApp, ["update", "patch", "status"]),
        Permission(ConfigMap, ["get", "create", "delete"]),
    ],
    max_concurrent_reconciles=4,
    reconcile_timeout=10,
)
def reconcile(req: Request) -> None:
    """Converges one WebApp: finalizer, marker, Deployment, Service, then status."""
    app = cache.get_or_none(WebApp, req.namespace, req.name)
    if app is None:
        return
    if app.is_deleting():
        finalize(app)
        return
    app = ensure_finalizer(app)
    ensure_marker(app)
    owner = app.controller_owner_ref()
    if owner is None:
        raise Terminal(f"WebApp {req} has no uid")
    deployment = ensure_deployment(app, desired.deployment(app, owner))
    ensure_service(desired.service(app, owner))
    status = desired.status(app, deployment.dig("status", "readyReplicas", default=0))
    if app.status != status:
        client.patch_status(WebApp, req.namespace, req.name, {"status": status})


reconcile.validator(WebApp)(admission.validate)
reconcile.defaulter(WebApp)(admission.default)
reconcile.converter(WebApp)(admission.convert)

def finalize(app: WebApp) -> None:
    """Deletes the marker and releases the WebApp by removing the finalizer."""
    if not app.has_finalizer(FINALIZER):
        return
    key = app.key
    client.delete(ConfigMap, key.namespace, desired.marker_name(key.name), missing_ok=True)
    app.remove_finalizer(FINALIZER)
    client.update(app)
    log.info("released WebApp %s", key)


def ensure_finalizer(app: WebApp) -> WebApp:
    """The WebApp with the finalizer, added by an update when it was missing."""
    if not app.add_finalizer(FINALIZER):
        return app
    return client.update(app)


def ensure_marker(app: WebApp) -> None:
    """Creates the marker ConfigMap when it does not exist."""
    marker = desired.marker(app)
    key = marker.key
    if cache.get_or_none(ConfigMap, key.namespace, key.name) is not None:
        return
    try:
        client.create(marker)
    except AlreadyExists:
        pass


def ensure_deployment(app: WebApp, want: Deployment) -> Deployment:
    """Applies the Deployment when it is missing or drifted; returns the Deployment as it
    stands."""
    key = want.key
    current = cache.get_or_none(Deployment, key.namespace, key.name)
    if current is not None and desired.deployment_matches(current, want):
        return current
    applied = client.apply(want, force=True)
    if current is None:
        events.normal(app, "Created", f"Created Deployment {key}")
    return applied


def ensure_service(want: Service) -> None:
    """Applies the Service when it is missing or drifted."""
    key = want.key
    current = cache.get_or_none(Service, key.namespace, key.name)
    if current is None or not desired.service_matches(current, want):
        client.apply(want, force=True)
