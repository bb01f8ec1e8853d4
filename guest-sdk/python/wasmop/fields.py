"""JSON objects that read like the Kubernetes Python client's models.

A `Fields` is a `dict`, so `json.dumps`, `==` and `obj["spec"]["replicas"]` work as usual, whose
keys can also be read and written as snake_case attributes: `dep.status.ready_replicas` is
`dep["status"]["readyReplicas"]`, `svc.spec.cluster_ip` is `svc["spec"]["clusterIP"]`. An absent
field reads as `None`, like an unset field of a client model. Nested objects, including those
inside lists, are `Fields` too, whether parsed from the host or assigned. Keys that are not
identifiers (label keys) or that name a dict method (`items`, `values`, `keys`, ...) are read with
`[]`.
"""

from typing import Any

_ACRONYMS = {
    "id": "ID",
    "ip": "IP",
    "ips": "IPs",
    "cidr": "CIDR",
    "cidrs": "CIDRs",
    "cpu": "CPU",
    "tls": "TLS",
    "url": "URL",
    "uri": "URI",
    "pid": "PID",
    "ipc": "IPC",
}


def camel(name: str) -> str:
    """The JSON key Kubernetes uses for a snake_case field name: `cluster_ip` -> `clusterIP`."""
    first, *rest = name.split("_")
    return first + "".join(_ACRONYMS.get(part, part[:1].upper() + part[1:]) for part in rest)


def wrap(value: Any) -> Any:
    """The value with every plain dict in it, at any depth, turned into `Fields`."""
    if isinstance(value, Fields):
        return value
    if isinstance(value, dict):
        return Fields(value)
    if isinstance(value, list):
        return [wrap(item) for item in value]
    return value


class Fields(dict):
    """A JSON object whose keys are also snake_case attributes; see the module docs.

    `Fields(container_port=8080, name="http")` builds `{"containerPort": 8080, "name": "http"}`:
    keyword names are turned into JSON keys, dict arguments are taken as they are.
    """

    __slots__ = ()

    def __init__(self, *mappings: Any, **fields: Any) -> None:
        super().__init__()
        for mapping in mappings:
            self.update(mapping)
        for name, value in fields.items():
            self[camel(name)] = value

    @classmethod
    def _parsed(cls, pairs: dict) -> "Fields":
        """Wraps a dict whose nested values are already `Fields`, as `json.loads` builds them."""
        fields = cls.__new__(cls)
        dict.update(fields, pairs)
        return fields

    def _key(self, name: str) -> str:
        return name if name in self else camel(name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.get(self._key(name))

    def __setattr__(self, name: str, value: Any) -> None:
        self[self._key(name)] = value

    def __delattr__(self, name: str) -> None:
        self.pop(self._key(name), None)

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, wrap(value))

    def update(self, *mappings: Any, **items: Any) -> None:
        """Sets every key of the mappings and keywords, as `dict.update` does."""
        for key, value in dict(*mappings, **items).items():
            self[key] = value

    def dig(self, *keys: Any, default: Any = None) -> Any:
        """The value at a path of JSON keys (and list indexes), or `default` when any step is
        absent: `dep.dig("status", "readyReplicas", default=0)`."""
        value: Any = self
        for key in keys:
            try:
                value = value[key]
            except (KeyError, IndexError, TypeError):
                return default
            if value is None:
                return default
        return value

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The value at `key`, stored first as `default` when absent."""
        if key not in self:
            self[key] = default
        return self[key]
