"""Task errors: what ``get`` raises, and how a Python exception becomes one.

Pure Python (no host).
"""

from __future__ import annotations

import os
import traceback
from typing import Optional

#: The WIT ``error-kind`` names, in the WIT's order (its enum's values).
ERROR_KINDS = (
    "application",
    "panic",
    "trap",
    "out-of-memory",
    "timeout",
    "invalid-argument",
    "not-found",
    "actor-died",
    "system",
    "infeasible",
    "cancelled",
)

APPLICATION = "application"
PANIC = "panic"
TRAP = "trap"
OUT_OF_MEMORY = "out-of-memory"
TIMEOUT = "timeout"
INVALID_ARGUMENT = "invalid-argument"
NOT_FOUND = "not-found"
ACTOR_DIED = "actor-died"
SYSTEM = "system"
INFEASIBLE = "infeasible"
CANCELLED = "cancelled"


class TaskError(Exception):
    """A failed task (Ray's ``RayTaskError``), raised by :func:`wray.get` on
    its result or on anything that depends on it: the original error travels
    unchanged through dependencies, so ``task`` and ``function`` name the
    task that failed first.

    Attributes:
        kind: why it failed, one of :data:`ERROR_KINDS` (``"application"``
            for an exception the function raised, ``"timeout"``,
            ``"cancelled"``, ...).
        function: the remote function (``name``, ``component/name``) or actor
            method (``Class.method``) that failed.
        task: the id of the task that failed, 32 hex digits.
        message: the guest's message (for an exception: its type, message and
            traceback) or the host's.
    """

    def __init__(self, kind: str, function: str, task: str, message: str):
        super().__init__(kind, function, task, message)
        self.kind = kind
        self.function = function
        self.task = task
        self.message = message

    def __str__(self) -> str:
        return format_task_error(self.task, self.function, self.kind, self.message)

    def __repr__(self) -> str:
        return (
            f"TaskError(kind={self.kind!r}, function={self.function!r}, "
            f"task={self.task!r}, message={self.message!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TaskError):
            return NotImplemented
        return (self.kind, self.function, self.task, self.message) == (
            other.kind,
            other.function,
            other.task,
            other.message,
        )

    __hash__ = Exception.__hash__


def format_task_error(task: str, function: str, kind: str, message: str) -> str:
    """The one wording of a task error, as the host and the Rust SDK write it
    (``wray_abi::write_task_error``)."""
    return f"task {task} ({function}) failed: {kind}: {message}"


def exception_type_name(exc: BaseException) -> str:
    """``ValueError`` for a builtin, ``module.Qualname`` otherwise."""
    cls = type(exc)
    module = getattr(cls, "__module__", None)
    name = getattr(cls, "__qualname__", cls.__name__)
    if module in (None, "builtins", "__main__"):
        return name
    return f"{module}.{name}"


def exception_summary(exc: BaseException) -> str:
    """``Type: message`` (just ``Type`` when the message is empty)."""
    text = str(exc)
    name = exception_type_name(exc)
    return f"{name}: {text}" if text else name


#: Frames of files under this directory (the SDK's own) are left out of the
#: head of a task's traceback: it starts at the user's function.
SDK_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def format_exception(exc: BaseException, skip_dir: Optional[str] = SDK_DIR) -> str:
    """The message of the task error an uncaught exception becomes: its type
    and message on the first line, then the full Python traceback (chained
    causes included), less the SDK's own frames before the user's code."""
    tb = exc.__traceback__
    if skip_dir:
        while tb is not None and tb.tb_frame.f_code.co_filename.startswith(skip_dir):
            tb = tb.tb_next
        if tb is None:
            tb = exc.__traceback__
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return f"{exception_summary(exc)}\n\n{text.rstrip()}"
