"""Write wasmop reconcilers in Python. A plugin registers one reconcile function with
`@wasmop.reconciler(...)`; `wasmop build` turns the plugin into a WebAssembly component
the wasmop host loads.

Objects are `Object` subclasses (`wasmop.kinds` has the built-in kinds), dicts whose fields also
read as snake_case attributes; `cache` reads them from the host's informer cache, `client` writes
them to the apiserver within the plugin's declared permissions, `events` records Kubernetes
Events, and the standard `logging` module logs through the host. A failed read or write raises an
`ApiError` subclass (`NotFound`, `Conflict`, ...); one that escapes a reconcile makes it retry.

    import logging
    from wasmop import Permission, Request, cache, client, reconciler
    from wasmop.kinds import ConfigMap

    log = logging.getLogger(__name__)

    @reconciler(name="stamp", version="0.1.0", primary=ConfigMap,
                permissions=[Permission(ConfigMap, ["patch"])], max_concurrent_reconciles=2)
    def reconcile(req: Request) -> None:
        cm = cache.get_or_none(ConfigMap, req.namespace, req.name)
        if cm is not None and "stamped" not in (cm.metadata.annotations or {}):
            client.patch(ConfigMap, req.namespace, req.name,
                         {"metadata": {"annotations": {"stamped": "yes"}}})
            log.info("stamped %s", req)
"""

from . import cache, client, conditions, events, kinds, log
from .errors import (AlreadyExists, ApiError, Conflict, DeniedBy, Forbidden, Invalid, NotFound,
                     Other, ReconcileError, Retryable, Terminal, Timeout, Unavailable)
from .fields import Fields
from .names import Gvk, ObjectKey, Request
from .object import Object
from .outcome import Done, Outcome, RequeueAfter
from .plugin import Reconciler, reconciler
from .registration import Index, Label, Permission, Predicate, Registration, Verb, Watch
from .webhooks import AdmissionRequest, ConversionFailed, Denied

log.install()

__all__ = [
    "AdmissionRequest", "AlreadyExists", "ApiError", "Conflict", "ConversionFailed", "Denied",
    "DeniedBy", "Done", "Fields", "Forbidden", "Gvk",
    "Index", "Invalid", "Label", "NotFound", "Object", "ObjectKey", "Other", "Outcome",
    "Permission", "Predicate", "ReconcileError", "Reconciler", "Registration", "Request",
    "RequeueAfter", "Retryable", "Terminal", "Timeout", "Unavailable", "Verb", "Watch", "cache",
    "client", "conditions", "events", "kinds", "log", "reconciler",
]
