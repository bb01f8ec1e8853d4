"""`@NAME@`: marks each @KIND@ (`@API_VERSION@`) with the generation it last reconciled, in the
annotation `@NAME@.wasmop.dev/observed-generation`. Replace `reconcile` with your own logic and
`fixtures/` with what it should do."""
from wasmop import Object, Permission, Request, cache, client, reconciler

OBSERVED = "@NAME@.wasmop.dev/observed-generation"


class @KIND@(Object, group="@GROUP@", version="@VERSION@"):
    """A @KIND@ (@API_VERSION@)."""


@reconciler(name="@NAME@", version="0.1.0", primary=@KIND@,
            permissions=[Permission(@KIND@, ["patch"])])
def reconcile(req: Request) -> None:
    obj = cache.get_or_none(@KIND@, req.namespace, req.name)
    if obj is None:
        return
    generation = str(obj.dig("metadata", "generation") or 0)
    if obj.dig("metadata", "annotations", OBSERVED) != generation:
        client.patch(@KIND@, req.namespace, req.name,
                     {"metadata": {"annotations": {OBSERVED: generation}}})
