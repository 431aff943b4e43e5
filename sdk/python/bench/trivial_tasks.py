"""Per-task cost of the Python SDK: trivial tasks, actor calls and puts,
timed inside a Python driver.

    python -m wray.build bench/trivial_tasks.py -o build/trivial_tasks.wasm
    wray run build/trivial_tasks.wasm --quiet -- 1000
    # with a Rust component beside it, its trivial `noop` too:
    wray run build/trivial_tasks.wasm --quiet --with microbench.wasm -- 1000 microbench
"""

from __future__ import annotations

import time
from typing import List

import wray


@wray.remote
def noop(x: int) -> int:
    return x


@wray.remote(reuse=True)
def noop_reused(x: int) -> int:
    return x


@wray.actor
class Echo:
    def echo(self, x: int) -> int:
        return x


def report(what: str, n: int, seconds: float) -> None:
    print(f"{what:<44} {n:>6} in {seconds:7.3f} s  {seconds / n * 1e6:9.1f} us each  {n / seconds:9.0f} /s")


@wray.main
def main(args: List[str]) -> None:
    n = int(args[0]) if args else 1000
    wray.get(noop.remote(0))  # warm: the component is compiled, an instance made

    t = time.perf_counter()
    refs = [noop.remote(i) for i in range(n)]
    submitted = time.perf_counter()
    assert wray.get(refs) == list(range(n))
    done = time.perf_counter()
    report("python tasks, submitted (submit only)", n, submitted - t)
    report("python tasks, submitted then get all", n, done - t)

    wray.get(noop_reused.remote(0))
    t = time.perf_counter()
    assert wray.get([noop_reused.remote(i) for i in range(n)]) == list(range(n))
    report("python tasks, reuse=True, then get all", n, time.perf_counter() - t)

    m = max(1, n // 10)
    t = time.perf_counter()
    for i in range(m):
        assert wray.get(noop.remote(i)) == i
    report("python tasks, one at a time (submit + get)", m, time.perf_counter() - t)

    e = Echo.remote()
    wray.get(e.echo.remote(0))
    t = time.perf_counter()
    assert wray.get([e.echo.remote(i) for i in range(n)]) == list(range(n))
    report("python actor calls, submitted then get all", n, time.perf_counter() - t)

    t = time.perf_counter()
    puts = [wray.put(i) for i in range(n)]
    assert wray.get(puts) == list(range(n))
    report("put + get of small values (driver)", n, time.perf_counter() - t)

    if len(args) > 1:
        rust_noop = wray.function(f"{args[1]}/noop")
        wray.get(rust_noop.remote(0))
        t = time.perf_counter()
        assert wray.get([rust_noop.remote(i) for i in range(n)]) == list(range(n))
        report(f"rust tasks ({args[1]}/noop) from python", n, time.perf_counter() - t)
