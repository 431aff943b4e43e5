"""Ids of tasks, actors and objects, as the WIT records and as hex text.

Pure Python (no host): an id is kept as a plain tuple, ``(hi, lo)`` for a
task or actor and ``(hi, lo, index)`` for an object, and written the way the
host prints it: a task's 32 lowercase hex digits (``hi`` then ``lo``), an
object's 40 (its task's 32, then 8 of its index).
"""

from __future__ import annotations

from typing import Tuple

TaskKey = Tuple[int, int]
ObjectKey = Tuple[int, int, int]

_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1


def task_hex(key: TaskKey) -> str:
    """``(hi, lo)`` as 32 hex digits."""
    hi, lo = key
    return f"{hi & _U64:016x}{lo & _U64:016x}"


def object_hex(key: ObjectKey) -> str:
    """``(hi, lo, index)`` as 40 hex digits."""
    hi, lo, index = key
    return f"{hi & _U64:016x}{lo & _U64:016x}{index & _U32:08x}"


def _hex_digits(text: object, n: int, what: str) -> str:
    if not isinstance(text, str) or len(text) != n:
        raise ValueError(f"{what} must be {n} hex digits, got {text!r}")
    try:
        int(text, 16)
    except ValueError:
        raise ValueError(f"{what} must be {n} hex digits, got {text!r}") from None
    if text.startswith(("+", "-")) or "_" in text or " " in text:
        raise ValueError(f"{what} must be {n} hex digits, got {text!r}")
    return text


def parse_task_hex(text: str) -> TaskKey:
    """The inverse of :func:`task_hex`."""
    text = _hex_digits(text, 32, "an actor or task id")
    return int(text[:16], 16), int(text[16:], 16)


def parse_object_hex(text: str) -> ObjectKey:
    """The inverse of :func:`object_hex`."""
    text = _hex_digits(text, 40, "an object id")
    return int(text[:16], 16), int(text[16:32], 16), int(text[32:], 16)


def actor_handle_object(actor: TaskKey) -> ObjectKey:
    """The object standing for actor ``actor``'s handles: the first return
    object of its creation task (held by every handle, as in the Rust SDK)."""
    return actor[0], actor[1], 1
