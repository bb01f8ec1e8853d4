"""How kinds and objects are named: a `Gvk` (group, version, kind) and an `ObjectKey`
(namespace, name), both hashable and comparable.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Gvk:
    """Group, version and kind of a resource; the core group is the empty string."""

    group: str
    version: str
    kind: str

    @classmethod
    def from_api_version(cls, api_version: str, kind: str) -> "Gvk":
        """The GVK of an object's `apiVersion` (`v1` or `group/version`) and `kind`."""
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    @property
    def api_version(self) -> str:
        """The `apiVersion` string: `version` for the core group, `group/version` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind}"


@dataclass(frozen=True)
class ObjectKey:
    """A namespaced (or, with an empty namespace, cluster-scoped) object name."""

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


Request = ObjectKey
"""One reconcile request: the key of a primary object, which the reconciler reads from the cache."""
