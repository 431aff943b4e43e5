"""Reference counting on the guest side, and :class:`ObjectRef`.

The host counts which objects each instance holds (see the WIT ``objects``
interface). This module keeps the instance's own count of live
:class:`ObjectRef` objects per id, so the host hears only of the last one
dying (``objects.release``), as from the Rust SDK, though in batches at the
SDK's next call into the host rather than at once.

Values returned from an export hold refs the host has not taken over yet
when the export's Python frame ends; :func:`defer` keeps them alive until
the next export call starts (:func:`flush_deferred`).

Pure Python: the host's ``release`` is plugged in by ``wray._host``.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

from ._ids import ObjectKey, object_hex, parse_object_hex, task_hex

#: Live ObjectRefs (and actor handles) per object id in this instance.
_counts: Dict[ObjectKey, int] = {}
#: Objects kept alive until the host has taken over the value holding them.
_deferred: List[Any] = []
#: Ids whose last ref died, not yet released at the host.
_pending: List[ObjectKey] = []
#: Tells the host an id is no longer held: ``release([key])``. None: no host
#: (unit tests), nothing to tell.
release_hook: Optional[Callable[[List[ObjectKey]], None]] = None


def acquire(key: ObjectKey) -> None:
    """One more live ref to ``key``."""
    _counts[key] = _counts.get(key, 0) + 1


def release(key: ObjectKey) -> None:
    """One live ref to ``key`` fewer; after the last one the host is told,
    at the next :func:`flush_releases`."""
    n = _counts.get(key)
    if n is None:
        return
    if n > 1:
        _counts[key] = n - 1
        return
    del _counts[key]
    _pending.append(key)


def flush_releases() -> None:
    """Tells the host, in one ``objects.release``, of the ids whose last ref
    died since the last flush (and that no new ref took up since).

    ``__del__`` only queues: it runs wherever the garbage collector happens
    to run, which may be inside the canonical ABI's glue, where a call into
    the host would trap. The SDK flushes at safe points instead: before each
    host call it makes and at the start and end of each export.
    """
    if not _pending:
        return
    keys = [k for k in dict.fromkeys(_pending) if k not in _counts]
    _pending.clear()
    hook = release_hook
    if keys and hook is not None:
        hook(keys)


def count(key: ObjectKey) -> int:
    """Live refs to ``key`` in this instance (for tests)."""
    return _counts.get(key, 0)


def defer(holders: List[Any]) -> None:
    """Keeps ``holders`` (ObjectRefs, ActorHandles) alive until
    :func:`flush_deferred`."""
    if holders:
        _deferred.extend(holders)


def flush_deferred() -> None:
    """Drops what :func:`defer` kept: the host holds what it needs now."""
    if _deferred:
        _deferred.clear()


class ObjectRef:
    """A reference to an immutable object in the object store: a task's
    return value or a value stored with :func:`wray.put` (Ray's
    ``ObjectRef``).

    Passing an ``ObjectRef`` as an argument of ``.remote(..)`` makes the task
    depend on it: the host runs the task once the object exists and the
    function receives its value. An ``ObjectRef`` inside a value (a list of
    refs, say) travels as a reference, unresolved, as in Ray; its JSON form
    is ``{"$object": "<40 hex digits>"}``.

    Refs are counted: the object stays in the store while any ``ObjectRef``
    to it is alive in any task, or any stored value holds it.
    """

    __slots__ = ("_key", "__weakref__")

    def __init__(self, key: ObjectKey):
        acquire(key)
        self._key = key

    @classmethod
    def from_hex(cls, text: str) -> "ObjectRef":
        """The ref to object ``text`` (40 hex digits), e.g. one from the HTTP
        API; it keeps the object alive only if this task holds it already."""
        return cls(parse_object_hex(text))

    def hex(self) -> str:
        """The object's id, 40 hex digits (its task's 32, then its index's 8)."""
        return object_hex(self._key)

    def task_id(self) -> str:
        """The id of the task that made the object, 32 hex digits."""
        return task_hex((self._key[0], self._key[1]))

    def get(self, timeout: Optional[float] = None) -> Any:
        """Same as ``wray.get(self, timeout)``."""
        from . import _api

        return _api.get(self, timeout=timeout)

    def _wray_json(self):
        return {"$object": object_hex(self._key)}, self._key

    def __del__(self) -> None:
        try:
            release(self._key)
        except Exception:
            pass

    def __copy__(self) -> "ObjectRef":
        return ObjectRef(self._key)

    def __deepcopy__(self, memo: Any) -> "ObjectRef":
        return ObjectRef(self._key)

    def __reduce__(self):
        return (ObjectRef.from_hex, (self.hex(),))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectRef) and other._key == self._key

    def __hash__(self) -> int:
        return hash(("ObjectRef", self._key))

    def __repr__(self) -> str:
        return f"ObjectRef({self.hex()})"
