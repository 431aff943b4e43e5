"""The host's side of the boundary: thin wrappers over the WIT imports
(``objects``, ``mapping``, ``tasks``, ``runtime``) that componentize-py
generates as ``wit_world.imports``, converting ids between the WIT records
and the SDK's tuples and errors into :class:`TaskError`.

The bindings exist only inside a component (componentize-py generates them
when it builds one); :func:`bind` finds them on first use, so the rest of
the SDK imports without them (unit tests install a fake host first).
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Sequence

from . import _refs
from ._errors import ERROR_KINDS, TaskError
from ._ids import ObjectKey, TaskKey, task_hex

#: Bytes from which ``put`` hands a value to ``mapping.put-bytes`` (one host
#: copy straight into the shared store) rather than ``objects.put``: the
#: host's ``INLINE_MAX`` (wray-abi), 100 KiB.
INLINE_MAX = 100 << 10

types: Any = None
objects: Any = None
mapping: Any = None
tasks: Any = None
runtime: Any = None
Err: Any = None
_bound = False

_CODECS: dict = {}
_CODEC_NAMES: dict = {}


def bind() -> bool:
    """Finds the generated bindings; returns whether there are any."""
    global types, objects, mapping, tasks, runtime, Err, _bound
    try:
        from componentize_py_types import Err as _Err  # type: ignore
        from wit_world.imports import mapping as _mapping  # type: ignore
        from wit_world.imports import objects as _objects  # type: ignore
        from wit_world.imports import runtime as _runtime  # type: ignore
        from wit_world.imports import tasks as _tasks  # type: ignore
        from wit_world.imports import types as _types  # type: ignore
    except ImportError:
        _bound = False
        _refs.release_hook = None
        return False
    types, objects, mapping, tasks, runtime, Err = (
        _types,
        _objects,
        _mapping,
        _tasks,
        _runtime,
        _Err,
    )
    _CODECS.clear()
    _CODECS.update({"rkyv": types.Codec.RKYV, "json": types.Codec.JSON, "raw": types.Codec.RAW})
    _CODEC_NAMES.clear()
    _CODEC_NAMES.update({v: k for k, v in _CODECS.items()})
    _OPTIONS_CACHE.clear()
    _bound = True
    _refs.release_hook = release
    return True


def require() -> None:
    """Raises unless the bindings are there (code run outside a component)."""
    if not _bound and not bind():
        raise RuntimeError(
            "wray: not running inside a wray component (no wit_world bindings); "
            "build the app with `python -m wray.build` and run it with `wray run`"
        )


# -- ids ---------------------------------------------------------------------


def oid(key: ObjectKey) -> Any:
    return types.ObjectId(types.TaskId(key[0], key[1]), key[2])


def tid(key: TaskKey) -> Any:
    return types.TaskId(key[0], key[1])


def okey(o: Any) -> ObjectKey:
    t = o.task
    return (t.hi, t.lo, o.index)


def tkey(t: Any) -> TaskKey:
    return (t.hi, t.lo)


def codec(name: str) -> Any:
    return _CODECS[name]


def codec_name(c: Any) -> str:
    name = _CODEC_NAMES.get(c)
    if name is None:
        name = getattr(c, "name", str(c)).lower()
    return name


# -- errors ------------------------------------------------------------------


def kind_name(kind: Any) -> str:
    name = getattr(kind, "name", None)
    if isinstance(name, str):
        return name.lower().replace("_", "-")
    try:
        return ERROR_KINDS[int(kind)]
    except (ValueError, IndexError, TypeError):
        return str(kind)


def from_wit_error(e: Any) -> TaskError:
    """The :class:`TaskError` of a WIT ``task-error`` (or ``error-cause``)."""
    causes = [from_wit_error(c) for c in getattr(e, "causes", [])]
    return TaskError(kind_name(e.kind), e.function, task_hex(tkey(e.task)), e.message, causes)


def current_task() -> Any:
    try:
        return runtime.task_id()
    except Exception:
        return types.TaskId(0, 0)


def wit_error(kind: str, function: str, message: str, cause: Optional[TaskError] = None) -> Any:
    """A WIT ``task-error`` raised by this guest in the running task,
    passing ``cause`` on (named first among its causes, then its own)."""
    causes = [] if cause is None else [wit_cause(c) for c in [cause, *cause.causes]]
    return types.TaskError(
        types.ErrorKind[kind.upper().replace("-", "_")], function, current_task(), message, causes
    )


def wit_cause(e: TaskError) -> Any:
    """A :class:`TaskError` as a WIT ``error-cause``."""
    try:
        hi, lo = int(e.task[:16], 16), int(e.task[16:], 16)
        task = types.TaskId(hi, lo)
    except (TypeError, ValueError):
        task = current_task()
    try:
        kind = types.ErrorKind[str(e.kind).upper().replace("-", "_")]
    except KeyError:
        kind = types.ErrorKind.APPLICATION
    return types.ErrorCause(kind, str(e.function), task, str(e.message))


def raising(kind: str, function: str, message: str) -> TaskError:
    """A :class:`TaskError` raised by this guest in the running task (the
    SDK's own, e.g. ``invalid-argument``): it leaves the export as it is."""
    e = TaskError(kind, function, task_hex(tkey(current_task())), message)
    e.raised_here = True
    return e


# -- payloads and arguments --------------------------------------------------


def payload(codec_: str, data: bytes, refs: Sequence[ObjectKey]) -> Any:
    return types.Payload(_CODECS[codec_], data, [oid(k) for k in refs])


def value_arg(codec_: str, data: bytes, refs: Sequence[ObjectKey]) -> Any:
    return types.Arg_Value(payload(codec_, data, refs))


def object_arg(key: ObjectKey) -> Any:
    return types.Arg_Object(oid(key))


_OPTIONS_CACHE: dict = {}


def options(
    num_returns: int,
    opts: Optional[dict] = None,
    result_codec: Optional[str] = "json",
) -> Any:
    """WIT ``task-options``: ``num_returns`` objects, the resources and limits
    in ``opts`` (``num_cpus``, ``num_gpus``, ``memory``, ``resources``,
    ``max_memory``, ``timeout_ms``, ``fuel``, ``detached``; absent: the
    callee's declared ones), results in ``result_codec``."""
    if not opts:
        cached = _OPTIONS_CACHE.get((num_returns, result_codec))
        if cached is None:
            cached = _build_options(num_returns, {}, result_codec)
            _OPTIONS_CACHE[(num_returns, result_codec)] = cached
        return cached
    return _build_options(num_returns, opts, result_codec)


def _opt_float(v: Any) -> Optional[float]:
    return None if v is None else float(v)


def _opt_int(v: Any) -> Optional[int]:
    return None if v is None else int(v)


def _build_options(num_returns: int, opts: dict, result_codec: Optional[str]) -> Any:
    return types.TaskOptions(
        num_returns,
        resource_request(opts),
        limits(opts),
        None if result_codec is None else _CODECS[result_codec],
        bool(opts.get("detached", False)),
    )


def resource_request(opts: dict) -> Any:
    custom = [(str(k), float(v)) for k, v in (opts.get("resources") or {}).items()]
    return types.ResourceRequest(
        _opt_float(opts.get("num_cpus")),
        _opt_float(opts.get("num_gpus")),
        _opt_int(opts.get("memory")),
        custom,
    )


def limits(opts: dict) -> Any:
    return types.Limits(
        _opt_int(opts.get("max_memory")),
        _opt_int(opts.get("timeout_ms")),
        _opt_int(opts.get("fuel")),
    )


def millis(timeout: Optional[float]) -> Optional[int]:
    """Seconds (Ray's unit) as whole milliseconds, rounded up; None: none."""
    if timeout is None:
        return None
    t = float(timeout)
    if math.isnan(t) or t < 0:
        raise ValueError(f"timeout must be a number of seconds >= 0, got {timeout!r}")
    if math.isinf(t):
        return None
    return min(int(math.ceil(t * 1000)), (1 << 64) - 1)


# -- objects -----------------------------------------------------------------


def release(keys: List[ObjectKey]) -> None:
    objects.release([oid(k) for k in keys])


def put(codec_: str, data: bytes, refs: Sequence[ObjectKey]) -> ObjectKey:
    _refs.flush_releases()
    wrefs = [oid(k) for k in refs]
    if len(data) >= INLINE_MAX:
        return okey(mapping.put_bytes(data, _CODECS[codec_], wrefs))
    return okey(objects.put(types.Payload(_CODECS[codec_], data, wrefs)))


def get(keys: Sequence[ObjectKey], timeout_ms: Optional[int]) -> List[Any]:
    """The payloads of ``keys``; raises :class:`TaskError`."""
    _refs.flush_releases()
    try:
        return objects.get([oid(k) for k in keys], timeout_ms)
    except Err as e:
        raise from_wit_error(e.value) from None


def get_wit(ids: List[Any]) -> List[Any]:
    """``objects.get`` of WIT ids, no timeout; a failure raises ``Err`` as it
    came (an argument's own error passes through unchanged)."""
    return objects.get(ids, None)


def wait(keys: Sequence[ObjectKey], num_returns: int, timeout_ms: Optional[int]) -> List[bool]:
    _refs.flush_releases()
    return objects.wait([oid(k) for k in keys], num_returns, timeout_ms)


# -- tasks -------------------------------------------------------------------


def submit(component: Optional[str], function: str, args: List[Any], opts: Any) -> List[ObjectKey]:
    _refs.flush_releases()
    if component is None:
        ids = tasks.submit(function, args, opts)
    else:
        ids = tasks.submit_to(component, function, args, opts)
    return [okey(o) for o in ids]


def actor_options(opts: dict) -> Any:
    """WIT ``actor-options`` of ``opts`` (``name``, ``max_restarts``,
    ``max_task_retries``), or None when it sets none of them."""
    name = opts.get("name")
    restarts = int(opts.get("max_restarts", 0))
    retries = int(opts.get("max_task_retries", 0))
    if name is None and restarts == 0 and retries == 0:
        return None
    return types.ActorOptions(name, restarts, retries)


def create_actor(component: Optional[str], cls: str, args: List[Any], opts: Any, life: Optional[dict] = None) -> TaskKey:
    """Creates an actor of ``cls`` (of ``component``; None: this one) with
    WIT task-options ``opts``, and the name and restart policy in ``life``
    (see :func:`actor_options`) through ``tasks.create-actor-with``."""
    _refs.flush_releases()
    actor = actor_options(life or {})
    if actor is not None:
        return tkey(tasks.create_actor_with(component, cls, args, opts, actor))
    if component is None:
        return tkey(tasks.create_actor(cls, args, opts))
    return tkey(tasks.create_actor_of(component, cls, args, opts))


def get_actor(name: str, cls: str) -> TaskKey:
    """The live actor named ``name`` of class ``cls`` (any class when
    empty), now held by the calling task; raises :class:`TaskError`
    (``not-found``, ``invalid-argument`` for another class, ``system``)."""
    _refs.flush_releases()
    try:
        return tkey(tasks.get_actor(name, cls))
    except Err as e:
        raise from_wit_error(e.value) from None


def call_actor(actor: TaskKey, method: str, args: List[Any], opts: Any) -> List[ObjectKey]:
    _refs.flush_releases()
    return [okey(o) for o in tasks.call_actor(tid(actor), method, args, opts)]


def cancel(key: ObjectKey, force: bool, recursive: bool) -> bool:
    return bool(tasks.cancel(oid(key), force, recursive))


def kill_actor(actor: TaskKey) -> bool:
    return bool(tasks.kill_actor(tid(actor)))


# -- runtime -----------------------------------------------------------------


def task_id() -> str:
    return task_hex(tkey(runtime.task_id()))


def current_actor() -> Optional[TaskKey]:
    actor = runtime.current_actor()
    return None if actor is None else tkey(actor)


def node_id() -> str:
    return runtime.node_id()


_LEVELS = {
    "trace": "TRACE",
    "debug": "DEBUG",
    "info": "INFO",
    "warn": "WARN",
    "warning": "WARN",
    "error": "ERROR",
    "critical": "ERROR",
}


def log(level: str, message: str) -> None:
    name = _LEVELS.get(str(level).lower())
    if name is None:
        raise ValueError(f"unknown log level {level!r} (trace, debug, info, warn, error)")
    runtime.log(types.LogLevel[name], message)


def get_gpu_ids() -> List[int]:
    return list(runtime.get_gpu_ids())


def get_resource_ids() -> dict:
    return {r.name: [(i, f) for (i, f) in r.ids] for r in runtime.get_resource_ids()}


def profile_begin(name: str) -> int:
    return runtime.profile_begin(name)


def profile_end(span: int) -> None:
    runtime.profile_end(span)


bind()
