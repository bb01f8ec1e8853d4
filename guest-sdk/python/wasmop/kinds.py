"""The built-in Kubernetes kinds a reconciler commonly reads and writes. Declare any other kind
the same way: `class PodDisruptionBudget(Object, group="policy", version="v1")`.
"""

from .object import Object


class Namespace(Object, version="v1"):
    """A Namespace (core/v1, cluster-scoped)."""


class Pod(Object, version="v1"):
    """A Pod (core/v1)."""


class Service(Object, version="v1"):
    """A Service (core/v1)."""


class ConfigMap(Object, version="v1"):
    """A ConfigMap (core/v1)."""


class Secret(Object, version="v1"):
    """A Secret (core/v1)."""


class ServiceAccount(Object, version="v1"):
    """A ServiceAccount (core/v1)."""


class PersistentVolumeClaim(Object, version="v1"):
    """A PersistentVolumeClaim (core/v1)."""


class Deployment(Object, group="apps", version="v1"):
    """A Deployment (apps/v1)."""


class StatefulSet(Object, group="apps", version="v1"):
    """A StatefulSet (apps/v1)."""


class DaemonSet(Object, group="apps", version="v1"):
    """A DaemonSet (apps/v1)."""


class ReplicaSet(Object, group="apps", version="v1"):
    """A ReplicaSet (apps/v1)."""


class Job(Object, group="batch", version="v1"):
    """A Job (batch/v1)."""


class CronJob(Object, group="batch", version="v1"):
    """A CronJob (batch/v1)."""


class Ingress(Object, group="networking.k8s.io", version="v1"):
    """An Ingress (networking.k8s.io/v1)."""


class NetworkPolicy(Object, group="networking.k8s.io", version="v1"):
    """A NetworkPolicy (networking.k8s.io/v1)."""


class Role(Object, group="rbac.authorization.k8s.io", version="v1"):
    """A Role (rbac.authorization.k8s.io/v1)."""


class RoleBinding(Object, group="rbac.authorization.k8s.io", version="v1"):
    """A RoleBinding (rbac.authorization.k8s.io/v1)."""


class Lease(Object, group="coordination.k8s.io", version="v1"):
    """A Lease (coordination.k8s.io/v1)."""
