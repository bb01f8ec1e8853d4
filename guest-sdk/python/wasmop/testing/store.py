"""An in-memory stand-in for the cache and the apiserver, as `wasmop test`'s memory host keeps
them (`host/src/testing/memory.rs`): objects as JSON, written with the apiserver's essentials —
resourceVersion conflicts, generation bumps on spec changes (only an object with a spec has a
generation, as the apiserver gives ConfigMaps and Secrets none), the status subresource,
finalizers delaying deletion. Server-side apply is approximated by a merge of the applied fields.
"""

import copy
from typing import Any, Callable, Optional

from ._json import same, text
from .fixture import FixtureWrite, Ref, ref_of
from .jsonpatch import PatchFailed, apply_patch


class Refused(Exception):
    """A read or write the apiserver answers with an error: its reason and message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


def merge(target: Any, patch: Any) -> Any:
    """`target` with the JSON merge patch (RFC 7386) `patch` applied."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge(merged.get(key), value)
    return merged


class Store:
    """The objects a fixture's host holds, by `Ref`."""

    def __init__(self) -> None:
        self._objects: dict = {}
        self._revision = 0

    def seed(self, obj: dict) -> None:
        """Puts an object in place as if it had been created, keeping the uid, resourceVersion
        and generation it has and giving it those it lacks (`uid-N`, `N`, and 1 for an object
        with a spec)."""
        self._revision += 1
        obj = copy.deepcopy(obj)
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        meta = obj["metadata"]
        given = [("uid", f"uid-{self._revision}"), ("resourceVersion", str(self._revision))]
        if _has_generation(obj):
            given.append(("generation", 1))
        for key, value in given:
            if meta.get(key) is None:
                meta[key] = value
        self._objects[ref_of(obj)] = obj

    def get(self, ref: Ref) -> str:
        """The object's JSON text; `Refused` NotFound when it does not exist."""
        return text(self._current(ref))

    def list(self, api_version: str, kind: str, namespace: Optional[str],
             matches: Callable[[dict], bool]) -> list:
        """The JSON texts of the objects of a kind (in `namespace`, or all when `None`) that
        `matches`, in namespace and name order."""
        found = sorted((ref.namespace, ref.name, obj) for ref, obj in self._objects.items()
                       if (ref.api_version, ref.kind) == (api_version, kind)
                       and namespace in (None, ref.namespace) and matches(obj))
        return [text(obj) for _, _, obj in found]

    def write(self, write: FixtureWrite) -> Optional[str]:
        """Applies a write; returns the object as stored (`None` for a delete), or raises
        `Refused`."""
        ref, body = write.ref, copy.deepcopy(write.body)
        if write.verb == "create":
            if ref in self._objects:
                raise Refused("AlreadyExists", f"{ref} already exists")
            return self._store(ref, body, created=True)
        if write.verb == "update":
            current = self._check_version(ref, body)
            return self._store(ref, {**body, "status": current.get("status")})
        if write.verb == "update-status":
            current = self._check_version(ref, body)
            return self._store(ref, {**current, "status": body.get("status")})
        if write.verb == "delete":
            return self._delete(ref, body or {})
        return self._patch(write, body)

    def _current(self, ref: Ref) -> dict:
        if ref not in self._objects:
            raise Refused("NotFound", f"{ref} not found")
        return copy.deepcopy(self._objects[ref])

    def _check_version(self, ref: Ref, obj: dict) -> dict:
        current = self._current(ref)
        given = (obj.get("metadata") or {}).get("resourceVersion")
        if isinstance(given, str) and current["metadata"].get("resourceVersion") != given:
            raise Refused("Conflict", f"{ref}: the object has been modified; apply your "
                                      "changes to the latest version")
        return current

    def _patch(self, write: FixtureWrite, body: Any) -> str:
        ref = write.ref
        if write.verb == "apply" and ref not in self._objects:
            current: dict = {}
        else:
            current = self._current(ref)
        if write.verb == "json-patch":
            try:
                patched = apply_patch(current, body)
            except PatchFailed as failed:
                raise Refused("Invalid", str(failed)) from None
        else:
            patched = merge(current, body)
        if write.status:
            patched = {**current, "status": patched.get("status")}
        elif "status" in current:
            patched["status"] = current["status"]
        return self._store(ref, patched)

    def _delete(self, ref: Ref, options: dict) -> None:
        current = self._current(ref)
        meta = current["metadata"]
        for precondition in ("uid", "resourceVersion"):
            if precondition in options and meta.get(precondition) != options[precondition]:
                raise Refused("Conflict", f"{ref}: precondition failed")
        meta["deletionTimestamp"] = "1970-01-01T00:00:00Z"
        self._store(ref, current)

    def _store(self, ref: Ref, obj: dict, created: bool = False) -> str:
        """Stores `obj` as the new state of `ref`, maintaining resourceVersion, uid and
        generation; an object being deleted disappears once its finalizers are gone."""
        self._revision += 1
        old = None if created else self._objects.get(ref)
        meta = obj.get("metadata")
        meta = dict(meta) if isinstance(meta, dict) else {}
        meta["resourceVersion"] = str(self._revision)
        generated = _has_generation(obj)
        if old is None:
            meta["uid"] = f"uid-{self._revision}"
            if generated:
                meta["generation"] = 1
        else:
            meta["uid"] = old["metadata"].get("uid")
            if generated or "generation" in old["metadata"]:
                meta["generation"] = _generation(old, obj)
            if "deletionTimestamp" not in meta and "deletionTimestamp" in old["metadata"]:
                meta["deletionTimestamp"] = old["metadata"]["deletionTimestamp"]
        obj["metadata"] = meta
        finalizers = meta.get("finalizers")
        if "deletionTimestamp" in meta and not (isinstance(finalizers, list) and finalizers):
            self._objects.pop(ref, None)
        else:
            self._objects[ref] = obj
        return text(obj)


def _has_generation(obj: dict) -> bool:
    """Whether the apiserver gives `obj` a generation: kinds with a spec have one, kinds of bare
    data (ConfigMap, Secret) have none, so a recording of them replays alike."""
    return "spec" in obj


def _generation(old: dict, new: dict) -> int:
    """The generation of `new`, stored over `old`: one more when anything but metadata and
    status changed."""
    generation = old["metadata"].get("generation")
    if not isinstance(generation, int) or isinstance(generation, bool):
        generation = 1
    return generation + (not same(_spec(old), _spec(new)))


def _spec(obj: dict) -> dict:
    return {key: value for key, value in obj.items() if key not in ("metadata", "status")}
