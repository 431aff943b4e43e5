"""Task errors: what ``get`` raises, and how a Python exception becomes one.

Pure Python (no host).
"""

from __future__ import annotations

import os
import traceback
from typing import List, Optional

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

    A task that fails with a ``TaskError`` it got from ``get`` uncaught (or
    with an exception raised ``from`` one) fails with an ``application``
    error of its own whose ``causes`` start with that error, as Ray's
    ``RayTaskError`` keeps its cause; ``root`` is the error that started it.

    Attributes:
        kind: why it failed, one of :data:`ERROR_KINDS` (``"application"``
            for an exception the function raised, ``"timeout"``,
            ``"cancelled"``, ...).
        function: the remote function (``name``, ``component/name``) or actor
            method (``Class.method``) that failed.
        task: the id of the task that failed, 32 hex digits.
        message: the guest's message (for an exception: its type, message and
            traceback) or the host's.
        causes: the errors it passes on, nearest first (each without causes
            of its own); empty for a root.
    """

    def __init__(
        self,
        kind: str,
        function: str,
        task: str,
        message: str,
        causes: Optional[List["TaskError"]] = None,
    ):
        super().__init__(kind, function, task, message)
        self.kind = kind
        self.function = function
        self.task = task
        self.message = message
        self.causes: List[TaskError] = list(causes or [])

    @property
    def root(self) -> "TaskError":
        """The error that started the chain: the last cause, or this one."""
        return self.causes[-1] if self.causes else self

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


def passed_on(exc: BaseException) -> Optional[TaskError]:
    """The :class:`TaskError` an exception passes on: itself, or the first
    one in its ``__cause__`` / ``__context__`` chain (``raise X from e``, or
    raised while handling ``e``)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, TaskError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


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
