"""wray: remote functions, actors and objects for Python code run by wray
as WebAssembly components, with Ray's API.

An app is a module that marks its remote functions with ``@wray.remote``,
its actor classes with ``@wray.actor``, and optionally a driver with
``@wray.main``; ``python -m wray.build app.py -o app.wasm`` makes it a
component for ``wray run app.wasm -- args``::

    import wray

    @wray.remote
    def add(a: int, b: int) -> int:
        return a + b

    @wray.actor
    class Counter:
        def __init__(self, start: int):
            self.n = start

        def increment(self) -> int:
            self.n += 1
            return self.n

    @wray.main
    def main(args: list[str]) -> None:
        x = add.remote(1, 2)            # a task; returns an ObjectRef at once
        y = add.remote(x, 10)           # depends on x: runs once x exists
        assert wray.get(y) == 13
        c = Counter.remote(0)
        assert wray.get(c.increment.remote()) == 1

Other deployed components (any language) are reached by qualified name:
``wray.function("tree_reduce/make_array").remote(3)``,
``wray.actor_class("counter/Counter").remote(0)``.

Values cross as JSON; ObjectRefs and ActorHandles inside values travel as
references.
"""

__version__ = "0.1.0"

from ._errors import ERROR_KINDS, TaskError  # noqa: E402
from ._refs import ObjectRef  # noqa: E402
from ._api import (  # noqa: E402
    ActorClass,
    ActorHandle,
    ActorMethod,
    QualifiedActorClass,
    QualifiedFunction,
    RemoteFunction,
    actor,
    actor_class,
    cancel,
    current_actor,
    current_actor_id,
    function,
    get,
    get_actor,
    get_gpu_ids,
    get_resource_ids,
    init,
    kill,
    log,
    main,
    method,
    node_id,
    profile,
    put,
    remote,
    task_id,
    wait,
)
from . import _schema as _schema_mod  # noqa: E402

_schema_mod.register_special(ObjectRef, _schema_mod.OBJECT_REF_SCHEMA)
_schema_mod.register_special(ActorHandle, _schema_mod.ACTOR_HANDLE_SCHEMA)

__all__ = [
    "ERROR_KINDS",
    "ActorClass",
    "ActorHandle",
    "ActorMethod",
    "ObjectRef",
    "QualifiedActorClass",
    "QualifiedFunction",
    "RemoteFunction",
    "TaskError",
    "actor",
    "actor_class",
    "cancel",
    "current_actor",
    "current_actor_id",
    "function",
    "get",
    "get_actor",
    "get_gpu_ids",
    "get_resource_ids",
    "init",
    "kill",
    "log",
    "main",
    "method",
    "node_id",
    "profile",
    "put",
    "remote",
    "task_id",
    "wait",
]
