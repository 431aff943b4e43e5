"""Ray 2.60's side of wray's cluster benchmark (see README.md in this folder).

A three-node Ray cluster on this one machine (`ray.cluster_utils.Cluster`: a
head node and two worker nodes, each its own raylet, object store and
workers), the driver attached to the head. Node i carries the custom
resource {"node<i>": 1}; a task asks for {"node<i>": 0.001} to be pinned to
node i (the fraction leaves the node's CPUs as the only limit on how many run
at once). Cases, each printed as JSON lines on stdout ("system": "ray"):

  transfer     node 1 makes a uint8 numpy array of SIZE bytes; a task on
               node 2 `ray.get`s its ref (passed inside a list, so the task
               starts before the bytes move) and times that get.
  roundtrip    the driver (on node 1) calls a trivial task pinned to node 2
               and waits for it, one at a time; p50/p99 over --rtt-calls.
  throughput   --tput-tasks trivial tasks, round-robin over nodes 1..k
               (k = 1, 2, 3), submitted at once, then get all.
  spread       a burst of N one-CPU tasks of MS ms each from the driver
               (Ray's default scheduling: hybrid, queued tasks spilled back
               to raylets with room), on the three nodes, and pinned to node
               1 (hard node affinity) for the one-node figure.
  kill_retry   a task runs on node 3 (soft node affinity); every process of
               node 3 is SIGKILLed; time from the kill to the retried task
               starting on another node (the task's own time.time()).
  tree_reduce  64 leaves (each sleeps --leaf-ms, then makes a 1 MiB float64
               array), pairwise-summed to one array; with no kill, and with
               node 3 SIGKILLed half-way (lost objects come back through
               Ray's lineage reconstruction, default max_retries=3).

    ~/.cache/wray/ray-venv/bin/python ray_cluster.py [--quick] [--only transfer,roundtrip,...]

Progress goes to stderr. Ray's defaults (heartbeats, health checks, retries)
are left as they are: the numbers are what an out-of-the-box Ray does.
"""

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_DISABLE_DOCKER_CPU_WARNING", "1")

import numpy as np  # noqa: E402
import ray  # noqa: E402
from ray._private import ray_constants  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import pct  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30
PIN = 0.001  # the share of a node's custom resource that pins a task to it


def log(*a):
    print("ray_cluster:", *a, file=sys.stderr, flush=True)


# Ray's driver prints some messages of its own (e.g. "(raylet) Task ... failed")
# on stdout; keep stdout for the JSON lines: they go to a copy of the original
# stdout, and everything else printed to fd 1 goes to stderr.
_RESULTS = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr

# Ray's node-failure detection settings, when set in the environment (the GCS
# defaults are 3000 ms x 5 missed checks); copied into the failure records.
HEALTH_ENV = {
    k: os.environ[k]
    for k in ("RAY_health_check_period_ms", "RAY_health_check_failure_threshold",
              "RAY_health_check_timeout_ms")
    if k in os.environ
}


def emit(**rec):
    _RESULTS.write(json.dumps({"system": "ray", **rec}) + "\n")
    _RESULTS.flush()


def parse_size(text):
    for suffix, mult in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024), ("B", 1)):
        if text.endswith(suffix):
            return int(float(text[: -len(suffix)]) * mult)
    return int(text)


def on(i):
    return {"resources": {f"node{i}": PIN}}


# ---------------------------------------------------------------- tasks


@ray.remote(num_cpus=1)
def noop():
    return 0


@ray.remote(num_cpus=1)
def make_bytes(size):
    return np.full(size, 7, dtype=np.uint8)


@ray.remote(num_cpus=1)
def timed_get(refs):
    """Get refs[0] (made elsewhere) here; time only the get."""
    t = time.perf_counter()
    a = ray.get(refs[0])
    dt = time.perf_counter() - t
    n = len(a)
    assert a[0] == 7 and a[-1] == 7
    del a
    return n, dt


@ray.remote(num_cpus=1)
def length(a):
    return len(a)


@ray.remote(num_cpus=0)
class Recorder:
    def __init__(self):
        self.starts = []

    def started(self, t, node_id, pid):
        self.starts.append((t, node_id, pid))

    def get(self):
        return list(self.starts)


@ray.remote(num_cpus=1)
def victim(rec, victim_node):
    t = time.time()
    node = ray.get_runtime_context().get_node_id()
    ray.get(rec.started.remote(t, node, os.getpid()))
    if node == victim_node:
        time.sleep(600)  # killed long before this ends
    return t, node


LEAF_ELEMS = MiB // 8  # 1 MiB of float64


@ray.remote(num_cpus=1)
def busy(ms):
    """Sleeps ms holding one CPU; the node it ran on."""
    time.sleep(ms / 1000)
    return ray.get_runtime_context().get_node_id()


@ray.remote(num_cpus=1)
def leaf(i, ms):
    time.sleep(ms / 1000)
    return np.full(LEAF_ELEMS, float(i))


@ray.remote(num_cpus=1)
def add(a, b):
    return a + b


# ---------------------------------------------------------------- cluster


class Bench:
    def __init__(self, args):
        self.args = args
        common = dict(
            num_cpus=args.cpus_per_node,
            object_store_memory=args.store_gib * GiB,
        )
        self.node_args = {
            i: dict(common, resources={f"node{i}": 1}) for i in (1, 2, 3)
        }
        t = time.perf_counter()
        self.cluster = Cluster(
            initialize_head=True,
            head_node_args=dict(
                self.node_args[1], include_dashboard=False, dashboard_host="127.0.0.1"
            ),
        )
        self.nodes = {1: self.cluster.head_node}
        for i in (2, 3):
            self.nodes[i] = self.cluster.add_node(**self.node_args[i])
        ray.init(address=self.cluster.address, log_to_driver=False)
        self.wait_nodes(3)
        self.warm()
        log(f"cluster of 3 nodes up in {time.perf_counter() - t:.1f} s")

    def node_id(self, i):
        return self.nodes[i].node_id

    def wait_nodes(self, n, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if sum(1 for x in ray.nodes() if x["Alive"]) >= n:
                return
            time.sleep(0.1)
        raise RuntimeError(f"fewer than {n} nodes alive after {timeout}s")

    def warm(self):
        # A worker started on every node, and the leases/connections made.
        for _ in range(3):
            ray.get([noop.options(**on(i)).remote() for i in (1, 2, 3) for _ in range(20)])

    def node_pids(self, i):
        """The raylet of node i and every process below it (its workers and
        agents), plus any other process this node object started."""
        node = self.nodes[i]
        raylet = node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid
        children = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
        pids, todo = [], [raylet]
        while todo:
            p = todo.pop()
            pids.append(p)
            todo.extend(children.get(p, []))
        for infos in node.all_processes.values():
            for info in infos:
                if info.process.pid not in pids:
                    pids.append(info.process.pid)
        return pids

    def kill_node(self, i):
        """SIGKILL node i: its raylet first, then (in the same instant) every
        process below it; --kill raylet kills only the raylet. Returns the
        time.time() of the first kill."""
        pids = self.node_pids(i)
        if self.args.kill == "raylet":
            pids = pids[:1]
        t = time.time()
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return t, len(pids)

    def watch_death(self, i, out):
        """In a thread: when does the GCS report node i dead?"""
        nid = self.node_id(i)

        def run():
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    for x in ray.nodes():
                        if x["NodeID"] == nid and not x["Alive"]:
                            out["dead_at"] = time.time()
                            return
                except Exception:  # noqa: BLE001 - keep polling
                    pass
                time.sleep(0.05)

        th = threading.Thread(target=run, daemon=True)
        th.start()
        return th

    def replace_node(self, i):
        """Reap the killed node i and start a fresh one with its resources."""
        t = time.perf_counter()
        try:
            self.cluster.remove_node(self.nodes[i], allow_graceful=False)
        except Exception as e:  # noqa: BLE001
            log(f"remove_node({i}): {e!r}")
        self.nodes[i] = self.cluster.add_node(**self.node_args[i])
        self.wait_nodes(3)
        ray.get([noop.options(**on(i)).remote() for _ in range(20)])
        log(f"node {i} replaced in {time.perf_counter() - t:.1f} s")

    def shutdown(self):
        try:
            ray.shutdown()
        finally:
            self.cluster.shutdown()

    # ------------------------------------------------------------ cases

    def transfer(self):
        a = self.args
        for size in [parse_size(s) for s in a.sizes.split(",")]:
            runs = a.transfer_runs if size < GiB else a.transfer_runs_1g
            in_task, e2e = [], []
            # Baseline for the driver-side figure: the same task on node 2,
            # given a ref whose bytes are already on node 2.
            local = make_bytes.options(**on(2)).remote(size)
            ray.wait([local], fetch_local=False)
            base = []
            for _ in range(runs):
                t = time.perf_counter()
                ray.get(length.options(**on(2)).remote(local))
                base.append(time.perf_counter() - t)
            del local
            for r in range(runs + 1):  # the first is a warm-up
                ref = make_bytes.options(**on(1)).remote(size)
                ray.wait([ref], fetch_local=False)
                t = time.perf_counter()
                n, dt = ray.get(timed_get.options(**on(2)).remote([ref]))
                total = time.perf_counter() - t
                assert n == size
                del ref
                if r > 0:
                    in_task.append(dt)
                    e2e.append(total)
                time.sleep(0.2)  # let the freed copies go
            best = min(in_task)
            net = max(min(e2e) - min(base), 1e-9)
            emit(
                bench="transfer", size=size, runs=runs,
                best_s=round(best, 6), median_s=round(statistics.median(in_task), 6),
                gbps=round(size / best / 1e9, 3),
                gbps_median=round(size / statistics.median(in_task) / 1e9, 3),
                e2e_best_s=round(min(e2e), 6), e2e_local_baseline_s=round(min(base), 6),
                gbps_e2e_minus_baseline=round(size / net / 1e9, 3),
            )

    def roundtrip(self):
        n = self.args.rtt_calls
        for node in (2, 1):
            opts = on(node)
            for _ in range(100):
                ray.get(noop.options(**opts).remote())
            lat = []
            for _ in range(n):
                t = time.perf_counter()
                ray.get(noop.options(**opts).remote())
                lat.append(time.perf_counter() - t)
            emit(
                bench="roundtrip", node="remote" if node == 2 else "local",
                calls=n, p50_us=round(pct(lat, 50) * 1e6, 1),
                p99_us=round(pct(lat, 99) * 1e6, 1),
                mean_us=round(statistics.mean(lat) * 1e6, 1),
            )

    def throughput(self):
        a = self.args
        for k in (1, 2, 3):
            opts = [noop.options(**on(i)) for i in range(1, k + 1)]
            ray.get([opts[j % k].remote() for j in range(min(1000, a.tput_tasks))])
            rates = []
            for _ in range(a.tput_runs):
                t = time.perf_counter()
                refs = [opts[j % k].remote() for j in range(a.tput_tasks)]
                ray.get(refs)
                rates.append(a.tput_tasks / (time.perf_counter() - t))
                del refs
            emit(
                bench="throughput", nodes=k, tasks=a.tput_tasks, runs=a.tput_runs,
                tasks_per_s=round(max(rates), 1),
                tasks_per_s_all=[round(r, 1) for r in rates],
            )

    def kill_retry(self):
        results = []
        for r in range(self.args.kill_runs):
            rec = Recorder.options(**on(1)).remote()
            ray.get(rec.get.remote())
            vid = self.node_id(3)
            strat = NodeAffinitySchedulingStrategy(node_id=vid, soft=True)
            ref = victim.options(scheduling_strategy=strat).remote(rec, vid)
            deadline = time.time() + 60
            while not any(s[1] == vid for s in ray.get(rec.get.remote())):
                if time.time() > deadline:
                    raise RuntimeError("the task never started on node 3")
                time.sleep(0.02)
            time.sleep(0.2)
            death = {}
            th = self.watch_death(3, death)
            t_kill, nkilled = self.kill_node(3)
            t_start, node = ray.get(ref, timeout=300)
            assert node != vid, "the retry ran on the killed node"
            th.join(timeout=60)
            rec_out = dict(
                bench="kill_retry", run=r + 1, ray_env=HEALTH_ENV,
                killed_processes=nkilled, kill=self.args.kill,
                kill_to_retry_start_s=round(t_start - t_kill, 3),
                retry_node=next(i for i in (1, 2, 3) if self.node_id(i) == node),
                kill_to_node_dead_s=(
                    round(death["dead_at"] - t_kill, 3) if "dead_at" in death else None
                ),
            )
            emit(**rec_out)
            results.append(rec_out["kill_to_retry_start_s"])
            ray.kill(rec)
            self.replace_node(3)
        emit(
            bench="kill_retry_summary", runs=len(results), ray_env=HEALTH_ENV,
            median_s=round(statistics.median(results), 3),
            min_s=round(min(results), 3), max_s=round(max(results), 3),
        )

    def tree_once(self, kill_at=None):
        a = self.args
        expect = float(sum(range(a.leaves)))
        death = {}
        t = time.perf_counter()
        level = [
            leaf.options(scheduling_strategy="SPREAD").remote(i, a.leaf_ms)
            for i in range(a.leaves)
        ]
        while len(level) > 1:
            nxt = [add.remote(level[j], level[j + 1]) for j in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        killed = None
        if kill_at is not None:
            time.sleep(max(0.0, kill_at - (time.perf_counter() - t)))
            th = self.watch_death(3, death)
            killed, _ = self.kill_node(3)
            killed_rel = time.perf_counter() - t
        out = ray.get(level[0], timeout=600)
        total = time.perf_counter() - t
        assert out[0] == expect and out[-1] == expect, (out[0], expect)
        del out, level
        if kill_at is None:
            return total, None, None
        th.join(timeout=60)
        dead = death["dead_at"] - killed if "dead_at" in death else None
        return total, killed_rel, dead

    def tree_reduce(self):
        a = self.args
        base = []
        for r in range(a.tree_runs + 1):  # the first is a warm-up
            total, _, _ = self.tree_once()
            if r > 0:
                base.append(total)
            time.sleep(0.5)
        med = statistics.median(base)
        emit(
            bench="tree_reduce", kill=False, ray_env=HEALTH_ENV,
            leaves=a.leaves, leaf_bytes=LEAF_ELEMS * 8,
            leaf_ms=a.leaf_ms, runs=len(base), median_s=round(med, 3),
            min_s=round(min(base), 3), all_s=[round(x, 3) for x in base],
        )
        kill_at = med * 0.5
        killed = []
        for r in range(a.tree_kill_runs):
            total, at, dead = self.tree_once(kill_at=kill_at)
            killed.append(total)
            emit(
                bench="tree_reduce", kill=True, run=r + 1, ray_env=HEALTH_ENV, leaves=a.leaves,
                leaf_ms=a.leaf_ms, total_s=round(total, 3), killed_at_s=round(at, 3),
                kill_to_node_dead_s=round(dead, 3) if dead is not None else None,
            )
            self.replace_node(3)
        emit(
            bench="tree_reduce_summary", ray_env=HEALTH_ENV, no_kill_median_s=round(med, 3),
            kill_median_s=round(statistics.median(killed), 3),
            kill_all_s=[round(x, 3) for x in killed],
        )


def spread(self):
    """The burst of the spread case, on every node and on node 1 alone."""
    a = self.args
    names = {self.node_id(i): f"node{i}" for i in (1, 2, 3)}
    for n_tasks, ms in a.burst:
        for k in (1, 3):
            opts = {}
            if k == 1:
                opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(
                    self.node_id(1), soft=False
                )
            ray.get([busy.options(**opts).remote(ms) for _ in range(n_tasks)])  # warm-up
            took, per = [], {}
            for _ in range(a.spread_runs):
                t = time.perf_counter()
                ran = ray.get([busy.options(**opts).remote(ms) for _ in range(n_tasks)])
                took.append(time.perf_counter() - t)
                per = {}
                for node in ran:
                    per[names.get(node, node)] = per.get(names.get(node, node), 0) + 1
            ideal = -(-n_tasks // k) * ms / 1000
            emit(
                bench="spread", nodes=k, tasks=n_tasks, task_ms=ms, runs=len(took),
                median_s=round(statistics.median(took), 3), min_s=round(min(took), 3),
                ideal_s=ideal, median_over_ideal=round(statistics.median(took) / ideal, 2),
                all_s=[round(x, 3) for x in took],
                last_run_tasks_per_node=dict(sorted(per.items())),
            )


Bench.spread = spread

CASES = ("transfer", "roundtrip", "throughput", "spread", "tree_reduce", "kill_retry")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(CASES), help="comma-separated cases")
    ap.add_argument("--quick", action="store_true", help="small counts, for a smoke test")
    ap.add_argument("--cpus-per-node", type=int, default=1)
    ap.add_argument("--store-gib", type=int, default=3, help="object store per node")
    ap.add_argument("--sizes", default="1MiB,64MiB,1GiB")
    ap.add_argument("--transfer-runs", type=int, default=5)
    ap.add_argument("--transfer-runs-1g", type=int, default=3)
    ap.add_argument("--rtt-calls", type=int, default=1000)
    ap.add_argument("--tput-tasks", type=int, default=10000)
    ap.add_argument("--tput-runs", type=int, default=2)
    ap.add_argument("--kill-runs", type=int, default=3)
    ap.add_argument("--kill", choices=("node", "raylet"), default="node",
                    help="SIGKILL every process of the node (default) or only its raylet")
    ap.add_argument("--leaves", type=int, default=64)
    ap.add_argument("--leaf-ms", type=int, default=100)
    ap.add_argument("--tree-runs", type=int, default=3)
    ap.add_argument("--tree-kill-runs", type=int, default=2)
    ap.add_argument("--burst", default="12x500,24x250,300x10",
                    help="bursts of the spread case: TASKSxMS,...")
    ap.add_argument("--spread-runs", type=int, default=3)
    args = ap.parse_args()
    args.burst = [tuple(int(v) for v in b.split("x")) for b in args.burst.split(",")]
    if args.quick:
        args.sizes = "1MiB,64MiB"
        args.transfer_runs = 2
        args.rtt_calls = 100
        args.tput_tasks = 1000
        args.tput_runs = 1
        args.kill_runs = 1
        args.tree_runs = 1
        args.tree_kill_runs = 1
        args.burst = [(12, 200)]
        args.spread_runs = 1
    only = [c for c in args.only.split(",") if c]
    for c in only:
        if c not in CASES:
            ap.error(f"unknown case {c!r} (cases: {', '.join(CASES)})")
    b = Bench(args)
    try:
        for c in CASES:
            if c in only:
                t = time.perf_counter()
                log(f"{c} ...")
                getattr(b, c)()
                log(f"{c} took {time.perf_counter() - t:.1f} s")
    finally:
        b.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
