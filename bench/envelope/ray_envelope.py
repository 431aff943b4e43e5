"""Ray 2.60's side of the scalability envelope (see README.md in this
folder), in the venv bench/ray/setup.sh makes:

    ~/.cache/wray/ray-venv/bin/python ray_envelope.py --tmp DIR [--quick] [--only DIM,...]

The same dimensions as envelope.py (the wray side), at the sizes this
machine allows for Ray (each actor and each running task is a worker
process of its own in Ray), each dimension in a child process of its own
(`--child DIM SIZES`: one `ray.init(num_cpus=2)` for all its sizes, or
for `nodes` and `broadcast` a `ray.cluster_utils.Cluster` of N one-CPU
nodes per size), killed past a time bound or past an RSS bound (the sum
over the child and every process below it: the GCS, raylets, workers). The
single-node tests follow Ray's release/benchmarks/single_node/test_single_node.py.
One JSON line per dimension on stdout ("system": "ray"); progress on stderr.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from envelope import PUBLISHED, run_bounded, short  # noqa: E402

MiB = 1 << 20

# (target, full sizes, quick sizes, time bound s)
DIMS = {
    "nodes": (250, [4, 8], [2], 300),
    "actors": (10_000, [32, 128], [4], 300),
    "running": (10_000, [32, 128], [4], 300),
    "broadcast": (50, [4, 8], [2], 300),
    "args": (10_000, [1_000, 10_000], [100], 180),
    "returns": (3_000, [100, 1_024, 3_000], [100], 180),
    "get": (10_000, [1_000, 10_000], [100], 180),
    "queued": (1_000_000, [10_000, 100_000], [1_000], 400),
    "large": (100 * 1024, [256, 1_024, 3_072], [64], 300),
}
ORDER = ("nodes", "actors", "running", "broadcast", "args", "returns", "get", "queued", "large")


def log(*a):
    print("ray_envelope:", *a, file=sys.stderr, flush=True)


def emit(**rec):
    print(json.dumps({"bench": "envelope", "system": "ray", **rec}), flush=True)


# ---------------------------------------------------------------- children


def child(dim, sizes, a):
    """Runs the sizes of `dim` in this process (one `ray.init` for them
    all; a cluster per size for `nodes` and `broadcast`), printing a JSON
    line per size; stops at the first that fails (its line has "error")."""
    if dim in ("nodes", "broadcast"):
        for n in sizes:
            if not child_size(dim, n, a, fresh=True):
                return
        return
    import ray

    t0 = time.perf_counter()
    store = (a.large_store_mib if dim == "large" else 1024) * MiB
    ray.init(num_cpus=2, object_store_memory=store, include_dashboard=False, log_to_driver=False)
    init_s = time.perf_counter() - t0
    for n in sizes:
        if not child_size(dim, n, a, fresh=False, init_s=init_s):
            break
    ray.shutdown()


def child_size(dim, n, a, fresh, init_s=None):
    """One size of `dim`: prints its JSON line; False when it failed."""
    try:
        out = run_size(dim, n, a, fresh)
        if init_s is not None:
            out["init_s"] = init_s
        print(json.dumps({"dimension": dim, "n": n, **out}), flush=True)
        return True
    except Exception as e:  # noqa: BLE001 - the size's error, recorded
        print(json.dumps({"dimension": dim, "n": n, "error": f"{type(e).__name__}: {e}"[:1000]}),
              flush=True)
        return False


def run_size(dim, n, a, fresh):
    """Runs one size of `dim`; what it measured."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import numpy as np
    import ray

    out = {}
    t0 = time.perf_counter()
    cluster = None
    if fresh:
        from ray.cluster_utils import Cluster

        store = 80 * MiB if dim == "nodes" else 2 * a.bcast_mib * MiB + 80 * MiB
        cluster = Cluster(initialize_head=True, head_node_args=dict(
            num_cpus=1, object_store_memory=store, resources={"node1": 1},
            include_dashboard=False))
        for i in range(2, n + 1):
            cluster.add_node(num_cpus=1, object_store_memory=store, resources={f"node{i}": 1})
        ray.init(address=cluster.address, log_to_driver=False)
        while sum(1 for x in ray.nodes() if x["Alive"]) < n:
            time.sleep(0.1)
        out["settle_s"] = time.perf_counter() - t0

    @ray.remote
    class Cell:
        def __init__(self, v):
            self.v = v

        def read(self):
            return self.v

    @ray.remote(num_cpus=0)
    class Arrivals:
        def __init__(self):
            self.n = 0

        def arrive(self):
            self.n += 1
            return self.n

        def count(self):
            return self.n

    @ray.remote(num_cpus=0)
    def gate(arrivals, want, deadline_s):
        start = time.time()
        while True:
            c = ray.get(arrivals.count.remote())
            if c >= want:
                return c
            if time.time() - start > deadline_s:
                raise RuntimeError(f"{c} of {want} tasks arrived in {deadline_s} s")
            time.sleep(0.02)

    @ray.remote(num_cpus=0)
    def waiter(arrivals, g):
        ray.get(arrivals.arrive.remote())
        return ray.get(g[0])

    @ray.remote
    def trivial(x):
        return x

    start = time.perf_counter()
    if dim == "actors":
        cells = [Cell.options(num_cpus=0).remote(i) for i in range(n)]
        vals = ray.get([c.read.remote() for c in cells])
        assert vals == list(range(n))
    elif dim == "running":
        arr = Arrivals.remote()
        g = gate.remote(arr, n, a.deadline_s)
        ws = [waiter.remote(arr, [g]) for _ in range(n)]
        opened = ray.get(g)
        out["all_arrived_s"] = time.perf_counter() - start
        assert all(v == opened for v in ray.get(ws))
    elif dim == "args":
        @ray.remote
        def f(*args):
            return sum(args)

        refs = [ray.put(i) for i in range(n)]
        assert ray.get(f.remote(*refs)) == n * (n - 1) // 2
        out["passed"] = "f.remote(*refs): separate arguments"
    elif dim == "returns":
        @ray.remote
        def many(k):
            return list(range(k)) if k > 1 else 0

        refs = many.options(num_returns=n).remote(n)
        assert ray.get(refs) == list(range(n))
    elif dim == "get":
        refs = [ray.put(i) for i in range(n)]
        t = time.perf_counter()
        assert ray.get(refs) == list(range(n))
        out["get_s"] = time.perf_counter() - t
    elif dim == "queued":
        # Ray's test_many_queued_tasks: every CPU held by a blocked task,
        # then N tasks queued behind them.
        @ray.remote(num_cpus=0)
        class Semaphore:
            def __init__(self):
                self.open = False

            def release(self):
                self.open = True

            def acquire(self):
                return self.open

        sema = Semaphore.remote()

        @ray.remote(num_cpus=1)
        def block(s):
            while not ray.get(s.acquire.remote()):
                time.sleep(0.05)

        blocked = [block.remote(sema) for _ in range(2)]
        tasks = [trivial.remote(i) for i in range(n)]
        out["submit_s"] = time.perf_counter() - start
        ray.get(sema.release.remote())
        ray.get(blocked)
        assert ray.get(tasks) == list(range(n))
    elif dim == "large":
        ref = ray.put(np.ones(n * MiB, dtype=np.uint8))
        out["put_s"] = time.perf_counter() - start
        v = ray.get(ref)
        assert len(v) == n * MiB and int(v[::4096].sum()) == (n * MiB) // 4096
    elif dim == "nodes":
        t = time.perf_counter()
        refs = [trivial.options(num_cpus=0, resources={f"node{i}": 0.001}).remote(j)
                for i in range(1, n + 1) for j in range(a.pinned_k)]
        ray.get(refs)
        out["one_driver_tasks_per_s"] = len(refs) / (time.perf_counter() - t)
        out.update(ray_rest(a.rest_window))
    elif dim == "broadcast":
        @ray.remote(num_cpus=0)
        def read_here(x):
            return len(x), int(x[::4096].sum())

        ref = ray.put(np.ones(a.bcast_mib * MiB, dtype=np.uint8))
        t = time.perf_counter()
        got = ray.get([read_here.options(resources={f"node{i}": 0.001}).remote(ref)
                       for i in range(1, n + 1)])
        out["broadcast_s"] = time.perf_counter() - t
        assert all(g == (a.bcast_mib * MiB, a.bcast_mib * MiB // 4096) for g in got)
    # nodes: the time until every node was alive; broadcast: the reads.
    out["seconds"] = out.get("broadcast_s", out.get("settle_s") if dim == "nodes" else
                             time.perf_counter() - start)
    if cluster is not None:
        ray.shutdown()
        cluster.shutdown()
    return out


def ray_rest(window):
    """Each raylet's and the GCS's CPU share and RSS over `window` s at rest."""
    from envelope import cpu_s, rss_mib

    procs = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")[0].decode(errors="replace")
        except OSError:
            continue
        name = os.path.basename(cmd)
        if name in ("raylet", "gcs_server"):
            procs[int(pid)] = name
    c0 = {p: cpu_s(p) for p in procs}
    t = time.perf_counter()
    time.sleep(window)
    dt = time.perf_counter() - t
    c1 = {p: cpu_s(p) for p in procs}
    raylet_cpu = [(c1[p] - c0[p]) / dt * 100 for p, k in procs.items()
                  if k == "raylet" and c0[p] is not None and c1[p] is not None]
    raylet_rss = [rss_mib(p) or 0 for p, k in procs.items() if k == "raylet"]
    gcs = [p for p, k in procs.items() if k == "gcs_server"]
    return {
        "raylet_cpu_pct_mean": sum(raylet_cpu) / max(len(raylet_cpu), 1),
        "raylet_rss_mib_mean": sum(raylet_rss) / max(len(raylet_rss), 1),
        "gcs_cpu_pct": ((cpu_s(gcs[0]) or 0) - (c0[gcs[0]] or 0)) / dt * 100 if gcs else None,
    }


# ---------------------------------------------------------------- parent


def ray_stop(venv_python):
    ray = os.path.join(os.path.dirname(venv_python), "ray")
    if os.path.exists(ray):
        subprocess.run([ray, "stop", "--force"], capture_output=True, timeout=120)


def ladder(dim, a):
    """Every size of `dim` in one child process, bounded in time (the sum
    of the sizes' bounds) and in the RSS of its whole process tree."""
    target, full, quick, seconds = DIMS[dim]
    sizes = quick if a.quick else full
    bound = seconds * len(sizes)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", dim, ",".join(map(str, sizes)),
           "--tmp", a.tmp, "--large-store-mib", str(a.large_store_mib), "--bcast-mib", str(a.bcast_mib),
           "--pinned-k", str(a.pinned_k), "--rest-window", str(a.rest_window),
           "--deadline-s", str(int(seconds * 0.8))]
    t = time.perf_counter()
    rc, out, err, wall, peak, killed = run_bounded(cmd, bound, a.rss_bound_mib, tree=True)
    tried = []
    for text in out.splitlines():
        if text.startswith("{"):
            try:
                line = json.loads(text)
            except ValueError:
                continue
            rec = {k: (round(v, 4) if isinstance(v, float) else v)
                   for k, v in line.items() if k != "dimension"}
            tried.append(rec)
    if not tried or "error" not in tried[-1]:
        done = {r["n"] for r in tried}
        left = [n for n in sizes if n not in done]
        if left:
            last = err.strip().splitlines()[-3:] if err.strip() else [f"exit {rc}"]
            tried.append({"n": left[0], "error": short(killed or " / ".join(last))})
    if tried and "error" in tried[-1]:
        ray_stop(sys.executable)
    log(f"{dim}: {time.perf_counter() - t:.1f} s, peak RSS {peak:.0f} MiB: {json.dumps(tried)[:600]}")
    ok = [r for r in tried if "error" not in r]
    reached = ok[-1] if ok else None
    rec = dict(dimension=dim, target=target, published=PUBLISHED[dim],
               reached=reached["n"] if reached else 0,
               seconds=reached.get("seconds") if reached else None,
               peak_rss_mib=round(peak, 1),
               bound={"seconds": bound, "rss_mib": a.rss_bound_mib,
                      "rss": "sum over the driver and every process below it, all sizes"},
               sizes=tried)
    if dim == "large":
        rec["unit"] = "MiB"
        rec["store_mib"] = a.large_store_mib
    if dim == "broadcast":
        rec["unit"] = f"nodes reading {a.bcast_mib} MiB"
    if tried and "error" in tried[-1]:
        rec["error"] = tried[-1]["error"]
        rec["failed_at"] = tried[-1]["n"]
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=",".join(ORDER))
    ap.add_argument("--child", nargs=2, metavar=("DIM", "SIZES"))
    ap.add_argument("--rss-bound-mib", type=int, default=12288)
    ap.add_argument("--large-store-mib", type=int, default=512)
    ap.add_argument("--bcast-mib", type=int, default=256)
    ap.add_argument("--pinned-k", type=int, default=20)
    ap.add_argument("--rest-window", type=float, default=5)
    ap.add_argument("--deadline-s", type=int, default=240)
    a = ap.parse_args()
    if a.child:
        child(a.child[0], [int(x) for x in a.child[1].split(",")], a)
        return 0
    if a.quick:
        a.bcast_mib = 8
        a.pinned_k = 5
        a.rest_window = 2
        a.large_store_mib = 80
    only = [d for d in a.only.split(",") if d]
    status = 0
    for dim in ORDER:
        if dim not in only:
            continue
        t = time.perf_counter()
        try:
            rec = ladder(dim, a)
        except Exception as e:  # noqa: BLE001 - report, go on
            rec = dict(dimension=dim, reached=0, error=short(str(e)))
            status = 1
        rec["dimension_s"] = round(time.perf_counter() - t, 1)
        emit(**rec)
    if "placement_groups" in only:
        emit(dimension="placement_groups", target=1000, published=PUBLISHED["placement_groups"],
             reached=None, note="not measured here")
    return status


if __name__ == "__main__":
    sys.exit(main())
