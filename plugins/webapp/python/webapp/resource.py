"""The `WebApp` custom resource (`example.wasmop.dev/v1alpha1`), as `deploy/crds/webapp.yaml`
declares it.
"""

from dataclasses import dataclass

from wasmop import Object


class WebApp(Object, group="example.wasmop.dev", version="v1alpha1"):
    """A web application: an image served on a port by some replicas."""

    def settings(self) -> "WebAppSpec":
        """The spec, with the CRD's defaults for absent fields."""
        spec = self.spec or {}
        return WebAppSpec(image=spec.get("image", ""), replicas=spec.get("replicas", 1),
                          port=spec.get("port", 8080))


@dataclass(frozen=True)
class WebAppSpec:
    """The desired state of a WebApp."""

    image: str
    """The container image to run."""
    replicas: int = 1
    """How many pods to run."""
    port: int = 8080
    """The port the container listens on and the Service exposes."""
