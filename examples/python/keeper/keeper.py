"""A named, detached counter that outlives the job that made it and is
found by name from any job on any node (Ray's named actors,
``Counter.options(name=..., lifetime="detached")`` and
``wray.get_actor(name)``), restarted on another node if its own dies.

One command per job (``wray job submit keeper_py -- COMMAND NAME ...``):

- ``make NAME START [RESOURCE]``: creates the counter ``NAME`` at ``START``
  (detached, one restart, one retry of a lost call; holding one unit of
  custom resource ``RESOURCE`` when given, so it lives on a node that has
  it) and increments it once: prints ``make <count>`` and ``node <node
  id>``, or ``make refused: <why>`` when the name is taken.
- ``use NAME``: increments the counter ``NAME``: ``use <count>``, or ``use
  missing: <why>`` when no live actor has that name, ``use failed: <task
  error>`` when the call fails (the actor died meanwhile).
- ``where NAME``: ``where <node id>``, the node it lives on.
- ``kill NAME``: ``kill True`` (its name is free again).
"""

import wray


@wray.actor
class Counter:
    def __init__(self, start: int = 0):
        self.n = start

    def increment(self, by: int = 1) -> int:
        self.n += by
        return self.n

    def node(self) -> str:
        return wray.node_id()


USAGE = "usage: keeper_py (make NAME START [RESOURCE] | use NAME | where NAME | kill NAME)"


def make(name: str, start: int, resource: str = "") -> None:
    options = dict(name=name, lifetime="detached", max_restarts=1, max_task_retries=1)
    if resource:
        options["resources"] = {resource: 1}
    try:
        counter = Counter.options(**options).remote(start)
    except ValueError as e:
        print(f"make refused: {e}")
        return
    print(f"make {wray.get(counter.increment.remote())}")
    print(f"node {wray.get(counter.node.remote())}")


def use(name: str) -> None:
    try:
        counter = wray.get_actor(name)
    except ValueError as e:
        print(f"use missing: {e}")
        return
    try:
        print(f"use {wray.get(counter.increment.remote())}")
    except wray.TaskError as e:
        print(f"use failed: {e}")


@wray.main
def main(args: list[str]) -> None:
    if len(args) < 2:
        raise SystemExit(USAGE)
    command, name = args[0], args[1]
    if command == "make" and len(args) in (3, 4):
        make(name, int(args[2]), args[3] if len(args) == 4 else "")
    elif command == "use" and len(args) == 2:
        use(name)
    elif command == "where" and len(args) == 2:
        print(f"where {wray.get(wray.get_actor(name).node.remote())}")
    elif command == "kill" and len(args) == 2:
        print(f"kill {wray.kill(wray.get_actor(name))}")
    else:
        raise SystemExit(USAGE)
