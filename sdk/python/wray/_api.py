"""The user-facing API: remote functions, actors, qualified references to
other components, and ``get`` / ``put`` / ``wait`` / ``cancel`` / ``kill``.

It keeps the component's tables (what ``describe`` lists and ``invoke``
dispatches on) filled by the decorators when the app module is imported;
componentize-py imports it once, when it builds the component, so the tables
are part of the component's initial memory.
"""

from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from . import _codec, _host
from ._codec import decode_json, encode_json
from ._errors import INVALID_ARGUMENT, NOT_FOUND, SYSTEM, TaskError
from ._ids import ObjectKey, TaskKey, actor_handle_object, parse_task_hex, task_hex
from ._refs import ObjectRef

# -- options -----------------------------------------------------------------

#: Resources and limits: declared on a function or class, or set per call.
_RESOURCE_OPTIONS = ("num_cpus", "num_gpus", "memory", "resources", "max_memory", "timeout_ms", "fuel")
_FUNCTION_OPTIONS = frozenset(_RESOURCE_OPTIONS + ("num_returns", "reuse"))
#: What an actor's creation says beside its resources and limits (never
#: declared to the host): its lifetime and restart policy, declared on the
#: class (``@wray.actor(max_restarts=1)``) or set per creation.
_LIFE_OPTIONS = ("detached", "lifetime", "max_restarts", "max_task_retries")
_ACTOR_DECLARED_OPTIONS = frozenset(_RESOURCE_OPTIONS + _LIFE_OPTIONS)
#: ``.options(...)`` of an actor class: the above, its name, and whether to
#: take the actor already holding the name (Ray's ``get_if_exists``).
_ACTOR_OPTIONS = frozenset(_ACTOR_DECLARED_OPTIONS | {"name", "get_if_exists"})
_METHOD_OPTIONS = frozenset(("num_returns",))

#: ``max_restarts`` / ``max_task_retries`` travel as WIT ``u32``; -1 (Ray's
#: "infinite") is its largest value.
_U32_MAX = (1 << 32) - 1
#: The longest actor name, in UTF-8 bytes (the actor directory's limit).
MAX_ACTOR_NAME_BYTES = 128


def check_actor_name(where: str, name: Any) -> str:
    """``name`` if the actor directory takes it (the WIT's rule for
    ``actor-options.name``): 1 to 128 bytes of UTF-8, no ``/``, ``@`` or
    control character, not ``.`` or ``..``; else ValueError saying why."""
    if not isinstance(name, str):
        raise ValueError(f"{where}: an actor name is a str, got {type(name).__name__}")
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError(f"{where}: actor name {name!r} is not valid UTF-8") from None
    if size == 0:
        why = "it is empty"
    elif size > MAX_ACTOR_NAME_BYTES:
        why = f"it is {size} bytes long, over {MAX_ACTOR_NAME_BYTES}"
    elif "/" in name:
        why = "it contains `/`"
    elif "@" in name:
        why = "it contains `@`"
    elif any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in name):
        why = "it contains a control character"
    elif name in (".", ".."):
        why = "it is `.` or `..`"
    else:
        return name
    raise ValueError(f"{where}: actor name {name[:MAX_ACTOR_NAME_BYTES]!r} is refused: {why}")


def _check_options(where: str, opts: Dict[str, Any], allowed: Iterable[str]) -> Dict[str, Any]:
    allowed = frozenset(allowed)
    out: Dict[str, Any] = {}
    for k, v in opts.items():
        if k not in allowed:
            raise TypeError(f"{where}: unknown option {k!r} (allowed: {', '.join(sorted(allowed))})")
        if v is None:
            continue
        if k in ("num_cpus", "num_gpus"):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
                raise ValueError(f"{where}: {k} must be a number >= 0, got {v!r}")
            v = float(v)
        elif k in ("memory", "max_memory", "timeout_ms", "fuel"):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{where}: {k} must be an int >= 0, got {v!r}")
        elif k == "num_returns":
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{where}: num_returns must be an int >= 1, got {v!r}")
        elif k == "resources":
            if not isinstance(v, dict):
                raise ValueError(f"{where}: resources must be a dict of name -> quantity, got {v!r}")
            for name, q in v.items():
                if not isinstance(name, str) or isinstance(q, bool) or not isinstance(q, (int, float)) or not q >= 0:
                    raise ValueError(f"{where}: resources must map names to numbers >= 0, got {v!r}")
            v = {name: float(q) for name, q in v.items()}
        elif k in ("reuse", "detached", "get_if_exists"):
            v = bool(v)
        elif k == "lifetime":
            if v not in ("detached", "non_detached"):
                raise ValueError(f"{where}: lifetime must be \"detached\" or \"non_detached\", got {v!r}")
        elif k in ("max_restarts", "max_task_retries"):
            if isinstance(v, bool) or not isinstance(v, int) or not -1 <= v <= _U32_MAX:
                raise ValueError(f"{where}: {k} must be an int from -1 (no limit) to {_U32_MAX}, got {v!r}")
            v = _U32_MAX if v == -1 else v
        elif k == "name":
            v = check_actor_name(where, v)
        out[k] = v
    if "lifetime" in out:
        detached = out.pop("lifetime") == "detached"
        if out.get("detached", detached) != detached:
            raise ValueError(f"{where}: lifetime and detached disagree")
        out["detached"] = detached
    return out


# -- signatures --------------------------------------------------------------


class _Signature:
    """The parameters of a remote function, constructor or method: what a call
    passes, in order (positionally on the wire), and how the callee gets
    them back."""

    __slots__ = ("sig", "names", "n", "kwonly", "_bytes_idx", "_fn", "label")

    def __init__(self, fn: Callable[..., Any], label: str, skip_self: bool = False):
        self._fn = fn
        self.label = label
        if fn is object.__init__:
            params: List[inspect.Parameter] = []
            self.sig = inspect.Signature([])
        else:
            sig = inspect.signature(fn)
            params = list(sig.parameters.values())
            if skip_self:
                params = params[1:]
            for p in params:
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    raise TypeError(
                        f"wray: {label} takes *{p.name}: a remote function, constructor or "
                        "method takes a fixed list of parameters"
                    )
            self.sig = sig.replace(parameters=params)
        self.names = [p.name for p in params]
        self.n = len(params)
        self.kwonly = frozenset(p.name for p in params if p.kind is p.KEYWORD_ONLY)
        self._bytes_idx: Optional[Tuple[int, ...]] = None

    def bind(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Sequence[Any]:
        """The values of a call's arguments, in parameter order, defaults
        filled in."""
        if not kwargs and len(args) == self.n and not self.kwonly:
            return args
        try:
            bound = self.sig.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.label}: {e}") from None
        bound.apply_defaults()
        arguments = bound.arguments
        return [arguments[name] for name in self.names]

    def call(self, fn: Callable[..., Any], values: List[Any]) -> Any:
        """Calls ``fn`` with ``values`` in parameter order."""
        if not self.kwonly:
            return fn(*values)
        pos = [v for name, v in zip(self.names, values) if name not in self.kwonly]
        kw = {name: v for name, v in zip(self.names, values) if name in self.kwonly}
        return fn(*pos, **kw)

    def bytes_params(self) -> Tuple[int, ...]:
        """Indices of parameters hinted ``bytes`` (a JSON array of byte values
        is turned back into bytes for them)."""
        if self._bytes_idx is None:
            try:
                hints = typing.get_type_hints(self._fn)
            except Exception:
                hints = {}
            self._bytes_idx = tuple(
                i for i, name in enumerate(self.names) if hints.get(name) in (bytes, bytearray)
            )
        return self._bytes_idx


# -- arguments and results ----------------------------------------------------


def _encode_args(label: str, values: Sequence[Any], raw_bytes: bool) -> List[Any]:
    out = []
    for i, v in enumerate(values):
        if type(v) is ObjectRef:
            out.append(_host.object_arg(v._key))
        elif raw_bytes and isinstance(v, (bytes, bytearray, memoryview)):
            out.append(_host.value_arg("raw", bytes(v), ()))
        else:
            try:
                enc = encode_json(v)
            except (TypeError, ValueError) as e:
                raise TypeError(f"argument {i} of {label} cannot be sent as JSON: {e}") from None
            out.append(_host.value_arg("json", enc.data, enc.refs))
    return out


def _returns(keys: List[ObjectKey], num_returns: int) -> Any:
    refs = [ObjectRef(k) for k in keys]
    if len(refs) < num_returns:
        # Return objects are numbered 1..=n after their task: rebuild an id
        # the host left out (with none at all, a null id whose get fails).
        first = keys[0] if keys else (0, 0, 0)
        for i in range(len(refs), num_returns):
            refs.append(ObjectRef((first[0], first[1], i + 1)))
    if num_returns == 1:
        return refs[0]
    return refs[:num_returns]


def decode_payload(p: Any, what: str) -> Any:
    """The value of WIT payload ``p`` (``what`` names it in errors)."""
    name = _host.codec_name(p.codec)
    if name == "json":
        try:
            return decode_json(p.data)
        except ValueError as e:
            raise _host.raising(INVALID_ARGUMENT, "get", f"{what} is not valid JSON: {e}") from None
    if name == "raw":
        return bytes(p.data)
    raise _host.raising(
        INVALID_ARGUMENT,
        "get",
        f"{what} is {name}: the Python SDK reads json and raw values "
        "(an rkyv value is a Rust task's own; ask it for json results)",
    )


# -- remote functions ---------------------------------------------------------

#: Remote functions of this component, by name.
functions: Dict[str, "RemoteFunction"] = {}
#: Actor classes of this component, by class name.
actor_classes: Dict[str, "ActorClass"] = {}
#: The ``@wray.main`` function.
main_function: Optional[Callable[..., Any]] = None


def prepare() -> None:
    """Completes what the decorators leave to a function's first call, once
    every module of the app is imported: which parameters are hinted
    ``bytes`` (``typing.get_type_hints`` compiles each string annotation).

    The entry module ``wray.build`` generates calls it after importing the
    app, so the component's snapshot holds the answers: a fresh instance,
    which starts from that snapshot for every task, does not redo them.
    Calling it again is harmless (each answer is kept).
    """
    for f in functions.values():
        f._sig.bytes_params()
    for c in actor_classes.values():
        c._sig.bytes_params()
        for m in c._methods.values():
            if m.sig is not None:
                m.sig.bytes_params()


def _check_name_free(name: str, what: str) -> None:
    if name in functions or name in actor_classes:
        raise ValueError(
            f"wray: {what} {name!r} is already defined in this component "
            "(remote functions and actor classes are found by name)"
        )


class RemoteFunction:
    """A remote function of this component. ``@wray.remote`` leaves the
    function itself in place and adds ``f.remote(*args)`` (submits a task
    and returns an :class:`ObjectRef` at once, a list of them for
    ``num_returns > 1``) and ``f.options(...)`` (a ``RemoteFunction`` with
    per-call options); ``f(*args)`` still calls it here."""

    def __init__(self, fn: Callable[..., Any], declared: Dict[str, Any], call_options: Optional[Dict[str, Any]] = None):
        self._fn = fn
        self._name = fn.__name__
        self._declared = declared
        self._num_returns = declared.get("num_returns", 1)
        self._call_options = call_options or {}
        self._sig = _Signature(fn, self._name)
        # Not the function's __dict__: it holds `remote` and `options` bound
        # to the first RemoteFunction.
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        """Submits a task running this function with ``args``; returns its
        ObjectRef (a list of ``num_returns`` refs when that is above 1)."""
        _host.require()
        values = self._sig.bind(args, kwargs)
        wargs = _encode_args(self._name, values, raw_bytes=True)
        keys = _host.submit(None, self._name, wargs, _host.options(self._num_returns, self._call_options))
        return _returns(keys, self._num_returns)

    def options(self, **options: Any) -> "RemoteFunction":
        """A copy submitting with per-call ``options`` (``num_cpus``,
        ``num_gpus``, ``memory``, ``resources``, ``max_memory``,
        ``timeout_ms``, ``fuel``) in place of the declared ones."""
        opts = _check_options(f"{self._name}.options", options, _RESOURCE_OPTIONS + ("num_returns",))
        n = opts.pop("num_returns", self._num_returns)
        if n != self._num_returns:
            raise ValueError(
                f"{self._name}.options: num_returns={n}, but {self._name} declares "
                f"num_returns={self._num_returns} (the function returns that many objects)"
            )
        merged = dict(self._call_options)
        merged.update(opts)
        return RemoteFunction(self._fn, self._declared, merged)

    def __repr__(self) -> str:
        return f"<wray.RemoteFunction {self._name}>"


class QualifiedFunction:
    """A remote function of another deployed component (any language),
    named ``component/function``: ``wray.function("tree_reduce/make_array")``.
    Arguments go as JSON (refs as dependencies); results come back as JSON."""

    def __init__(self, component: Optional[str], name: str, num_returns: int, call_options: Dict[str, Any]):
        self._component = component
        self._name = name
        self._num_returns = num_returns
        self._call_options = call_options

    @property
    def _label(self) -> str:
        return self._name if self._component is None else f"{self._component}/{self._name}"

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        """Submits ``component/function`` with ``args`` (positional only)."""
        if kwargs:
            raise TypeError(f"{self._label}: a function of another component takes positional arguments only")
        _host.require()
        wargs = _encode_args(self._label, args, raw_bytes=False)
        keys = _host.submit(self._component, self._name, wargs, _host.options(self._num_returns, self._call_options))
        return _returns(keys, self._num_returns)

    def options(self, **options: Any) -> "QualifiedFunction":
        """A copy with per-call options (``num_returns`` included)."""
        opts = _check_options(f"{self._label}.options", options, _RESOURCE_OPTIONS + ("num_returns",))
        n = opts.pop("num_returns", self._num_returns)
        merged = dict(self._call_options)
        merged.update(opts)
        return QualifiedFunction(self._component, self._name, n, merged)

    def __repr__(self) -> str:
        return f"<wray.function {self._label}>"


def _split_qualified(qualified: str, what: str) -> Tuple[Optional[str], str]:
    if not isinstance(qualified, str) or not qualified:
        raise ValueError(f"wray.{what}: expected 'component/name', got {qualified!r}")
    component, sep, name = qualified.rpartition("/")
    if not name or (sep and not component):
        raise ValueError(f"wray.{what}: expected 'component/name', got {qualified!r}")
    return (component if sep else None), name


def function(qualified: str, *, num_returns: int = 1, **options: Any) -> QualifiedFunction:
    """A remote function of another deployed component, by its qualified name
    ``"component/function"`` (the component's deployed name, e.g. the file
    stem of ``wray run --with lib.wasm``), submitted with
    ``tasks.submit-to``. A plain ``"function"`` names one of this component.
    ``num_returns`` must say how many objects it returns."""
    component, name = _split_qualified(qualified, "function")
    opts = _check_options(f"wray.function({qualified!r})", dict(options, num_returns=num_returns), _RESOURCE_OPTIONS + ("num_returns",))
    n = opts.pop("num_returns", 1)
    return QualifiedFunction(component, name, n, opts)


# -- actors ------------------------------------------------------------------


class _MethodInfo:
    __slots__ = ("name", "num_returns", "sig", "fn")

    def __init__(self, name: str, num_returns: int, sig: Optional[_Signature], fn: Optional[Callable[..., Any]]):
        self.name = name
        self.num_returns = num_returns
        self.sig = sig
        self.fn = fn


def method(*, num_returns: int = 1) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declares an actor method's ``num_returns`` (Ray's ``@ray.method``)."""
    _check_options("wray.method", {"num_returns": num_returns}, _METHOD_OPTIONS)

    def mark(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn._wray_num_returns = num_returns  # type: ignore[attr-defined]
        return fn

    return mark


class ActorHandle:
    """A handle to a live actor: ``handle.method.remote(*args)`` submits a
    call and returns its ObjectRef. Calls on one actor run one at a time, in
    submission order. A handle is a value: pass it to other tasks (its JSON
    form is ``{"$actor": "<32 hex digits>"}``).

    Handles are counted, as in Ray: once the last one is gone, in every task
    and value that had one, the actor exits after the calls already
    submitted to it (unless created with ``lifetime="detached"``)."""

    __slots__ = ("_actor", "_hold", "_class", "__weakref__")

    def __init__(self, actor: TaskKey, actor_class: Any = None):
        self._actor = actor
        self._hold = ObjectRef(actor_handle_object(actor))
        self._class = actor_class

    @classmethod
    def from_hex(cls, text: str) -> "ActorHandle":
        """The handle of actor ``text`` (32 hex digits), its class unknown."""
        return cls(parse_task_hex(text))

    def hex(self) -> str:
        """The actor's id (the id of the task that created it), 32 hex digits."""
        return task_hex(self._actor)

    def __getattr__(self, name: str) -> "ActorMethod":
        if name.startswith("_"):
            raise AttributeError(name)
        cls = self._class
        if cls is None:
            return ActorMethod(self, name, _MethodInfo(name, 1, None, None), "actor")
        info = cls._method_info(name)
        return ActorMethod(self, name, info, cls._name)

    def _wray_json(self):
        return {"$actor": task_hex(self._actor)}, actor_handle_object(self._actor)

    def __copy__(self) -> "ActorHandle":
        return ActorHandle(self._actor, self._class)

    def __deepcopy__(self, memo: Any) -> "ActorHandle":
        return ActorHandle(self._actor, self._class)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActorHandle) and other._actor == self._actor

    def __hash__(self) -> int:
        return hash(("ActorHandle", self._actor))

    def __repr__(self) -> str:
        name = self._class._name if self._class is not None else "actor"
        return f"ActorHandle({name}, {self.hex()})"


class ActorMethod:
    """``handle.method``: ``.remote(*args)`` submits a call."""

    __slots__ = ("_handle", "_name", "_info", "_class_name", "_num_returns")

    def __init__(self, handle: ActorHandle, name: str, info: _MethodInfo, class_name: str, num_returns: Optional[int] = None):
        self._handle = handle
        self._name = name
        self._info = info
        self._class_name = class_name
        self._num_returns = info.num_returns if num_returns is None else num_returns

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        """Submits a call of this method on the actor; returns its ObjectRef
        (a list of refs for ``num_returns > 1``)."""
        label = f"{self._class_name}.{self._name}"
        sig = self._info.sig
        if sig is not None:
            values = sig.bind(args, kwargs)
        elif kwargs:
            raise TypeError(f"{label}: a method of another component's actor takes positional arguments only")
        else:
            values = args
        _host.require()
        wargs = _encode_args(label, values, raw_bytes=sig is not None)
        keys = _host.call_actor(self._handle._actor, self._name, wargs, _host.options(self._num_returns))
        return _returns(keys, self._num_returns)

    def options(self, **options: Any) -> "ActorMethod":
        """A copy with per-call ``num_returns``."""
        opts = _check_options(f"{self._class_name}.{self._name}.options", options, _METHOD_OPTIONS)
        n = opts.get("num_returns", self._num_returns)
        if self._info.sig is not None and n != self._info.num_returns:
            raise ValueError(
                f"{self._class_name}.{self._name}.options: num_returns={n}, but the method declares "
                f"num_returns={self._info.num_returns} (use @wray.method(num_returns=...))"
            )
        return ActorMethod(self._handle, self._name, self._info, self._class_name, n)

    def __repr__(self) -> str:
        return f"<wray.ActorMethod {self._class_name}.{self._name}>"


def _is_plain_method(cls: type, name: str) -> bool:
    try:
        raw = inspect.getattr_static(cls, name)
    except AttributeError:
        return False
    if isinstance(raw, (staticmethod, classmethod, property)):
        return False
    return inspect.isfunction(raw)


class ActorClass:
    """A class marked ``@wray.actor``: ``Cls.remote(*args)`` creates an actor
    (its constructor runs as the actor's first task) and returns an
    :class:`ActorHandle` at once; ``Cls(*args)`` still makes a plain local
    instance. Its remote methods are its public methods (names not starting
    with ``_``)."""

    def __init__(self, cls: type, declared: Dict[str, Any], call_options: Optional[Dict[str, Any]] = None, methods: Optional[Dict[str, _MethodInfo]] = None):
        self._cls = cls
        self._name = cls.__name__
        self._declared = declared
        if call_options is None:
            # The lifetime and restart policy are not declared to the host:
            # every creation says them.
            call_options = {k: declared[k] for k in _LIFE_OPTIONS if k in declared}
        self._call_options = call_options
        init = cls.__init__ if cls.__init__ is not object.__init__ else object.__init__
        self._sig = _Signature(init, f"{self._name}.__init__", skip_self=init is not object.__init__)
        if methods is None:
            methods = {}
            for name in dir(cls):
                if name.startswith("_") or not _is_plain_method(cls, name):
                    continue
                fn = getattr(cls, name)
                n = getattr(fn, "_wray_num_returns", 1)
                methods[name] = _MethodInfo(name, n, _Signature(fn, f"{self._name}.{name}", skip_self=True), fn)
        self._methods = methods
        functools.update_wrapper(self, cls, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._cls(*args, **kwargs)

    def _method_info(self, name: str) -> _MethodInfo:
        info = self._methods.get(name)
        if info is None:
            raise AttributeError(f"actor class {self._name} has no remote method {name!r}")
        return info

    def remote(self, *args: Any, **kwargs: Any) -> ActorHandle:
        """Creates an actor of this class: its constructor runs with ``args``
        as the actor's first task. Returns its handle at once."""
        _host.require()
        values = self._sig.bind(args, kwargs)
        wargs = _encode_args(f"{self._name}.__init__", values, raw_bytes=True)
        return _create_actor(None, self._name, wargs, self._call_options, self)

    def options(self, **options: Any) -> "ActorClass":
        """A copy creating actors with ``options`` (Ray's
        ``Cls.options(...)``):

        - ``num_cpus``, ``num_gpus``, ``memory``, ``resources``: held for
          the actor's lifetime; ``max_memory``, ``timeout_ms``, ``fuel``:
          limits of each call.
        - ``name``: a name unique in the cluster while the actor lives
          (1 to 128 bytes, no ``/``, ``@`` or control character), which
          :func:`get_actor` finds it by from any task, job and node. A name
          a live actor holds already makes ``.remote()`` raise ValueError
          naming that actor (the new one is not kept), unless
          ``get_if_exists=True``: then ``.remote()`` returns the holder's
          handle (an actor of this class; another class is a ValueError).
        - ``lifetime="detached"`` (or ``detached=True``): the actor lives
          until it is killed, past its job and its last handle
          (``"non_detached"``, the default: until its last handle goes).
        - ``max_restarts``: times the actor is created again (its
          constructor re-run with the same arguments) on another node
          after its node died; ``max_task_retries``: times a call that was
          running then runs again on the new instance. 0 by default, -1:
          no limit.
        """
        opts = _check_options(f"{self._name}.options", options, _ACTOR_OPTIONS)
        merged = dict(self._call_options)
        merged.update(opts)
        return ActorClass(self._cls, self._declared, merged, self._methods)

    def __repr__(self) -> str:
        return f"<wray.ActorClass {self._name}>"


class QualifiedActorClass:
    """An actor class of another deployed component, named
    ``component/Class``: ``wray.actor_class("counter/Counter")``. Any public
    method name may be called on its handles (``num_returns`` 1 unless set
    with ``handle.method.options(num_returns=n)``)."""

    def __init__(self, component: Optional[str], name: str, call_options: Dict[str, Any]):
        self._component = component
        self._name = name
        self._call_options = call_options

    @property
    def _label(self) -> str:
        return self._name if self._component is None else f"{self._component}/{self._name}"

    def _method_info(self, name: str) -> _MethodInfo:
        return _MethodInfo(name, 1, None, None)

    def remote(self, *args: Any, **kwargs: Any) -> ActorHandle:
        """Creates an actor of ``component/Class`` with ``args`` (positional)."""
        if kwargs:
            raise TypeError(f"{self._label}: another component's constructor takes positional arguments only")
        _host.require()
        wargs = _encode_args(f"{self._label}.new", args, raw_bytes=False)
        return _create_actor(self._component, self._name, wargs, self._call_options, self)

    def options(self, **options: Any) -> "QualifiedActorClass":
        """A copy creating actors with ``options`` (see ``ActorClass.options``)."""
        opts = _check_options(f"{self._label}.options", options, _ACTOR_OPTIONS)
        merged = dict(self._call_options)
        merged.update(opts)
        return QualifiedActorClass(self._component, self._name, merged)

    def __repr__(self) -> str:
        return f"<wray.actor_class {self._label}>"


def actor_class(qualified: str, **options: Any) -> QualifiedActorClass:
    """An actor class of another deployed component, by its qualified name
    ``"component/Class"``, created with ``tasks.create-actor-of`` (with
    ``tasks.create-actor-with`` when a name or restart policy is set; the
    options are :meth:`ActorClass.options`'s)."""
    component, name = _split_qualified(qualified, "actor_class")
    opts = _check_options(f"wray.actor_class({qualified!r})", options, _ACTOR_OPTIONS)
    return QualifiedActorClass(component, name, opts)


# -- named actors ------------------------------------------------------------


def _named(name: str, class_name: str) -> Tuple[Optional[TaskKey], Optional[TaskError]]:
    """The live actor named ``name`` if it is of class ``class_name`` (any
    class when empty), now held by this task; else the host's error
    (``not-found``: no live actor has the name; ``invalid-argument``: one of
    another class has it)."""
    try:
        return _host.get_actor(name, class_name), None
    except TaskError as e:
        return None, e


def _create_actor(component: Optional[str], class_name: str, wargs: List[Any], call_options: Dict[str, Any], actor_class: Any) -> ActorHandle:
    """Creates an actor of ``class_name`` (of ``component``, None: this
    one) with ``call_options``; its handle. A named actor's name is read
    back from the actor directory once the host has given it out (it does
    so before ``create-actor-with`` returns): held by another actor, the
    new one is dead already (the host kills an actor that cannot take its
    name), and this raises ValueError naming the holder, or returns the
    holder with ``get_if_exists``."""
    name = call_options.get("name")
    get_if_exists = name is not None and call_options.get("get_if_exists", False)
    label = class_name if component is None else f"{component}/{class_name}"
    if get_if_exists:
        held, err = _named(name, class_name)
        if held is not None:
            return ActorHandle(held, actor_class)
        if err is not None and err.kind != NOT_FOUND:
            raise _name_taken(name, label, None, err)
    actor = _host.create_actor(component, class_name, wargs, _host.options(1, call_options), call_options)
    handle = ActorHandle(actor, actor_class)
    if name is None:
        return handle
    held, err = _named(name, class_name)
    if held is None:
        if err is not None and err.kind == INVALID_ARGUMENT:
            raise _name_taken(name, label, None, err)
        # Not found: the new actor died before its name could be read
        # (its calls say why); or the directory cannot be read now.
        return handle
    if held == actor:
        return handle
    holder = ActorHandle(held, actor_class)
    if get_if_exists:
        return holder
    raise _name_taken(name, label, holder.hex(), None)


def _name_taken(name: str, label: str, holder: Optional[str], err: Optional[TaskError]) -> Exception:
    """The error of a creation whose name another actor holds (Ray's
    ValueError), or of a lookup the directory could not answer."""
    if err is not None and err.kind not in (NOT_FOUND, INVALID_ARGUMENT):
        return err
    why = f"it is held by live actor {holder}" if holder else err.message if err else "it is held"
    return ValueError(
        f"{label}.options(name={name!r}): the name is taken: {why}; a name is held until "
        f"its actor dies: reach that actor with wray.get_actor({name!r}), "
        "or pass get_if_exists=True"
    )


def get_actor(name: str) -> ActorHandle:
    """The live actor named ``name`` (Ray's ``ray.get_actor``), from any
    task of any job on any node: a handle whose methods are called as on
    the creator's (``wray.get_actor("keeper").increment.remote()``). The
    handle does not own the actor: dropping it does not end a detached one.

    When its class has the name of one of this component's actor classes,
    the handle is that class's (its methods checked, keyword arguments and
    defaults bound, ``num_returns`` as declared); otherwise any method may
    be called, with positional arguments.

    Raises:
        ValueError: no live actor has that name (the message names it), or
            the name is not one an actor can have.
        TaskError: the cluster's actor directory cannot be read.
    """
    check_actor_name("wray.get_actor", name)
    _host.require()
    for class_name, ac in actor_classes.items():
        held, err = _named(name, class_name)
        if held is not None:
            return ActorHandle(held, ac)
        if err is not None and err.kind != INVALID_ARGUMENT:
            raise _lookup_failed(name, err)
    held, err = _named(name, "")
    if held is not None:
        return ActorHandle(held, None)
    raise _lookup_failed(name, err)


def _lookup_failed(name: str, err: Optional[TaskError]) -> Exception:
    if err is None:
        return ValueError(f"wray.get_actor({name!r}): no live actor is named `{name}`")
    if err.kind == NOT_FOUND:
        return ValueError(f"wray.get_actor({name!r}): {err.message}")
    return err


# -- decorators ----------------------------------------------------------------


def _register_function(fn: Callable[..., Any], opts: Dict[str, Any]) -> Callable[..., Any]:
    if not inspect.isfunction(fn):
        raise TypeError(f"@wray.remote expects a function (def), got {fn!r}")
    declared = _check_options(f"@wray.remote on {fn.__name__}", opts, _FUNCTION_OPTIONS)
    rf = RemoteFunction(fn, declared)
    _check_name_free(rf._name, "remote function")
    functions[rf._name] = rf
    # The function itself stays what the name is bound to, with `.remote`
    # and `.options` added: a local call (a recursive one included) is a
    # plain Python call. Through a wrapper object's __call__ each level of
    # recursion would also take C stack, and deep recursion would exhaust
    # the wasm stack (a trap) before Python's recursion limit.
    fn.remote = rf.remote  # type: ignore[attr-defined]
    fn.options = rf.options  # type: ignore[attr-defined]
    fn._wray_remote = rf  # type: ignore[attr-defined]
    return fn


def _register_actor(cls: type, opts: Dict[str, Any]) -> ActorClass:
    declared = _check_options(f"@wray.actor on {cls.__name__}", opts, _ACTOR_DECLARED_OPTIONS)
    ac = ActorClass(cls, declared)
    _check_name_free(ac._name, "actor class")
    actor_classes[ac._name] = ac
    return ac


def remote(*args: Any, **options: Any) -> Any:
    """Marks a remote function (``@wray.remote`` or ``@wray.remote(num_cpus=..,
    num_gpus=.., num_returns=.., memory=.., max_memory=.., timeout_ms=..,
    fuel=.., resources={..}, reuse=..)``); on a class, same as
    :func:`actor`."""
    if len(args) == 1 and not options and (callable(args[0]) or isinstance(args[0], type)):
        target = args[0]
        if isinstance(target, type):
            return _register_actor(target, {})
        return _register_function(target, {})
    if args:
        raise TypeError("@wray.remote takes keyword options only: @wray.remote(num_cpus=2)")

    def decorate(target: Any) -> Any:
        if isinstance(target, type):
            return _register_actor(target, options)
        return _register_function(target, options)

    return decorate


def actor(*args: Any, **options: Any) -> Any:
    """Marks an actor class (``@wray.actor`` or ``@wray.actor(num_cpus=..,
    num_gpus=.., memory=.., max_memory=.., timeout_ms=.., resources={..},
    lifetime=.., max_restarts=.., max_task_retries=..)``: resources held for
    the actor's lifetime, limits applying to each call, and the lifetime and
    restart policy of every actor of the class unless ``Cls.options(..)``
    says otherwise; see :meth:`ActorClass.options`)."""
    if len(args) == 1 and not options and isinstance(args[0], type):
        return _register_actor(args[0], {})
    if args:
        raise TypeError("@wray.actor goes on a class; options are keywords: @wray.actor(num_gpus=1)")

    def decorate(cls: type) -> ActorClass:
        if not isinstance(cls, type):
            raise TypeError(f"@wray.actor goes on a class, got {cls!r}")
        return _register_actor(cls, options)

    return decorate


def main(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Marks the driver entry point, run by ``wray run app.wasm -- args``
    with the arguments after ``--`` as ``args: list[str]`` (a function taking
    no parameter is called without them). Raising an exception, or
    ``sys.exit("message")``, fails the run with that message."""
    global main_function
    if main_function is not None and main_function is not fn:
        raise ValueError(f"wray: @wray.main is already {main_function.__name__}; a component has one main")
    main_function = fn
    return fn


# -- objects -----------------------------------------------------------------


def _ref_list(refs: Any, what: str) -> Tuple[List[ObjectRef], bool]:
    if isinstance(refs, ObjectRef):
        return [refs], True
    if isinstance(refs, (list, tuple)):
        out = list(refs)
        for r in out:
            if not isinstance(r, ObjectRef):
                raise TypeError(f"wray.{what} takes ObjectRefs, got {type(r).__name__} in the list")
        return out, False
    raise TypeError(f"wray.{what} takes an ObjectRef or a list of them, got {type(refs).__name__}")


def get(refs: Any, *, timeout: Optional[float] = None) -> Any:
    """The value of an ObjectRef, or the values of a list of them (in order,
    one host call), blocking until they exist. While it blocks the task
    gives its CPU back, so tasks waiting on their own sub-tasks cannot
    deadlock.

    Args:
        timeout: seconds to wait at most (None: no limit).

    Raises:
        TaskError: the error of the task that made the object (or of the
            first failed task it depends on); kind ``timeout`` when the
            objects do not exist within ``timeout``.
    """
    lst, single = _ref_list(refs, "get")
    if not lst:
        return []
    _host.require()
    payloads = _host.get([r._key for r in lst], _host.millis(timeout))
    if len(payloads) != len(lst):
        raise _host.raising(SYSTEM, "get", f"the host returned {len(payloads)} values for {len(lst)} objects")
    values = [decode_payload(p, f"object {r.hex()}") for r, p in zip(lst, payloads)]
    return values[0] if single else values


def put(value: Any) -> ObjectRef:
    """Stores ``value`` as a new immutable object owned by this task and
    returns its ObjectRef. ``bytes`` are stored raw; anything else as JSON.
    Never blocks."""
    _host.require()
    if isinstance(value, (bytes, bytearray, memoryview)):
        key = _host.put("raw", bytes(value), ())
    else:
        if isinstance(value, ObjectRef):
            raise TypeError("wray.put of an ObjectRef: pass the ref itself (Ray refuses this too)")
        try:
            enc = encode_json(value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"wray.put: the value cannot be stored as JSON: {e}") from None
        key = _host.put("json", enc.data, enc.refs)
    return ObjectRef(key)


def wait(refs: Sequence[ObjectRef], *, num_returns: int = 1, timeout: Optional[float] = None) -> Tuple[List[ObjectRef], List[ObjectRef]]:
    """Waits until ``num_returns`` of ``refs`` exist (an object holding an
    error counts) or ``timeout`` seconds pass, and returns ``(ready,
    not_ready)``, each in input order. At most ``num_returns`` refs are
    ready: the first ready ones in input order."""
    lst, _ = _ref_list(list(refs) if not isinstance(refs, ObjectRef) else refs, "wait")
    if isinstance(num_returns, bool) or not isinstance(num_returns, int) or num_returns < 0:
        raise ValueError(f"wray.wait: num_returns must be an int >= 0, got {num_returns!r}")
    if not lst:
        return [], []
    _host.require()
    n = min(num_returns, len(lst))
    flags = _host.wait([r._key for r in lst], n, _host.millis(timeout))
    ready = [r for r, f in zip(lst, flags) if f]
    not_ready = [r for i, r in enumerate(lst) if not (i < len(flags) and flags[i])]
    return ready, not_ready


def cancel(ref: ObjectRef, *, force: bool = False, recursive: bool = False) -> bool:
    """Cancels the task that makes ``ref`` (Ray's ``ray.cancel``): a queued
    task never runs, a running one is stopped; ``get`` on its results then
    raises a TaskError of kind ``cancelled``. ``recursive`` cancels the tasks
    it submitted too. Returns False when it had already finished."""
    if not isinstance(ref, ObjectRef):
        raise TypeError(f"wray.cancel takes an ObjectRef, got {type(ref).__name__}")
    _host.require()
    return _host.cancel(ref._key, bool(force), bool(recursive))


def kill(handle: ActorHandle) -> bool:
    """Kills an actor (Ray's ``ray.kill``): its running call stops, its queued
    and later calls fail with ``actor-died``. Returns False when it was dead
    already."""
    if not isinstance(handle, ActorHandle):
        raise TypeError(f"wray.kill takes an ActorHandle, got {type(handle).__name__}")
    _host.require()
    return _host.kill_actor(handle._actor)


# -- runtime -------------------------------------------------------------------


def get_gpu_ids() -> List[int]:
    """The GPU ids the running task or actor holds, ascending (Ray's
    ``ray.get_gpu_ids()``); empty without GPUs."""
    _host.require()
    return _host.get_gpu_ids()


def get_resource_ids() -> Dict[str, List[Tuple[int, float]]]:
    """Every unit resource the running task holds: name -> [(unit id,
    fraction)], e.g. ``{"CPU": [(3, 1.0)], "GPU": [(0, 0.5)]}``."""
    _host.require()
    return _host.get_resource_ids()


def task_id() -> str:
    """The running task's id (the driver's inside main), 32 hex digits."""
    _host.require()
    return _host.task_id()


#: The class of the actor this instance holds (set before its constructor
#: runs; an instance holds at most one actor).
_running_class: Any = None


def current_actor_id() -> Optional[str]:
    """The id of the actor whose constructor or method is running, 32 hex
    digits (Ray's ``ray.get_runtime_context().get_actor_id()``): the same
    on every node and after a restart; None in a remote function's task
    and in a driver."""
    _host.require()
    actor = _host.current_actor()
    return None if actor is None else task_hex(actor)


def current_actor() -> Optional[ActorHandle]:
    """A handle to the running actor (Ray's
    ``ray.get_runtime_context().current_actor``), of its class, to pass to
    tasks and other actors so that they call it back; None in a remote
    function's task and in a driver. Made by the actor itself, it does not
    keep the actor alive (as Ray's). A call through it must not be waited
    for inside one of the actor's own methods: calls on one actor run one
    at a time."""
    _host.require()
    actor = _host.current_actor()
    return None if actor is None else ActorHandle(actor, _running_class)


def node_id() -> str:
    """The id of the node running the task."""
    _host.require()
    return _host.node_id()


def log(*message: Any, level: str = "info", sep: str = " ") -> None:
    """Writes a line to the host's log, attributed to the running task:
    ``wray.log("loaded", n, "rows", level="info")`` (levels: trace, debug,
    info, warn, error)."""
    _host.require()
    _host.log(level, sep.join(str(m) for m in message))


class profile:
    """A span of the node's timeline (``wray timeline``) inside the running
    task's span: ``with wray.profile("load"): ...``."""

    def __init__(self, name: str):
        self._name = name
        self._span: Optional[int] = None

    def __enter__(self) -> "profile":
        _host.require()
        self._span = _host.profile_begin(self._name)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._span is not None:
            _host.profile_end(self._span)
            self._span = None


def init(*args: Any, **kwargs: Any) -> None:
    """Nothing to do (Ray's ``ray.init``): inside ``wray run`` the node is up."""


_codec.ref_factory = ObjectRef
_codec.actor_factory = ActorHandle
