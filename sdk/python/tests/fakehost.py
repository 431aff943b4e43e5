"""A fake host for the SDK's unit tests: stand-ins for the modules
componentize-py generates (``wit_world``, ``componentize_py_types``) with a
single-process object store that runs submitted tasks at once, in-process,
through the SDK's own exports. No wasm involved.

``install()`` must run before ``wray._exports`` is imported.
"""

from __future__ import annotations

import enum
import sys
import types as pytypes
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple


# -- componentize_py_types -----------------------------------------------------


@dataclass(frozen=True)
class Err(Exception):
    value: Any


# -- wit_world.imports.types (as componentize-py 0.25.1 generates it) ---------


@dataclass
class TaskId:
    hi: int
    lo: int


@dataclass
class ObjectId:
    task: TaskId
    index: int


class Codec(enum.Enum):
    RKYV = 0
    JSON = 1
    RAW = 2


@dataclass
class Payload:
    codec: Codec
    data: bytes
    refs: List[ObjectId]


@dataclass
class Arg_Value:
    value: Payload


@dataclass
class Arg_Object:
    value: ObjectId


class ErrorKind(enum.Enum):
    APPLICATION = 0
    PANIC = 1
    TRAP = 2
    OUT_OF_MEMORY = 3
    TIMEOUT = 4
    INVALID_ARGUMENT = 5
    NOT_FOUND = 6
    ACTOR_DIED = 7
    SYSTEM = 8
    INFEASIBLE = 9
    CANCELLED = 10


@dataclass
class ErrorCause:
    kind: ErrorKind
    function: str
    task: TaskId
    message: str


@dataclass
class TaskError:
    kind: ErrorKind
    function: str
    task: TaskId
    message: str
    causes: List[ErrorCause] = field(default_factory=list)


@dataclass
class ResourceRequest:
    num_cpus: Optional[float]
    num_gpus: Optional[float]
    memory: Optional[int]
    custom: List[Tuple[str, float]]


@dataclass
class Limits:
    max_memory: Optional[int]
    timeout_ms: Optional[int]
    fuel: Optional[int]


@dataclass
class TaskOptions:
    num_returns: int
    resources: ResourceRequest
    limits: Limits
    result_codec: Optional[Codec]
    detached: bool


@dataclass
class ActorOptions:
    name: Optional[str]
    max_restarts: int
    max_task_retries: int


@dataclass
class ResourceIds:
    name: str
    ids: List[Tuple[int, float]]


class FunctionKind(enum.Enum):
    FUNCTION = 0
    ACTOR_CONSTRUCTOR = 1
    ACTOR_METHOD = 2


@dataclass
class ParamInfo:
    name: str
    schema: str


@dataclass
class FunctionInfo:
    kind: FunctionKind
    name: str
    class_: Optional[str]
    num_returns: int
    params: List[ParamInfo]
    returns: List[str]
    resources: ResourceRequest
    limits: Limits
    reuse: bool


@dataclass
class ComponentInfo:
    functions: List[FunctionInfo]
    sdk: str


class LogLevel(enum.Enum):
    TRACE = 0
    DEBUG = 1
    INFO = 2
    WARN = 3
    ERROR = 4


def key(o: ObjectId) -> Tuple[int, int, int]:
    return (o.task.hi, o.task.lo, o.index)


# -- the host ----------------------------------------------------------------


class Host:
    """The node: an object store, tasks run at once, actors by id."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.store: Dict[Tuple[int, int, int], Any] = {}
        self.released: List[Tuple[int, int, int]] = []
        self.submitted: List[Tuple[Optional[str], str, List[Any], TaskOptions]] = []
        self.actors: Dict[Tuple[int, int], Any] = {}
        self.actor_errors: Dict[Tuple[int, int], TaskError] = {}
        self.logs: List[Tuple[LogLevel, str]] = []
        self.put_bytes_calls = 0
        self.next_task = 1
        self.puts = 0
        self.current = TaskId(0, 0xD)
        #: The actor whose constructor or method runs (`current-actor`).
        self.actor: Optional[TaskId] = None
        #: Other components: name -> fn(function, args, result_codec) -> payloads.
        self.components: Dict[str, Callable[[str, List[Any], Optional[Codec]], List[Payload]]] = {}
        self.gpu_ids: List[int] = []
        #: The actor directory: name -> (actor, class).
        self.names: Dict[str, Tuple[Tuple[int, int], str]] = {}
        #: Every `create-actor-with`'s actor options, in order.
        self.actor_options: List[ActorOptions] = []
        #: Every `get-actor`'s (name, class), in order.
        self.lookups: List[Tuple[str, str]] = []
        #: Actors created by another component: (actor) -> class.
        self.foreign: Dict[Tuple[int, int], str] = {}

    def new_task(self) -> TaskId:
        t = TaskId(0, self.next_task)
        self.next_task += 1
        return t

    def resolve(self, args: List[Any]) -> Tuple[List[Any], Optional[TaskError]]:
        out = []
        for a in args:
            if isinstance(a, Arg_Object):
                v = self.store.get(key(a.value))
                if v is None:
                    return [], TaskError(ErrorKind.NOT_FOUND, "?", TaskId(0, 0), "no such object")
                if isinstance(v, TaskError):
                    return [], v
                out.append(Arg_Value(v))
            else:
                out.append(a)
        return out, None

    def run(self, task: TaskId, n: int, call: Callable[[List[Any]], List[Payload]], args: List[Any]) -> List[ObjectId]:
        ids = [ObjectId(task, i + 1) for i in range(n)]
        resolved, err = self.resolve(args)
        if err is None:
            saved, self.current = self.current, task
            saved_actor, self.actor = self.actor, None
            try:
                results = call(resolved)
            except Err as e:
                err = e.value
            finally:
                self.current = saved
                self.actor = saved_actor
        if err is not None:
            for i in ids:
                self.store[key(i)] = err
        else:
            for i, p in zip(ids, results):
                self.store[key(i)] = p
        return ids


HOST = Host()


def _exports():
    import wray._exports as x

    return x


# objects


def put(value: Payload) -> ObjectId:
    HOST.puts += 1
    o = ObjectId(HOST.current, 0x8000_0000 | HOST.puts)
    HOST.store[key(o)] = value
    return o


def get(ids: List[ObjectId], timeout_ms: Optional[int]) -> List[Payload]:
    out = []
    for i in ids:
        v = HOST.store.get(key(i))
        if v is None:
            raise Err(TaskError(ErrorKind.TIMEOUT, "get", HOST.current, f"timed out after {timeout_ms} ms"))
        if isinstance(v, TaskError):
            raise Err(v)
        out.append(v)
    return out


def wait(ids: List[ObjectId], num_returns: int, timeout_ms: Optional[int]) -> List[bool]:
    out = []
    n = 0
    for i in ids:
        ready = key(i) in HOST.store and n < num_returns
        n += ready
        out.append(ready)
    return out


def release(ids: List[ObjectId]) -> None:
    HOST.released.extend(key(i) for i in ids)


# mapping


def put_bytes(value: bytes, codec: Codec, refs: List[ObjectId]) -> ObjectId:
    HOST.put_bytes_calls += 1
    return put(Payload(codec, bytes(value), refs))


def page_size() -> int:
    return 4096


# tasks


def submit(function: str, args: List[Any], options: TaskOptions) -> List[ObjectId]:
    HOST.submitted.append((None, function, args, options))
    x = _exports()
    return HOST.run(
        HOST.new_task(),
        options.num_returns,
        lambda a: x.Functions().invoke(function, a, options.result_codec),
        args,
    )


def submit_to(component: str, function: str, args: List[Any], options: TaskOptions) -> List[ObjectId]:
    HOST.submitted.append((component, function, args, options))
    impl = HOST.components.get(component)
    task = HOST.new_task()
    if impl is None:
        err = TaskError(ErrorKind.NOT_FOUND, f"{component}/{function}", task, f"no component is deployed as `{component}`")
        ids = [ObjectId(task, i + 1) for i in range(options.num_returns)]
        for i in ids:
            HOST.store[key(i)] = err
        return ids
    return HOST.run(task, options.num_returns, lambda a: impl(function, a, options.result_codec), args)


def create_actor(class_: str, args: List[Any], options: TaskOptions) -> TaskId:
    HOST.submitted.append((None, class_, args, options))
    x = _exports()
    task = HOST.new_task()
    resolved, err = HOST.resolve(args)
    HOST.store[(task.hi, task.lo, 1)] = Payload(Codec.JSON, b"null", [])
    if err is None:
        saved, HOST.actor = HOST.actor, task
        try:
            HOST.actors[(task.hi, task.lo)] = x.ActorInstance.create(class_, resolved)
        except Err as e:
            err = e.value
        finally:
            HOST.actor = saved
    if err is not None:
        HOST.actor_errors[(task.hi, task.lo)] = err
    return task


def create_actor_of(component: str, class_: str, args: List[Any], options: TaskOptions) -> TaskId:
    HOST.submitted.append((component, class_, args, options))
    task = HOST.new_task()
    HOST.actor_errors[(task.hi, task.lo)] = TaskError(
        ErrorKind.ACTOR_DIED, f"{component}/{class_}", task, f"no component is deployed as `{component}`"
    )
    return task


def create_actor_with(component: Optional[str], class_: str, args: List[Any], options: TaskOptions, actor: ActorOptions) -> TaskId:
    """As the host: the actor is created, then takes its name; a name a
    live actor holds kills it, its calls naming the holder."""
    HOST.actor_options.append(actor)
    if component is None:
        task = create_actor(class_, args, options)
    else:
        task = create_actor_of(component, class_, args, options)
        HOST.foreign[(task.hi, task.lo)] = class_
    key_ = (task.hi, task.lo)
    if actor.name is not None:
        holder = HOST.names.get(actor.name)
        if holder is not None and (holder[0] in HOST.actors or holder[0] in HOST.foreign):
            HOST.actors.pop(key_, None)
            HOST.foreign.pop(key_, None)
            HOST.actor_errors[key_] = TaskError(
                ErrorKind.ACTOR_DIED, f"{class_}.new", task,
                f"it could not take its name: named actor `{actor.name}` already exists",
            )
        elif key_ in HOST.actors or key_ in HOST.foreign:
            HOST.names[actor.name] = (key_, class_)
    return task


def get_actor(name: str, class_: str) -> TaskId:
    HOST.lookups.append((name, class_))
    held = HOST.names.get(name)
    if held is None or not (held[0] in HOST.actors or held[0] in HOST.foreign):
        raise Err(TaskError(ErrorKind.NOT_FOUND, "main", HOST.current, f"no live actor is named `{name}`"))
    if class_ and held[1] != class_:
        raise Err(TaskError(
            ErrorKind.INVALID_ARGUMENT, "main", HOST.current,
            f"the actor named `{name}` is of class `{held[1]}`, not `{class_}`",
        ))
    return TaskId(*held[0])


def call_actor(actor: TaskId, method: str, args: List[Any], options: TaskOptions) -> List[ObjectId]:
    HOST.submitted.append((None, method, args, options))
    task = HOST.new_task()
    inst = HOST.actors.get((actor.hi, actor.lo))
    if inst is None:
        cause = HOST.actor_errors.get((actor.hi, actor.lo))
        err = TaskError(ErrorKind.ACTOR_DIED, method, task, f"actor died: {cause.message if cause else 'unknown'}")
        ids = [ObjectId(task, i + 1) for i in range(options.num_returns)]
        for i in ids:
            HOST.store[key(i)] = err
        return ids

    def run(a: List[Any]) -> List[Payload]:
        HOST.actor = actor
        return inst.call(method, a, options.result_codec)

    return HOST.run(task, options.num_returns, run, args)


def cancel(id: ObjectId, force: bool, recursive: bool) -> bool:
    return False


def kill_actor(actor: TaskId) -> bool:
    k = (actor.hi, actor.lo)
    return (HOST.actors.pop(k, None) is not None) | (HOST.foreign.pop(k, None) is not None)


# runtime


def task_id() -> TaskId:
    return HOST.current


def current_actor() -> Optional[TaskId]:
    return HOST.actor


def node_id() -> str:
    return "fake-node"


def log(level: LogLevel, message: str) -> None:
    HOST.logs.append((level, message))


def get_gpu_ids() -> List[int]:
    return list(HOST.gpu_ids)


def get_resource_ids() -> List[ResourceIds]:
    return [ResourceIds("CPU", [(0, 1.0)])]


def profile_begin(name: str) -> int:
    return 1


def profile_end(span: int) -> None:
    pass


def panicked(message: str) -> None:
    pass


# -- installing ----------------------------------------------------------------


class _Protocol:
    pass


#: The exported interfaces' protocols componentize-py generates for world
#: ``guest`` (every part).
ALL_EXPORTS = ("Metadata", "Functions", "Actors", "Lifecycle", "Driver")


def install(exports: Tuple[str, ...] = ALL_EXPORTS) -> Host:
    """Registers the fake modules and binds the SDK to them. ``exports``:
    the protocols of the exported interfaces the world has (``Actors``
    brings the ``actors`` module with ``ActorInstance``)."""
    me = sys.modules[__name__]

    def module(name: str, **attrs: Any) -> pytypes.ModuleType:
        m = pytypes.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    module("componentize_py_types", Err=Err, Ok=None, Some=None)
    type_names = [
        "TaskId", "ObjectId", "Codec", "Payload", "Arg_Value", "Arg_Object", "ErrorKind",
        "TaskError", "ErrorCause", "ResourceRequest", "Limits", "TaskOptions", "ActorOptions", "ResourceIds", "FunctionKind",
        "ParamInfo", "FunctionInfo", "ComponentInfo", "LogLevel",
    ]
    t = module("wit_world.imports.types", **{n: getattr(me, n) for n in type_names})
    o = module("wit_world.imports.objects", put=put, get=get, wait=wait, release=release)
    mp = module("wit_world.imports.mapping", put_bytes=put_bytes, page_size=page_size)
    tk = module(
        "wit_world.imports.tasks",
        submit=submit, submit_to=submit_to, create_actor=create_actor,
        create_actor_of=create_actor_of, create_actor_with=create_actor_with, get_actor=get_actor,
        call_actor=call_actor, cancel=cancel, kill_actor=kill_actor,
    )
    rt = module(
        "wit_world.imports.runtime",
        task_id=task_id, current_actor=current_actor, node_id=node_id, log=log, get_gpu_ids=get_gpu_ids,
        get_resource_ids=get_resource_ids, profile_begin=profile_begin, profile_end=profile_end,
        panicked=panicked,
    )
    module("wit_world.imports", types=t, objects=o, mapping=mp, tasks=tk, runtime=rt)
    protocols: Dict[str, Any] = {name: type(name, (), {}) for name in exports}
    if "Actors" in exports:
        protocols["actors"] = module(
            "wit_world.exports.actors", ActorInstance=type("ActorInstance", (), {})
        )
    ex = module("wit_world.exports", **protocols)
    module("wit_world", imports=sys.modules["wit_world.imports"], exports=ex)

    from wray import _host

    assert _host.bind()
    return HOST
