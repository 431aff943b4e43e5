"""Values as JSON payloads: encoding with the refs inside collected, and
decoding with refs turned back into :class:`ObjectRef` / ``ActorHandle``.

Pure Python (no host). The JSON form (the ``json`` codec of
``wit/runtime.wit``) is RFC 8259 text, UTF-8; an object ref inside a value
is ``{"$object": "<40 hex digits>"}`` and an actor handle
``{"$actor": "<32 hex digits>"}``, each id also listed in the payload's
``refs`` (an actor handle lists its handle object).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import threading
from typing import Any, Callable, List, Optional

from ._ids import ObjectKey, TaskKey, parse_object_hex, parse_task_hex

#: Codec names, as the WIT's ``codec`` enum.
RKYV = "rkyv"
JSON = "json"
RAW = "raw"

#: Makes the value a ``$actor`` id decodes to; set by ``wray._api``.
actor_factory: Optional[Callable[[TaskKey], Any]] = None
#: Makes the value a ``$object`` id decodes to; set by ``wray._api``.
ref_factory: Optional[Callable[[ObjectKey], Any]] = None


class Encoded:
    """One encoded value: its bytes, the ids of the refs inside it (in order
    of first appearance, each once), and the Python objects holding them
    (kept alive until the host has the value)."""

    __slots__ = ("data", "refs", "holders")

    def __init__(self, data: bytes, refs: List[ObjectKey], holders: List[Any]):
        self.data = data
        self.refs = refs
        self.holders = holders


class _Found:
    """What one :func:`encode_json` call found inside its value."""

    __slots__ = ("refs", "seen", "holders")

    def __init__(self) -> None:
        self.refs: List[ObjectKey] = []
        self.seen: set = set()
        self.holders: List[Any] = []


#: The calls of :func:`encode_json` under way on each thread, innermost
#: last (a value's ``tolist()`` or dataclass field may encode another value
#: meanwhile): ``_finding.stack``.
_finding = threading.local()


def _stack() -> List[_Found]:
    stack = getattr(_finding, "stack", None)
    if stack is None:
        stack = _finding.stack = []
    return stack


def _default(o: Any) -> Any:
    """What :mod:`json` cannot write itself (see :func:`encode_json`)."""
    to_json = getattr(type(o), "_wray_json", None)
    if to_json is not None:
        found = _stack()[-1]
        form, key = to_json(o)
        if key not in found.seen:
            found.seen.add(key)
            found.refs.append(key)
        found.holders.append(o)
        return form
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
    if isinstance(o, enum.Enum):
        return o.value
    if isinstance(o, (bytes, bytearray, memoryview)):
        return list(bytes(o))
    if isinstance(o, (set, frozenset)):
        return list(o)
    tolist = getattr(o, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


#: One encoder for every call: ``json.dumps`` with arguments builds a
#: ``JSONEncoder`` (and a C encoder under it) on every call.
_ENCODER = json.JSONEncoder(
    default=_default,
    allow_nan=False,
    ensure_ascii=False,
    separators=(",", ":"),
)

#: JSON strings without escaping non-ASCII (`ensure_ascii=False`).
_encode_str = json.encoder.encode_basestring
_SCALARS = {None: b"null", True: b"true", False: b"false"}


def encode_json(value: Any) -> Encoded:
    """``value`` as JSON text (UTF-8).

    Besides what :mod:`json` writes (dict, list, tuple, str, int, float, bool,
    None) it writes ObjectRefs and ActorHandles in their ``$object`` /
    ``$actor`` forms, dataclasses as objects of their fields, enums as their
    values, sets as arrays, ``bytes`` as arrays of byte values and anything
    with a ``tolist()`` (numpy arrays and scalars) as that.

    Raises:
        TypeError: a value JSON cannot hold.
        ValueError: NaN or an infinity (not JSON), or a cycle.
    """
    kind = type(value)
    # A plain scalar (most arguments and results) holds no ref: written
    # directly, as json.dumps writes it.
    if kind is int:
        return Encoded(int.__repr__(value).encode("ascii"), [], [])
    if kind is str:
        return Encoded(_encode_str(value).encode("utf-8"), [], [])
    if value is None or kind is bool:
        return Encoded(_SCALARS[value], [], [])
    found = _Found()
    stack = _stack()
    stack.append(found)
    try:
        text = _ENCODER.encode(value)
    finally:
        stack.pop()
    return Encoded(text.encode("utf-8"), found.refs, found.holders)


def _object_hook(d: dict) -> Any:
    if len(d) == 1:
        if "$object" in d:
            text = d["$object"]
            if isinstance(text, str):
                key = parse_object_hex(text)
                if ref_factory is None:
                    return d
                return ref_factory(key)
        elif "$actor" in d:
            text = d["$actor"]
            if isinstance(text, str):
                key = parse_task_hex(text)
                if actor_factory is None:
                    return d
                return actor_factory(key)
    return d


#: One decoder for every call: ``json.loads`` with an ``object_hook`` builds
#: a ``JSONDecoder`` each time.
_DECODER = json.JSONDecoder(object_hook=_object_hook)


def decode_json(data: bytes) -> Any:
    """The value of JSON text ``data``, refs and handles made live.

    Raises:
        ValueError: not JSON (or not UTF-8), or a malformed ``$object`` /
            ``$actor`` id.
    """
    if isinstance(data, str):
        text = data
    else:
        if not isinstance(data, bytes):
            data = bytes(data)
        # As json.loads reads bytes (UTF-8, -16 or -32, by their start).
        text = data.decode(json.detect_encoding(data), "surrogatepass")
    return _DECODER.decode(text)
