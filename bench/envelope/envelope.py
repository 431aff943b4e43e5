"""wray's side of the scalability envelope (see README.md in this folder);
run by run.sh, which copies the `wray` binary and `envelope.wasm` aside
first. Stdlib only.

    python3 envelope.py --wray BIN --wasm envelope.wasm --tmp DIR [--quick] [--only DIM,...]

Each dimension tries its sizes in increasing order, each within a time and
a memory bound, and stops at the first that fails; it prints one JSON line
(`"bench": "envelope"`, `"system": "wray"`): the target (Ray's published
figure), the largest size reached, its time, the peak RSS where known, the
error of the size that failed (if one did), the bound, and every size
tried (`sizes`). The drivers are the `envelope` guest's `main` (one size
each); the single-node dimensions run as `wray run --num-cpus 2`, the
cluster ones (`nodes`, `broadcast`) on `wray start` nodes on one etcd
through bench/cluster/wray_cluster.py. Progress goes to stderr.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cluster"))
from wray_cluster import Wray, alive  # noqa: E402

MiB = 1 << 20
TICK = os.sysconf("SC_CLK_TCK")


def log(*a):
    print("envelope:", *a, file=sys.stderr, flush=True)


def emit(**rec):
    print(json.dumps({"bench": "envelope", "system": "wray", **rec}), flush=True)


# ---------------------------------------------------------------- /proc


def rss_mib(pid):
    """Resident set of `pid` in MiB (VmRSS), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_s(pid):
    """CPU seconds (user + system) `pid` has used, or None once gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return None


def tree_pids(root):
    """`root` and every process below it (from /proc's parent pids)."""
    children = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(pid))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def run_bounded(cmd, seconds, rss_bound_mib, env=None, tree=False):
    """Runs `cmd`, killed past `seconds` or past `rss_bound_mib` of RSS (of
    the process, or with `tree` of it and every process below it, sampled
    every 50 ms; 0.5 s with `tree`): (exit code, stdout, stderr, wall
    seconds, peak RSS MiB (the kernel's ru_maxrss, or with `tree` the
    largest sampled sum), why it was killed or None)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL, env=env)
    out, err = [], []
    readers = [threading.Thread(target=lambda s=s, b=b: b.append(s.read()), daemon=True)
               for s, b in ((p.stdout, out), (p.stderr, err))]
    for r in readers:
        r.start()
    killed = None
    tree_peak = 0.0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if tree:
            rss = sum(rss_mib(x) or 0 for x in tree_pids(p.pid))
            tree_peak = max(tree_peak, rss)
        else:
            rss = rss_mib(p.pid) or 0
        if killed is None and rss > rss_bound_mib:
            killed = f"killed: RSS {rss:.0f} MiB past the bound of {rss_bound_mib} MiB"
            p.kill()
        if killed is None and time.perf_counter() - t0 > seconds:
            killed = f"killed: past the time bound of {seconds} s"
            p.kill()
        time.sleep(0.5 if tree else 0.05)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    for r in readers:
        r.join(10)
    peak = tree_peak if tree else ru.ru_maxrss / 1024
    return p.returncode, "".join(out), "".join(err), wall, peak, killed


def guest_line(stdout):
    """The envelope guest's JSON line in `stdout`, or None."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{") and '"dimension"' in line:
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def short(text, n=600):
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + " ..."


# ---------------------------------------------------------------- dimensions

# Ray's published figures (release/benchmarks/README.md in Ray's repository).
PUBLISHED = {
    "nodes": "250+ nodes",
    "actors": "10k+ actors",
    "running": "10k+ simultaneously running tasks",
    "broadcast": "1 GiB to 50+ nodes",
    "args": "10k+ object args to a task",
    "returns": "3k+ objects returned by a task",
    "get": "10k+ objects in one get",
    "queued": "1M+ tasks queued",
    "large": "get of a 100 GiB object",
    "placement_groups": "1k+ placement groups",
}

# Single-node dimensions: (target, full sizes, quick sizes, time bound s,
# extra `wray run` flags).
# A node's instances (`--max-instances`, 1,000 by default) bound both its
# live actors and its tasks blocked at once (each keeps its instance); the
# budget of reserved linear memory (`--guest-memory`) must fit 10,100 of
# the envelope guest's (under 4 MiB each).
MANY_INSTANCES = ["--max-instances", "10100", "--max-actors", "10050",
                  "--guest-memory", str(10_100 * 4)]
ONE_NODE = {
    "actors": (10_000, [1_000, 10_000], [100], 300, MANY_INSTANCES),
    "running": (10_000, [990, 2_000, 10_000], [200], 300, MANY_INSTANCES),
    "args": (10_000, [1_000, 10_000], [100], 120, []),
    "returns": (3_000, [100, 3_000], [100], 120, []),
    "get": (10_000, [1_000, 10_000], [100], 120, []),
    # A node queues at most 2^20 pending tasks (`--max-pending-tasks`),
    # the driver and the gate's two among them.
    "queued": (1_000_000, [100_000, 1_000_000], [10_000], 400, []),
    # MiB; the store is smaller than the object, so it spills. A wasm32
    # Vec holds under 2 GiB: 2,047 MiB is the largest a guest can put.
    "large": (100 * 1024, [256, 1_024, 2_047, 3_072], [64], 300,
              ["--object-store-memory", "{store}"]),
}

CLUSTER = ("nodes", "broadcast", "actors")
ALL = ("nodes", "actors", "running", "broadcast", "args", "returns", "get", "queued", "large",
       "placement_groups")


class Envelope:
    def __init__(self, args):
        self.a = args
        self.w = Wray(args)
        self.w.token_file = os.path.join(args.tmp, "cluster-token")
        with open(self.w.token_file, "w") as f:
            f.write(os.urandom(32).hex())
        os.chmod(self.w.token_file, 0o600)
        self.etcd_started = False

    # ------------------------------------------------------------ one node

    def wray_run(self, dim, guest_args, seconds, flags=()):
        spill = os.path.join(self.a.tmp, "spill")
        flags = [f.format(store=self.a.large_store_mib) for f in flags]
        if "--object-store-memory" in flags:
            flags += ["--spill-dir", spill]
        cmd = [self.a.wray, "run", "--quiet", "--num-cpus", "2", *flags, self.a.wasm, "--",
               dim, *[str(x) for x in guest_args]]
        rc, out, err, wall, peak, killed = run_bounded(cmd, seconds, self.a.rss_bound_mib)
        line = guest_line(out) or {}
        rec = {"n": guest_args[0], "wall_s": round(wall, 3), "peak_rss_mib": round(peak, 1)}
        if "seconds" in line:
            rec["seconds"] = round(line["seconds"], 4)
        for k, v in line.items():
            if k not in ("dimension", "n", "seconds", "error"):
                rec[k] = round(v, 4) if isinstance(v, float) else v
        if killed or rc != 0 or "error" in line or "seconds" not in line:
            rec["error"] = short(killed or line.get("error") or f"exit {rc}: {err or out}")
        return rec

    def ladder(self, dim, target, sizes, seconds, flags, unit=None, extra=None):
        tried, reached = [], None
        for n in sizes:
            args = [n] + ([extra(n)] if extra else [])
            t = time.perf_counter()
            rec = self.wray_run(dim, args, seconds, flags)
            log(f"{dim} {n}: {time.perf_counter() - t:.1f} s {json.dumps(rec)[:300]}")
            tried.append(rec)
            if "error" in rec:
                break
            reached = rec
        out = dict(dimension=dim, target=target, published=PUBLISHED[dim],
                   reached=reached["n"] if reached else 0,
                   seconds=reached.get("seconds") if reached else None,
                   peak_rss_mib=reached.get("peak_rss_mib") if reached else None,
                   bound={"seconds": seconds, "rss_mib": self.a.rss_bound_mib},
                   sizes=tried)
        if unit:
            out["unit"] = unit
        if tried and "error" in tried[-1]:
            out["error"] = tried[-1]["error"]
            out["failed_at"] = tried[-1]["n"]
        return out

    def one_node(self, dim):
        target, full, quick, seconds, flags = ONE_NODE[dim]
        sizes = quick if self.a.quick else full
        extra = None
        unit = None
        if dim == "running":
            extra = lambda n: int(seconds * 1000 * 0.8)  # noqa: E731 - the gate's deadline
        if dim == "large":
            unit = "MiB"
            if self.a.quick:
                self.a.large_store_mib = min(self.a.large_store_mib, 32)
        rec = self.ladder(dim, target, sizes, seconds, flags, unit=unit, extra=extra)
        if dim == "queued" and rec["sizes"]:
            base = self.baseline_rss()
            for s in rec["sizes"]:
                if "error" not in s:
                    s["kib_per_queued_task"] = round((s["peak_rss_mib"] - base) * 1024 / s["n"], 3)
            rec["baseline_rss_mib"] = base
            if rec["reached"]:
                rec["kib_per_queued_task"] = [s for s in rec["sizes"]
                                              if s["n"] == rec["reached"]][0]["kib_per_queued_task"]
        if dim == "large":
            rec["store_mib"] = self.a.large_store_mib
        return rec

    def baseline_rss(self):
        """Peak RSS of a `wray run` whose driver runs one trivial task."""
        rec = self.wray_run("local", [1], 60)
        return rec["peak_rss_mib"]

    # ------------------------------------------------------------ cluster

    def etcd(self):
        if not self.etcd_started:
            self.w.start_etcd()
            self.etcd_started = True

    def etcd_metrics(self):
        """Counters from etcd's /metrics that say how much it is written
        to: raft proposals committed, keys put, lease keep-alive messages,
        all gRPC messages received."""
        with urllib.request.urlopen(self.w.etcd_url + "/metrics", timeout=10) as r:
            text = r.read().decode()
        out = {"proposals": 0.0, "puts": 0.0, "keepalives": 0.0, "grpc_msgs": 0.0}
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            try:
                name, value = line.rsplit(" ", 1)
                value = float(value)
            except ValueError:
                continue
            if name == "etcd_server_proposals_committed_total":
                out["proposals"] = value
            elif name == "etcd_mvcc_put_total":
                out["puts"] = value
            elif name.startswith("grpc_server_msg_received_total"):
                out["grpc_msgs"] += value
                if 'grpc_method="LeaseKeepAlive"' in name:
                    out["keepalives"] += value
        return out

    def start_nodes(self, cluster, first, count, store_mib, par=4, resources=None):
        """`count` nodes of one CPU, node i with {"node<i>": 1} (and
        `resources`), started `par` at a time."""
        def one(i):
            return self.w.start_node(f"node{i}", cluster, {f"node{i}": 1, **(resources or {})}, 1,
                                     extra=["--object-store-memory", str(store_mib)])
        with ThreadPoolExecutor(par) as ex:
            nodes = list(ex.map(one, range(first, first + count)))
        return nodes

    def wait_members(self, nodes, deadline_s):
        """Seconds until every node of `nodes` lists len(nodes) ALIVE."""
        t0 = time.perf_counter()
        pending = list(nodes)
        want = len(nodes)
        while pending:
            still = []
            for n in pending:
                try:
                    seen = sum(1 for x in n.get("/v1/nodes", timeout=30) if x["state"] == "ALIVE")
                except (OSError, ValueError):
                    seen = -1
                if seen != want:
                    still.append(n)
            pending = still
            if pending:
                if time.perf_counter() - t0 > deadline_s:
                    raise RuntimeError(f"{len(pending)} of {want} nodes do not list {want} ALIVE "
                                       f"after {deadline_s} s")
                time.sleep(0.2)
        return time.perf_counter() - t0

    def stop_all(self, nodes):
        with ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda n: self.w.stop_nodes([n]), nodes))

    def job(self, node, *args, timeout=600):
        _, _, secs, out = self.w.job(node, *args, timeout=timeout, component="envelope")
        line = guest_line("\n".join(out)) or {}
        return secs, line

    def at_rest(self, nodes, window):
        """etcd writes per second and each node's CPU share and RSS over
        `window` seconds with no work."""
        m0 = self.etcd_metrics()
        c0 = {n.pid: cpu_s(n.pid) for n in nodes}
        t0 = time.perf_counter()
        time.sleep(window)
        m1 = self.etcd_metrics()
        c1 = {n.pid: cpu_s(n.pid) for n in nodes}
        dt = time.perf_counter() - t0
        cpu = [(c1[p] - c0[p]) / dt * 100 for p in c0 if c0[p] is not None and c1[p] is not None]
        rss = [r for r in (rss_mib(n.pid) for n in nodes) if r is not None]
        etcd_cpu = None
        return {
            "window_s": round(dt, 2),
            "etcd_proposals_per_s": round((m1["proposals"] - m0["proposals"]) / dt, 1),
            "etcd_puts_per_s": round((m1["puts"] - m0["puts"]) / dt, 1),
            "etcd_keepalives_per_s": round((m1["keepalives"] - m0["keepalives"]) / dt, 1),
            "etcd_grpc_msgs_per_s": round((m1["grpc_msgs"] - m0["grpc_msgs"]) / dt, 1),
            "etcd_rss_mib": round(rss_mib(self.w.etcd.pid) or 0, 1),
            "node_cpu_pct_mean": round(sum(cpu) / len(cpu), 3) if cpu else etcd_cpu,
            "node_cpu_pct_max": round(max(cpu), 3) if cpu else None,
            "node_rss_mib_mean": round(sum(rss) / len(rss), 1) if rss else None,
            "node_rss_mib_max": round(max(rss), 1) if rss else None,
        }

    def death(self, nodes, victim):
        """SIGKILLs `victim`; seconds until node 1 and a middle node list
        it as not ALIVE."""
        watchers = [nodes[0], nodes[len(nodes) // 2]]
        t0 = time.perf_counter()
        os.kill(victim.pid, signal.SIGKILL)
        victim.killed = True
        seen = {}
        while len(seen) < len(watchers) and time.perf_counter() - t0 < 60:
            for w in watchers:
                if w.name in seen:
                    continue
                try:
                    rows = w.get("/v1/nodes")
                except (OSError, ValueError):
                    continue
                row = [x for x in rows if x.get("node_id") == victim.node_id]
                if not row or row[0]["state"] != "ALIVE":
                    seen[w.name] = round(time.perf_counter() - t0, 3)
            time.sleep(0.05)
        if len(seen) < len(watchers):
            raise RuntimeError(f"killed node still ALIVE after 60 s at {watchers}")
        return max(seen.values())

    def nodes(self):
        """N `wray start` nodes on one etcd, grown in steps (50, 100, 250):
        membership, death, rest, and a trivial workload at each step."""
        a = self.a
        self.etcd()
        steps = a.node_steps
        cluster = "envelope-nodes"
        nodes, tried, reached, error = [], [], None, None
        deployed = False
        try:
            for n in steps:
                t0 = time.perf_counter()
                rec = {"n": n}
                try:
                    nodes += self.start_nodes(cluster, len(nodes) + 1, n - len(nodes), a.node_store_mib)
                    rec["start_s"] = round(time.perf_counter() - t0, 2)
                    self.wait_members(nodes, a.settle_deadline)
                    rec["settle_s"] = round(time.perf_counter() - t0, 2)
                    if not deployed:
                        self.w.cli("deploy", "--node", str(nodes[0].pid), a.wasm)
                        deployed = True
                    rec["at_rest"] = self.at_rest(nodes, a.rest_window)
                    secs, line = self.job(nodes[0], "pinned", n, a.pinned_k)
                    rec["one_driver"] = {"tasks": n * a.pinned_k, "job_s": secs,
                                         "tasks_per_s": round(line.get("tasks_per_s", 0), 1)}
                    drivers = nodes[: min(n, a.many_drivers)]
                    t1 = time.perf_counter()
                    with ThreadPoolExecutor(len(drivers)) as ex:
                        done = list(ex.map(lambda d: self.job(d, "local", a.local_k), drivers))
                    took = time.perf_counter() - t1
                    rec["many_drivers"] = {"drivers": len(drivers), "tasks": len(drivers) * a.local_k,
                                           "wall_s": round(took, 2),
                                           "tasks_per_s": round(len(drivers) * a.local_k / took, 1),
                                           "job_s_max": max(s for s, _ in done)}
                    victim = nodes.pop()
                    rec["death_seen_s"] = self.death(nodes + [victim], victim)
                    nodes += self.start_nodes(cluster, len(nodes) + 1, 1, a.node_store_mib)
                    self.wait_members(nodes, a.settle_deadline)
                    rec["seconds"] = round(time.perf_counter() - t0, 2)
                    rec["peak_rss_mib"] = rec["at_rest"]["node_rss_mib_max"]
                except Exception as e:  # noqa: BLE001 - recorded, the ladder stops
                    rec["error"] = short(str(e), 1000)
                log(f"nodes {n}: {json.dumps(rec)}")
                tried.append(rec)
                if "error" in rec:
                    error = rec
                    break
                reached = rec
        finally:
            self.stop_all([x for x in nodes if not x.killed])
        rest = [s["at_rest"] for s in tried if "at_rest" in s]
        growth = None
        if len(rest) >= 2 and rest[0]["node_cpu_pct_mean"]:
            growth = round(rest[-1]["node_cpu_pct_mean"] / rest[0]["node_cpu_pct_mean"], 2)
        out = dict(dimension="nodes", target=250, published=PUBLISHED["nodes"],
                   reached=reached["n"] if reached else 0,
                   seconds=reached.get("settle_s") if reached else None,
                   peak_rss_mib=reached.get("peak_rss_mib") if reached else None,
                   bound={"settle_s": a.settle_deadline, "per_node": "--num-cpus 1, "
                          f"--object-store-memory {a.node_store_mib}, lease 4 s, heartbeat 500 ms"},
                   per_node_cpu_at_rest_growth=growth,
                   per_node_cpu_at_rest_growth_of_n=(round(tried[len(rest) - 1]["n"] / tried[0]["n"], 2)
                                                     if len(rest) >= 2 else None),
                   sizes=tried)
        if error:
            out["error"] = error["error"]
            out["failed_at"] = error["n"]
        return out

    def broadcast(self):
        """One object of --bcast-mib MiB read by a task on each of N nodes."""
        a = self.a
        self.etcd()
        tried, reached = [], None
        for i, n in enumerate(a.bcast_nodes):
            rec = {"n": n, "mib": a.bcast_mib}
            nodes = []
            try:
                nodes = self.start_nodes(f"envelope-bcast{i}", 1, n, a.bcast_mib * 2 + 64)
                self.wait_members(nodes, a.settle_deadline)
                self.w.cli("deploy", "--node", str(nodes[0].pid), a.wasm)
                secs, line = self.job(nodes[0], "broadcast", n, a.bcast_mib, timeout=a.bcast_seconds)
                if "error" in line or "broadcast_s" not in line:
                    raise RuntimeError(line.get("error") or f"no result: {line}")
                rec["seconds"] = round(line["broadcast_s"], 3)
                rec["job_s"] = secs
                rec["gbps_total"] = round(n * a.bcast_mib * MiB / line["broadcast_s"] / 1e9, 3)
                rss = [rss_mib(x.pid) or 0 for x in nodes]
                rec["peak_rss_mib"] = round(max(rss), 1)
            except Exception as e:  # noqa: BLE001 - recorded, the ladder stops
                rec["error"] = short(str(e), 1000)
            finally:
                self.stop_all(nodes)
            log(f"broadcast {n}: {json.dumps(rec)}")
            tried.append(rec)
            if "error" in rec:
                break
            reached = rec
        out = dict(dimension="broadcast", target=50, published=PUBLISHED["broadcast"],
                   reached=reached["n"] if reached else 0, unit=f"nodes reading {a.bcast_mib} MiB",
                   seconds=reached.get("seconds") if reached else None,
                   peak_rss_mib=reached.get("peak_rss_mib") if reached else None,
                   bound={"seconds": a.bcast_seconds}, sizes=tried)
        if tried and "error" in tried[-1]:
            out["error"] = tried[-1]["error"]
            out["failed_at"] = tried[-1]["n"]
        return out

    def actors(self):
        """Actors on one node (`wray run`, up to its live-actor bound), then
        across a cluster of --actor-nodes nodes, each with {"slot": S} (S
        below a node's live-actor bound), every actor asking for one slot,
        so the default placement moves them on as nodes fill. First a
        probe: --actor-probe actors placed SPREAD, asking for nothing."""
        a = self.a
        one = self.one_node_actors()
        self.etcd()
        tried, reached = [], None
        for n in a.actor_counts:
            rec = {"n": n, "where": f"{a.actor_nodes} nodes, each {{\"slot\": {a.actor_slots}}}"}
            nodes = []
            try:
                nodes = self.start_nodes(f"envelope-actors{n}", 1, a.actor_nodes, a.node_store_mib,
                                         resources={"slot": a.actor_slots})
                self.wait_members(nodes, a.settle_deadline)
                self.w.cli("deploy", "--node", str(nodes[0].pid), a.wasm)
                _, probe = self.job(nodes[0], "actors", a.actor_probe, "spread")
                rec["spread_probe"] = {"n": a.actor_probe, "error": probe.get("error"),
                                       "actors_per_node": sorted(probe.get("per_node", {}).values(),
                                                                 reverse=True)}
                rss0 = sum(rss_mib(x.pid) or 0 for x in nodes)
                peak = [0.0]
                stop = threading.Event()

                def sample():
                    while True:
                        peak[0] = max(peak[0], sum(rss_mib(x.pid) or 0 for x in nodes))
                        if stop.wait(0.1):
                            return

                th = threading.Thread(target=sample, daemon=True)
                th.start()
                try:
                    secs, line = self.job(nodes[0], "actors", n, "slot", timeout=a.actor_seconds)
                finally:
                    stop.set()
                    th.join()
                if "error" in line or "seconds" not in line:
                    raise RuntimeError(line.get("error") or f"no result: {line}")
                rec["seconds"] = round(line["seconds"], 3)
                rec["job_s"] = secs
                rec["peak_rss_mib"] = round(peak[0], 1)
                rec["rss_mib_per_actor"] = round((peak[0] - rss0) / n, 4)
                rec["actors_per_node"] = sorted(line.get("per_node", {}).values(), reverse=True)
            except Exception as e:  # noqa: BLE001 - recorded, the ladder stops
                rec["error"] = short(str(e), 1000)
                # Where the unfinished work is: each node's queued, running
                # and blocked tasks and live actors (its /metrics).
                rec["nodes_at_error"] = [self.node_counts(x) for x in nodes]
            finally:
                self.stop_all(nodes)
            log(f"actors {n}: {json.dumps(rec)[:400]}")
            tried.append(rec)
            if "error" in rec:
                break
            reached = rec
        if reached is None and one.get("reached"):
            # Nothing passed across the cluster: the one node's figure.
            reached = {"n": one["reached"], "seconds": one.get("seconds"),
                       "peak_rss_mib": one.get("peak_rss_mib"), "where": "one node"}
        out = dict(dimension="actors", target=10_000, published=PUBLISHED["actors"],
                   reached=reached["n"] if reached else 0,
                   where=reached.get("where") if reached else None,
                   seconds=reached.get("seconds") if reached else None,
                   peak_rss_mib=reached.get("peak_rss_mib") if reached else None,
                   bound={"seconds": a.actor_seconds, "nodes": a.actor_nodes},
                   one_node=one, sizes=tried)
        if tried and "error" in tried[-1]:
            out["error"] = tried[-1]["error"]
            out["failed_at"] = tried[-1]["n"]
        return out

    def node_counts(self, node):
        """`wray_tasks` by state (those not finished) and `wray_actors_live`
        from `node`'s /metrics, or the error reading them."""
        req = urllib.request.Request(node.url + "/metrics",
                                     headers={"Authorization": "Bearer " + node.token})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                text = r.read().decode()
        except OSError as e:
            return {"node": node.name, "error": str(e)}
        out = {"node": node.name}
        for line in text.splitlines():
            for key, prefix in (("queued", 'wray_tasks{state="QUEUED"}'),
                                ("running", 'wray_tasks{state="RUNNING"}'),
                                ("blocked", 'wray_tasks{state="BLOCKED"}'),
                                ("actors_live", "wray_actors_live ")):
                if line.startswith(prefix):
                    out[key] = int(float(line.split()[-1]))
        return out

    def one_node_actors(self):
        """The actors ladder on one `wray run` node; its bound's error is
        kept as `bound_error`, not as the dimension's error."""
        target, full, quick, seconds, flags = ONE_NODE["actors"]
        rec = self.ladder("actors", target, quick if self.a.quick else full, seconds, flags)
        if "error" in rec:
            rec["bound_error"] = rec.pop("error")
        for k in ("dimension", "target", "published"):
            rec.pop(k, None)
        return rec

    def placement_groups(self):
        return dict(dimension="placement_groups", target=1000, published=PUBLISHED["placement_groups"],
                    reached=None, seconds=None, supported=False,
                    note="wray has no placement groups (no gang reservation of resources "
                         "across nodes); not measured")

    def run(self, dim):
        if dim in ONE_NODE and dim not in CLUSTER:
            return self.one_node(dim)
        return getattr(self, dim)()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wray", required=True)
    ap.add_argument("--wasm", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=",".join(ALL))
    ap.add_argument("--rss-bound-mib", type=int, default=8192,
                    help="a size whose process passes this RSS is killed (single-node dimensions)")
    ap.add_argument("--large-store-mib", type=int, default=512,
                    help="object store of the large-object dimension (objects past it spill)")
    ap.add_argument("--node-steps", default="50,100,250")
    ap.add_argument("--node-store-mib", type=int, default=16)
    ap.add_argument("--settle-deadline", type=float, default=180)
    ap.add_argument("--rest-window", type=float, default=5)
    ap.add_argument("--pinned-k", type=int, default=20, help="trivial tasks per node, one driver")
    ap.add_argument("--many-drivers", type=int, default=16)
    ap.add_argument("--local-k", type=int, default=1000, help="trivial tasks per driver")
    ap.add_argument("--bcast-nodes", default="4,16")
    ap.add_argument("--bcast-mib", type=int, default=256)
    ap.add_argument("--bcast-seconds", type=int, default=300)
    ap.add_argument("--actor-nodes", type=int, default=12)
    ap.add_argument("--actor-counts", default="3000,10000")
    ap.add_argument("--actor-slots", type=int, default=900, help="actors a node may hold")
    ap.add_argument("--actor-probe", type=int, default=300, help="actors of the SPREAD probe")
    ap.add_argument("--actor-seconds", type=int, default=120)
    ap.add_argument("--start-arg", dest="start_args", action="append", default=[])
    args = ap.parse_args()
    if args.quick:
        args.node_steps = "8"
        args.rest_window = 2
        args.pinned_k = 5
        args.many_drivers = 4
        args.local_k = 100
        args.bcast_nodes = "3"
        args.bcast_mib = 8
        args.actor_nodes = 3
        args.actor_counts = "300"
        args.actor_slots = 120
        args.actor_probe = 30
    args.actor_counts = [int(x) for x in args.actor_counts.split(",")]
    args.node_steps = [int(x) for x in args.node_steps.split(",")]
    args.bcast_nodes = [int(x) for x in args.bcast_nodes.split(",")]
    only = [d for d in args.only.split(",") if d]
    for d in only:
        if d not in ALL:
            ap.error(f"unknown dimension {d!r} (known: {', '.join(ALL)})")
    os.environ["TMPDIR"] = os.path.join(args.tmp, "tmp")
    os.makedirs(os.environ["TMPDIR"], exist_ok=True)
    e = Envelope(args)
    status = 0
    try:
        for d in ALL:
            if d not in only:
                continue
            t = time.perf_counter()
            log(f"{d} ...")
            try:
                rec = e.run(d)
            except Exception as ex:  # noqa: BLE001 - report, go on
                rec = dict(dimension=d, target=None, reached=0, error=short(str(ex), 2000))
                status = 1
            rec["dimension_s"] = round(time.perf_counter() - t, 1)
            emit(**rec)
            log(f"{d} took {rec['dimension_s']} s")
    finally:
        e.w.shutdown()
    return status


if __name__ == "__main__":
    sys.exit(main())
