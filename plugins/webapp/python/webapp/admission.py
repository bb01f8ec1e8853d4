"""The `webapp` plugin's webhooks, as the Rust plugin's: WebApps are refused with more than 50
replicas or an image that is not a well-formed reference, get port 8080 when they name none, and
convert between `v1alpha1` and `v1beta1`, which calls `spec.replicas` `spec.instances`."""

import re
from typing import Optional

from wasmop import Object
from wasmop.webhooks import AdmissionRequest, ConversionFailed, Denied

MAX_REPLICAS = 50
"""The most replicas a WebApp may ask for."""

DEFAULT_PORT = 8080
"""The port a WebApp that names none gets."""

GROUP = "example.wasmop.dev"
"""The API group of WebApps."""

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*(?::[0-9]{{1,5}})?)"
_IMAGE = re.compile(
    rf"(?:(?P<host>{_HOST})/)?{_COMPONENT}(?:/{_COMPONENT})*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
    r"(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})?")


def well_formed_image(image: str) -> bool:
    """Whether `image` is `[host[:port]/]path[:tag][@algorithm:digest]` as the distribution spec
    writes it: a first part is a host only if it has a dot or a port or is `localhost`."""
    match = _IMAGE.fullmatch(image)
    if match is None or len(image.split("@")[0].rsplit(":", 1)[0]) > 255:
        return False
    host = match.group("host")
    return host is None or "." in host or ":" in host or host == "localhost" \
        or re.fullmatch(_COMPONENT, host) is not None


def validate(request: AdmissionRequest) -> None:
    """Admits a WebApp whose replicas are within 0..=50 and whose image is well-formed."""
    app = request.object
    if app is None:
        return
    spec = app.get("spec")
    if not isinstance(spec, dict):
        raise Denied("a WebApp needs a spec")
    field = "instances" if request.kind.version == "v1beta1" else "replicas"
    replicas = spec.get(field)
    if replicas is not None and not (isinstance(replicas, int) and 0 <= replicas <= MAX_REPLICAS):
        raise Denied(f"spec.{field} must be between 0 and {MAX_REPLICAS}, not {replicas}")
    image = spec.get("image")
    if not isinstance(image, str):
        raise Denied("spec.image is required")
    if not well_formed_image(image):
        raise Denied(f"spec.image {image!r} is not a well-formed image reference")


def default(request: AdmissionRequest) -> Object:
    """The request's WebApp with `spec.port` set to 8080 when it names none."""
    app = request.object
    if app is None:
        raise Denied("no WebApp to default")
    spec = app.get("spec")
    if not isinstance(spec, dict):
        raise Denied("a WebApp needs a spec")
    spec.setdefault("port", DEFAULT_PORT)
    return app


def _version(api_version: Optional[str]) -> str:
    group, _, version = (api_version or "").rpartition("/")
    if group != GROUP or version not in ("v1alpha1", "v1beta1"):
        raise ConversionFailed(f"{api_version} is not a WebApp version")
    return version


def convert(obj: Object, api_version: str) -> Object:
    """`obj` as a WebApp of `api_version` (`example.wasmop.dev/v1alpha1` or `.../v1beta1`)."""
    source, target = _version(obj.get("apiVersion")), _version(api_version)
    spec = obj.get("spec")
    if isinstance(spec, dict) and source != target:
        old, new = ("replicas", "instances") if target == "v1beta1" else ("instances", "replicas")
        if old in spec:
            spec[new] = spec.pop(old)
    obj["apiVersion"] = api_version
    return obj
