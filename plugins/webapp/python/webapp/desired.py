"""What a WebApp should own — its Deployment, Service, marker ConfigMap and status — and whether
what exists already matches, so that a converged WebApp causes no writes.
"""

import copy
from typing import Optional

from wasmop import Fields, Object
from wasmop.conditions import condition, set_condition
from wasmop.kinds import ConfigMap, Deployment, Service

from .resource import WebApp

VERSION = "0.1.0"
"""The plugin's version, in its registration and in the applied-by annotation."""

NAME_LABEL = "app.kubernetes.io/name"
"""The label naming the WebApp; the Deployment selects its pods by it."""
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
"""The label saying who manages the owned objects."""
MARKER_LABEL = "example.wasmop.dev/webapp"
"""The label on the marker ConfigMap naming its WebApp."""
CONTAINER = "web"
"""The name of the web container."""
APPLIED_BY_ANNOTATION = "example.wasmop.dev/applied-by"
"""The annotation naming the plugin version that last applied an owned object."""


def marker_name(name: str) -> str:
    """The name of the external marker ConfigMap of the WebApp `name`."""
    return f"webapp-marker-{name}"


def marker(app: WebApp) -> ConfigMap:
    """The marker ConfigMap: external state the finalizer cleans up, so it has no owner
    reference."""
    name = app.metadata.name
    return ConfigMap(metadata=Fields(name=marker_name(name), namespace=app.metadata.namespace,
                                     labels={MARKER_LABEL: name}))


def _selector(app: WebApp) -> dict:
    return {NAME_LABEL: app.metadata.name}


def _owned_metadata(app: WebApp, owner: Fields) -> Fields:
    return Fields(
        name=app.metadata.name,
        namespace=app.metadata.namespace,
        labels={**_selector(app), MANAGED_BY_LABEL: "wasmop"},
        annotations={APPLIED_BY_ANNOTATION: f"webapp/{VERSION}"},
        owner_references=[owner],
    )


def deployment(app: WebApp, owner: Fields) -> Deployment:
    """The Deployment the WebApp asks for, controlled by it through `owner`."""
    spec = app.settings()
    container = Fields(name=CONTAINER, image=spec.image,
                       ports=[Fields(name="http", container_port=spec.port, protocol="TCP")])
    return Deployment(
        metadata=_owned_metadata(app, owner),
        spec=Fields(
            replicas=spec.replicas,
            selector=Fields(match_labels=_selector(app)),
            template=Fields(metadata=Fields(labels=_selector(app)),
                            spec=Fields(containers=[container])),
        ),
    )


def service(app: WebApp, owner: Fields) -> Service:
    """The ClusterIP Service the WebApp asks for, controlled by it through `owner`."""
    port = app.settings().port
    return Service(
        metadata=_owned_metadata(app, owner),
        spec=Fields(
            type="ClusterIP",
            selector=_selector(app),
            ports=[Fields(name="http", port=port, target_port=port, protocol="TCP")],
        ),
    )


def _contains(actual: Optional[dict], desired: Optional[dict]) -> bool:
    actual = actual or {}
    return all(actual.get(key) == value for key, value in (desired or {}).items())


def _has_metadata(actual: Fields, desired: Fields) -> bool:
    """Whether `actual` (object or template metadata) has every label and annotation `desired`
    sets."""
    return (_contains(actual.dig("labels"), desired.dig("labels"))
            and _contains(actual.dig("annotations"), desired.dig("annotations")))


def _controller_uid(obj: Object) -> Optional[str]:
    ref = obj.controller_ref()
    return ref.uid if ref else None


def _web_container(deploy: Deployment) -> Optional[Fields]:
    containers = deploy.dig("spec", "template", "spec", "containers", default=[])
    return next((c for c in containers if c.name == CONTAINER), None)


def deployment_matches(actual: Deployment, desired: Deployment) -> bool:
    """Whether the existing Deployment has every field the desired one sets."""
    web_a, web_d = _web_container(actual), _web_container(desired)
    containers_match = (web_a is not None and web_d is not None
                        and web_a.image == web_d.image and web_a.ports == web_d.ports)
    template_metadata = ("spec", "template", "metadata")
    return (_has_metadata(actual.metadata, desired.metadata)
            and _controller_uid(actual) == _controller_uid(desired)
            and actual.dig("spec", "replicas") == desired.dig("spec", "replicas")
            and actual.dig("spec", "selector") == desired.dig("spec", "selector")
            and _has_metadata(actual.dig(*template_metadata, default=Fields()),
                              desired.dig(*template_metadata, default=Fields()))
            and containers_match)


def _ports(service: Service) -> list:
    return [(p.name, p.port, p.target_port, p.protocol)
            for p in service.dig("spec", "ports", default=[])]


def service_matches(actual: Service, desired: Service) -> bool:
    """Whether the existing Service has every field the desired one sets."""
    if actual.spec is None or desired.spec is None:
        return False
    return (_has_metadata(actual.metadata, desired.metadata)
            and _controller_uid(actual) == _controller_uid(desired)
            and actual.spec.type == desired.spec.type
            and actual.spec.selector == desired.spec.selector
            and _ports(actual) == _ports(desired))


def status(app: WebApp, ready_replicas: int) -> Fields:
    """The status the WebApp should have given its Deployment's ready replicas; conditions keep
    their lastTransitionTime while their status holds."""
    replicas = app.settings().replicas
    generation = app.metadata.generation
    desired = copy.deepcopy(app.status) or Fields()
    desired.observed_generation = generation
    desired.ready_replicas = ready_replicas
    available = ready_replicas >= replicas
    set_condition(desired.setdefault("conditions", []), condition(
        "Ready", available, "Available" if available else "Progressing",
        f"{ready_replicas}/{replicas} replicas ready", observed_generation=generation))
    return desired
