"""The component's exports: ``metadata``, ``functions``, ``actors``,
``lifecycle`` and ``driver`` of ``wray:runtime``, implemented over the
tables the decorators fill (``wray._api``).

componentize-py finds the classes by name: the build's entry module
re-exports ``Metadata``, ``Functions``, ``Lifecycle`` and ``Driver``, and its
``actors`` module ``ActorInstance``. A component exports only the parts its
app has (``wray.build`` picks the world), so the generated bindings hold
only those parts' protocols: a class of a part the world leaves out
derives from ``object`` and is never called.

No exception leaves an export: an uncaught one would trap the instance
(``unreachable``) and lose its message. A Python exception becomes a task
error of kind ``application`` carrying its type, message and traceback; a
:class:`TaskError` (from a ``get`` the function did not catch, or the
``__cause__`` / ``__context__`` of the exception) becomes its first cause,
as Ray's ``RayTaskError`` keeps its cause.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, List, Optional

from wit_world import exports as _wit_exports  # type: ignore

try:
    from wit_world.exports import actors as _wit_actors  # type: ignore
except ImportError:  # a world without `actors`
    _wit_actors = None

from . import __version__, _api, _host, _refs
from ._codec import encode_json, decode_json
from ._errors import APPLICATION, INVALID_ARGUMENT, NOT_FOUND, TaskError, format_exception, passed_on
from ._schema import signature_schemas

SDK = f"wray-python {__version__}"


def _part(name: str) -> Any:
    """The generated protocol of exported interface ``name`` (``Metadata``,
    ...), or ``object`` when the component's world does not export it."""
    return getattr(_wit_exports, name, object)


_ActorInstanceBase: Any = _wit_actors.ActorInstance if _wit_actors is not None else object


def _enter() -> None:
    """What every export does first: drop the refs kept alive for the value
    the previous export returned (the host has it by now), and release
    what died since."""
    _refs.flush_deferred()
    _safe_release()


def _safe_release() -> None:
    try:
        _refs.flush_releases()
    except Exception:  # a failed release must not fail the task
        pass


def _flush() -> None:
    """What every export does last: release the refs that died in it, and
    flush what the guest printed (WASI stdout is block-buffered; unflushed
    output is lost with the instance)."""
    _safe_release()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


def _guarded(label: str, body: Callable[[], Any]) -> Any:
    """Runs ``body``; anything it raises becomes ``Err(task-error)``."""
    Err = _host.Err
    try:
        return body()
    except Err:
        raise
    except BaseException as e:  # SystemExit, KeyboardInterrupt, MemoryError too
        if isinstance(e, TaskError) and getattr(e, "raised_here", False):
            raise Err(_host.wit_error(e.kind, e.function, e.message)) from None
        try:
            message = format_exception(e)
        except BaseException:
            message = f"{type(e).__name__} (its message could not be formatted)"
        raise Err(_host.wit_error(APPLICATION, label, message, passed_on(e))) from None


def _decode_args(label: str, sig: Any, args: List[Any]) -> List[Any]:
    """The values of a task's arguments, checked against ``sig``."""
    if len(args) != sig.n:
        raise _host.raising(
            INVALID_ARGUMENT, label, f"{label} takes {sig.n} argument(s), got {len(args)}"
        )
    values = []
    types = _host.types
    for i, arg in enumerate(args):
        if isinstance(arg, types.Arg_Value):
            p = arg.value
        else:
            # A resolved dependency passed by id: fetch it (its own error,
            # if it holds one, passes through unchanged).
            ps = _host.get_wit([arg.value])
            if len(ps) != 1:
                raise _host.raising(
                    "system", label, f"argument {i}: the host returned {len(ps)} values for one object"
                )
            p = ps[0]
        codec = _host.codec_name(p.codec)
        if codec == "json":
            try:
                value = decode_json(p.data)
            except ValueError as e:
                raise _host.raising(
                    INVALID_ARGUMENT, label, f"argument {i} of `{label}` is not valid JSON: {e}"
                ) from None
        elif codec == "raw":
            value = bytes(p.data)
        else:
            raise _host.raising(
                INVALID_ARGUMENT,
                label,
                f"`{label}` reads json arguments, argument {i} is {codec}",
            )
        values.append(value)
    for i in sig.bytes_params():
        v = values[i]
        if isinstance(v, list):
            try:
                values[i] = bytes(v)
            except (TypeError, ValueError):
                pass
    return values


def _encode_results(label: str, result: Any, num_returns: int, result_codec: Optional[Any]) -> List[Any]:
    if num_returns == 1:
        items = [result]
    else:
        if not isinstance(result, (list, tuple)) or len(result) != num_returns:
            got = f"{len(result)} values" if isinstance(result, (list, tuple)) else type(result).__name__
            raise _host.raising(
                APPLICATION,
                label,
                f"{label} declares num_returns={num_returns} but returned {got} "
                f"(return a tuple or list of {num_returns})",
            )
        items = list(result)
    want_raw = result_codec is not None and _host.codec_name(result_codec) == "raw"
    out = []
    for i, item in enumerate(items):
        if want_raw and isinstance(item, (bytes, bytearray, memoryview)):
            out.append(_host.payload("raw", bytes(item), ()))
            continue
        try:
            enc = encode_json(item)
        except (TypeError, ValueError) as e:
            which = "its result" if num_returns == 1 else f"its result {i}"
            raise _host.raising(
                APPLICATION, label, f"{label} returned a value JSON cannot hold ({which}): {e}"
            ) from None
        # The refs inside stay alive until the host has the value.
        _refs.defer(enc.holders)
        out.append(_host.payload("json", enc.data, enc.refs))
    return out


def _info(kind: Any, name: str, class_: Optional[str], num_returns: int, fn: Any, skip_self: bool, declared: dict, reuse: bool = False) -> Any:
    types = _host.types
    if fn is object.__init__:
        params, returns = [], []
    else:
        params, returns = signature_schemas(fn, num_returns, skip_self=skip_self)
    if kind == types.FunctionKind.ACTOR_CONSTRUCTOR:
        # A constructor returns no value (its one return object is the
        # actor's empty handle object), as the Rust SDK lists it.
        returns = []
    return types.FunctionInfo(
        kind,
        name,
        class_,
        num_returns,
        [types.ParamInfo(n, s) for n, s in params],
        returns,
        _host.resource_request(declared),
        _host.limits(declared),
        reuse,
    )


def describe_functions() -> List[Any]:
    """The ``function-info`` of every remote function, actor constructor and
    actor method."""
    types = _host.types
    infos = []
    for name, f in _api.functions.items():
        infos.append(
            _info(types.FunctionKind.FUNCTION, name, None, f._num_returns, f._fn, False, f._declared, bool(f._declared.get("reuse", False)))
        )
    for name, c in _api.actor_classes.items():
        init = c._cls.__init__ if c._cls.__init__ is not object.__init__ else object.__init__
        infos.append(
            _info(types.FunctionKind.ACTOR_CONSTRUCTOR, name, name, 1, init, True, c._declared)
        )
        for mname, m in sorted(c._methods.items()):
            infos.append(_info(types.FunctionKind.ACTOR_METHOD, mname, name, m.num_returns, m.fn, True, {}))
    return infos


class Metadata(_part("Metadata")):
    def describe(self) -> Any:
        _enter()
        try:
            return _host.types.ComponentInfo(describe_functions(), SDK)
        finally:
            _flush()


class Functions(_part("Functions")):
    def invoke(self, name: str, args: List[Any], result_codec: Optional[Any]) -> List[Any]:
        _enter()
        try:
            f = _api.functions.get(name)
            if f is None:
                raise _host.Err(
                    _host.wit_error(NOT_FOUND, name, f"component has no remote function {name}")
                )

            def run() -> List[Any]:
                values = _decode_args(name, f._sig, args)
                result = f._sig.call(f._fn, values)
                return _encode_results(name, result, f._num_returns, result_codec)

            return _guarded(name, run)
        finally:
            _flush()


class ActorInstance(_ActorInstanceBase):
    """One live actor: an instance of a ``@wray.actor`` class."""

    def __init__(self, actor_class: Any, obj: Any):
        self._class = actor_class
        self._obj = obj

    @classmethod
    def create(cls, class_: str, args: List[Any]) -> "ActorInstance":
        _enter()
        try:
            label = f"{class_}.__init__"
            ac = _api.actor_classes.get(class_)
            if ac is None:
                raise _host.Err(
                    _host.wit_error(NOT_FOUND, label, f"component has no actor class {class_}")
                )

            def run() -> Any:
                values = _decode_args(label, ac._sig, args)
                _api._running_class = ac
                return ac._sig.call(ac._cls, values)

            return cls(ac, _guarded(label, run))
        finally:
            _flush()

    def call(self, method: str, args: List[Any], result_codec: Optional[Any]) -> List[Any]:
        _enter()
        try:
            label = f"{self._class._name}.{method}"
            info = self._class._methods.get(method)
            if info is None:
                raise _host.Err(
                    _host.wit_error(
                        NOT_FOUND, label, f"actor class {self._class._name} has no method {method}"
                    )
                )

            def run() -> List[Any]:
                values = _decode_args(label, info.sig, args)
                result = info.sig.call(getattr(self._obj, method), values)
                return _encode_results(label, result, info.num_returns, result_codec)

            return _guarded(label, run)
        finally:
            _flush()


class Actors(_part("Actors")):
    pass


class Lifecycle(_part("Lifecycle")):
    def init(self) -> None:
        _enter()
        _flush()

    def reinit(self) -> None:
        _enter()
        _flush()


class Driver(_part("Driver")):
    def main(self, args: List[str]) -> None:
        _enter()
        try:
            fn = _api.main_function
            if fn is None:
                raise _host.Err("no main: this component has no @wray.main function")
            try:
                if _takes_args(fn):
                    fn(list(args))
                else:
                    fn()
            except SystemExit as e:
                code = e.code
                if code is None or code == 0:
                    return
                raise _host.Err(str(code)) from None
            except _host.Err:
                raise
            except TaskError as e:
                raise _host.Err(str(e)) from None
            except BaseException as e:
                try:
                    message = format_exception(e)
                except BaseException:
                    message = type(e).__name__
                raise _host.Err(message) from None
        finally:
            _flush()


def _takes_args(fn: Any) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)
