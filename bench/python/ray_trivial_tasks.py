"""Ray's side of the Python rows of `bench/languages/run.sh`: the same trivial Python work as
`sdk/python/bench/trivial_tasks.py` (wray's Python driver), timed the same
way, on Ray's own Python workers on this machine.

    ~/.cache/wray/ray-venv/bin/python ray_trivial_tasks.py 10000
"""

import sys
import time

import ray


def report(what, n, seconds):
    print(f"{what:<44} {n:>6} in {seconds:7.3f} s  {seconds / n * 1e6:9.1f} us each  {n / seconds:9.0f} /s")


@ray.remote
def noop(x):
    return x


@ray.remote
class Echo:
    def echo(self, x):
        return x


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    ray.get([noop.remote(0) for _ in range(20)])  # workers started
    t = time.perf_counter()
    refs = [noop.remote(i) for i in range(n)]
    submitted = time.perf_counter()
    assert ray.get(refs) == list(range(n))
    done = time.perf_counter()
    report("python tasks, submitted (submit only)", n, submitted - t)
    report("python tasks, submitted then get all", n, done - t)
    m = max(1, n // 10)
    t = time.perf_counter()
    for i in range(m):
        assert ray.get(noop.remote(i)) == i
    report("python tasks, one at a time (submit + get)", m, time.perf_counter() - t)
    e = Echo.remote()
    ray.get(e.echo.remote(0))
    t = time.perf_counter()
    assert ray.get([e.echo.remote(i) for i in range(n)]) == list(range(n))
    report("python actor calls, submitted then get all", n, time.perf_counter() - t)
    t = time.perf_counter()
    puts = [ray.put(i) for i in range(n)]
    assert ray.get(puts) == list(range(n))
    report("put + get of small values (driver)", n, time.perf_counter() - t)
    ray.shutdown()


if __name__ == "__main__":
    main()
