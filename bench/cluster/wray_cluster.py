"""wray's side of the cluster benchmark (see README.md in this folder); run
by wray_cluster.sh, which copies the `wray` binary and `api.wasm` aside
first. Stdlib only.

    python3 wray_cluster.py --wray BIN --wasm api.wasm --tmp DIR [--quick] [--only transfer,...]

One etcd (Debian's `etcd`, free loopback ports, its own data dir under
--tmp) for the whole run; for each case a fresh set of `wray start` nodes
on it (a cluster name of their own, so a dead node of an earlier case is
not seen), `api.wasm` deployed on node 1, driven through `wray job submit`
and the HTTP API. Node directories go under --tmp (TMPDIR is set to it, so
nothing here touches /tmp/wray). Cases, one JSON line each on stdout
("system": "wray"), with the same "bench" names as ray_cluster.py:

  transfer    `api` scenario `cluster_bytes MIB` on node 1 (no accelerator):
              the guest puts MIB MiB in node 1's store and calls
              `digest_on_accelerator` on it, which needs {"accelerator": 1}:
              it is forwarded to node 2, which pulls the bytes (4 MiB chunks)
              into its own store, then runs the digest. From the task tables
              (GET /v1/tasks): the forwarded task's run_ms at the owner
              (node 1) less queued_ms + run_ms of the same task on node 2 =
              the transfer (plus the run-task request and the answer).
  roundtrip   sequential POST {node1}/v1/functions/api/accelerated (forwarded
              to node 2) over one keep-alive HTTP connection; and
              api/cpu_ids (runs on node 1) for scale.
  throughput  `cluster_spread N 0` (N trivial accelerator tasks) on node 1,
              with the accelerator on k = 1, 2, 3 nodes.
  spread      `cluster_burst N MS` (N one-CPU tasks of MS ms) on node 1 of
              one node and of three, each `--num-cpus 1`: the burst's time
              against the ideal (ceil(N / nodes) x MS), where the tasks
              ran, and the tasks moved from a queue to a node with room.
  scale       `cluster_burst N MS` of short one-CPU tasks on one node of C
              CPUs, then on --scale-nodes such nodes: tasks per second, and
              the ratio (not run by default: `--only scale`, for a machine
              with the cores; bench/cluster/scale16.sh).
  nested      `cluster_nested K M` on node 1: K tasks spread over the
              nodes, each submitting M trivial one-CPU tasks from where it
              runs (their owner) and waiting for them; on one node of C
              CPUs, then on K such nodes: tasks per second, the ratio, and
              each node's forwarded and taken tasks (not run by default:
              `--only nested`; bench/cluster/scale16.sh runs it too).
  kill_retry  `cluster_spread 8 3000` on node 1, nodes 2 and 3 with
              {"accelerator": 8}; the node running the tasks (all 8 land on
              one) is SIGKILLed ~1 s in (--kill-runs), or SIGSTOPped (a hung
              node: only the etcd lease tells; --stop-runs); time from the
              signal to the first retried task running on the other node,
              and the job must still succeed.
  tree_reduce `cluster_tree_reduce 64 100 131072` on node 1 (no
              accelerator), nodes 2 and 3 with {"accelerator": 4}: 64
              leaves (100 ms, then 1 MiB of f64 each) summed pairwise by
              tasks that also ask for an accelerator; the guest's time from
              the first submit to the root's get. With no kill (--tree-runs,
              after a warm-up), and with the node holding the most of the
              job's unfinished tasks SIGKILLed at half the no-kill median
              (--tree-kill-runs, a fresh cluster each); the result must be
              exact.

Progress goes to stderr.
"""

import argparse
import http.client
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import pct  # noqa: E402

MiB = 1 << 20


def log(*a):
    print("wray_cluster:", *a, file=sys.stderr, flush=True)


def emit(**rec):
    print(json.dumps({"system": "wray", **rec}), flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Node:
    def __init__(self, wray, pid, url, name, resources):
        self.wray = wray
        self.pid = pid
        self.url = url
        self.name = name  # "node1", ...
        self.resources = resources
        self.dir = os.path.join(os.environ["TMPDIR"], "wray", f"node-{pid}")
        with open(os.path.join(self.dir, "token")) as f:
            self.token = f.read().strip()
        with open(os.path.join(self.dir, "node.json")) as f:
            self.node_id = json.load(f)["node_id"]
        self.killed = False

    def get(self, path, timeout=10):
        req = urllib.request.Request(
            self.url + path, headers={"Authorization": "Bearer " + self.token}
        )
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)

    def tasks(self):
        """Every row of this node's own task table (GET /v1/tasks?local=true:
        a task it sent to another node named by that node), oldest first, a
        page of 1000 at a time."""
        out, after = [], None
        while True:
            q = "?limit=1000&local=true&order=oldest" + (f"&after={after}" if after else "")
            d = self.get("/v1/tasks" + q)
            out += d["tasks"]
            after = d.get("next")
            if not after:
                return out

    def log_path(self):
        return os.path.join(self.dir, "node.log")


class Wray:
    def __init__(self, args):
        self.args = args
        self.wray = args.wray
        self.wasm = args.wasm
        self.tmp = args.tmp
        self.pidfile = os.path.join(self.tmp, "pids")
        self.etcd = None
        self.nodes = []
        self.clusters = 0

    def remember(self, pid):
        with open(self.pidfile, "a") as f:
            f.write(f"{pid}\n")

    # ------------------------------------------------------------ etcd

    def start_etcd(self):
        cport, pport = free_port(), free_port()
        data = os.path.join(self.tmp, "etcd-data")
        self.etcd_url = f"http://127.0.0.1:{cport}"
        peer = f"http://127.0.0.1:{pport}"
        logf = open(os.path.join(self.tmp, "etcd.log"), "w")
        self.etcd = subprocess.Popen(
            [os.environ.get("ETCD_BIN", "etcd"), "--name", "wray-bench", "--data-dir", data,
             "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"wray-bench={peer}"],
            stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        self.remember(self.etcd.pid)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.etcd_url + "/health", timeout=1) as r:
                    if json.load(r).get("health") == "true":
                        log(f"etcd {self.etcd_url} (pid {self.etcd.pid})")
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise RuntimeError("etcd did not come up; see etcd.log")

    def stop_etcd(self):
        if self.etcd and self.etcd.poll() is None:
            self.etcd.terminate()
            try:
                self.etcd.wait(10)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait()

    # ------------------------------------------------------------ nodes

    def cli(self, *a, timeout=600, check=True):
        r = subprocess.run([self.wray, *a], capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"wray {' '.join(a)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
        return r

    def start_node(self, name, cluster, resources=None, cpus=1, extra=()):
        """`wray start` a node of `cluster` (`extra`: more `wray start`
        arguments, after --start-arg's); the Node, recorded."""
        a = ["start", "--port", "0", "--num-cpus", str(cpus), "--etcd", self.etcd_url,
             "--cluster", cluster, "--cluster-token-file", self.token_file,
             "--lease-ttl", "4", "--heartbeat-ms", "500"]
        if resources:
            a += ["--resources", json.dumps(resources)]
        a += self.args.start_args
        a += list(extra)
        r = self.cli(*a)
        m = re.search(r"wray node started: (\S+) \(process (\d+)\)", r.stdout)
        if not m:
            raise RuntimeError(f"wray start: no url/pid in {r.stdout!r}")
        pid = int(m.group(2))
        self.remember(pid)
        node = Node(self.wray, pid, m.group(1), name, resources or {})
        self.nodes.append(node)
        return node

    def cluster(self, layout, cpus=1):
        """Fresh nodes of `cpus` CPUs each: layout is a list of resource
        dicts (node 1 first); api.wasm deployed on node 1; waits until
        every node sees all."""
        self.clusters += 1
        name = f"bench{self.clusters}"
        nodes = [self.start_node(f"node{i + 1}", name, res, cpus) for i, res in enumerate(layout)]
        deadline = time.time() + 30
        while True:
            seen = [sum(1 for n in x.get("/v1/nodes") if n["state"] == "ALIVE") for x in nodes]
            if all(s == len(nodes) for s in seen):
                break
            if time.time() > deadline:
                raise RuntimeError(f"nodes see {seen} of {len(nodes)}")
            time.sleep(0.1)
        self.cli("deploy", "--node", str(nodes[0].pid), self.wasm)
        log(f"cluster {name}: " + ", ".join(f"{n.name}=pid {n.pid} {n.resources or ''}" for n in nodes))
        return nodes

    def stop_nodes(self, nodes):
        for n in nodes:
            if n.killed or not alive(n.pid):
                continue
            t = time.time()
            r = self.cli("stop", "--node", str(n.pid), "--timeout", "30", check=False)
            while alive(n.pid) and time.time() - t < 15:
                time.sleep(0.05)
            if r.returncode != 0 or alive(n.pid):
                log(f"wray stop {n.pid} (exit {r.returncode}, {time.time() - t:.1f} s): "
                    f"{r.stdout}{r.stderr}; SIGKILL")
                try:
                    os.kill(n.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for n in nodes:
            if n in self.nodes:
                self.nodes.remove(n)

    def shutdown(self):
        self.stop_nodes(list(self.nodes))
        self.stop_etcd()

    # ------------------------------------------------------------ jobs

    def job(self, node, *args, timeout=600, component="api"):
        """`wray job submit` of `component` on node, waiting for the end:
        (job id, status, seconds as the job reports them, its log lines)."""
        r = self.cli("job", "submit", "--node", str(node.pid), component, "--",
                     *[str(x) for x in args], timeout=timeout, check=False)
        m = re.search(r"job ([0-9a-f]+) (\w+) in ([\d.]+) s", r.stdout)
        if not m:
            raise RuntimeError(f"job {args}: {r.returncode}\n{r.stdout}{r.stderr}")
        out = [line for line in r.stdout.splitlines() if not line.startswith("job ")]
        if m.group(2) != "SUCCEEDED":
            raise RuntimeError(f"job {args} {m.group(2)}:\n{r.stdout}{r.stderr}")
        return m.group(1), m.group(2), float(m.group(3)), out

    # ------------------------------------------------------------ cases

    def transfer(self):
        a = self.args
        n1, n2 = self.cluster([None, {"accelerator": 2}])
        try:
            for mib in a.sizes:
                runs = a.transfer_runs if mib < 1024 else a.transfer_runs_1g
                base_runs = runs if mib < 1024 else max(1, runs - 1)
                # The same scenario all on node 2 (it has the accelerator):
                # no transfer; the digest task's run_ms there is the baseline.
                local, local_jobs = [], []
                for r in range(base_runs + 1):
                    jid, _, secs, out = self.job(n2, "cluster_bytes", mib)
                    assert out and out[-1].endswith("match") and "differ" not in out[-1], out
                    row = self.row(n2, jid, "digest_on_accelerator")
                    if r > 0:
                        local.append(row["run_ms"])
                        local_jobs.append(secs)
                xfer, fwd, remote_run, jobs = [], [], [], []
                for r in range(runs + 1):  # the first is a warm-up
                    jid, _, secs, out = self.job(n1, "cluster_bytes", mib)
                    assert out and out[-1].endswith("match"), out
                    own = self.row(n1, jid, "digest_on_accelerator")
                    ran = self.row(n2, jid, "digest_on_accelerator")
                    assert own["node_id"] == n2.node_id, own  # forwarded to node 2
                    t = (own["run_ms"] - ran["queued_ms"] - ran["run_ms"]) / 1000
                    if r > 0:
                        xfer.append(t)
                        fwd.append(own["run_ms"] / 1000)
                        remote_run.append(ran["run_ms"] / 1000)
                        jobs.append(secs)
                    log(f"transfer {mib} MiB run {r}: owner {own['run_ms']:.1f} ms, "
                        f"node 2 queued {ran['queued_ms']:.2f} + ran {ran['run_ms']:.1f} ms, job {secs} s")
                size = mib * MiB
                best = min(xfer)
                med = statistics.median(xfer)
                net = max(min(fwd) - min(local) / 1000, 1e-9)
                emit(
                    bench="transfer", size=size, runs=runs,
                    best_s=round(best, 6), median_s=round(med, 6),
                    gbps=round(size / best / 1e9, 3), gbps_median=round(size / med / 1e9, 3),
                    forwarded_task_best_s=round(min(fwd), 6),
                    digest_on_node2_best_s=round(min(remote_run), 6),
                    local_digest_best_s=round(min(local) / 1000, 6),
                    gbps_forwarded_minus_local=round(size / net / 1e9, 3),
                    job_remote_best_s=min(jobs), job_local_best_s=min(local_jobs),
                    all_s=[round(x, 6) for x in xfer],
                )
        finally:
            self.stop_nodes([n1, n2])

    def row(self, node, job_id, function):
        rows = [t for t in node.tasks()
                if t["task_id"].startswith(job_id) and t["function"] == function]
        if len(rows) != 1:
            raise RuntimeError(f"{node.name}: {len(rows)} rows of {function} for job {job_id}")
        return rows[0]

    def roundtrip(self):
        n = self.args.rtt_calls
        n1, n2 = self.cluster([None, {"accelerator": 2}])
        try:
            host, port = n1.url.split("//")[1].split(":")
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            headers = {"Authorization": "Bearer " + n1.token,
                       "Content-Type": "application/json"}

            def call(fn):
                conn.request("POST", f"/v1/functions/api/{fn}", body=b"[]", headers=headers)
                r = conn.getresponse()
                body = r.read()
                if r.status != 200:
                    raise RuntimeError(f"{fn}: {r.status} {body[:200]!r}")
                return body

            assert b"accelerator" in call("accelerated")
            for fn, where in (("accelerated", "remote"), ("cpu_ids", "local")):
                for _ in range(100):
                    call(fn)
                lat = []
                for _ in range(n):
                    t = time.perf_counter()
                    call(fn)
                    lat.append(time.perf_counter() - t)
                # The owner's view of the same calls: queued_ms + run_ms of
                # each task in node 1's table (for a forwarded one: sent to
                # node 2, run there, the answer back; no HTTP).
                rows = [t for t in n1.tasks() if t["function"] == fn][-n:]
                srv = [(t["queued_ms"] or 0) + (t["run_ms"] or 0) for t in rows]
                ran_on = {t["node_id"] for t in rows}
                emit(
                    bench="roundtrip", node=where, function=f"api/{fn}", calls=n,
                    p50_us=round(pct(lat, 50) * 1e6, 1), p99_us=round(pct(lat, 99) * 1e6, 1),
                    mean_us=round(statistics.mean(lat) * 1e6, 1),
                    task_table_p50_us=round(pct(srv, 50) * 1e3, 1),
                    task_table_p99_us=round(pct(srv, 99) * 1e3, 1),
                    forwarded=(n2.node_id in ran_on),
                )
            conn.close()
        finally:
            self.stop_nodes([n1, n2])

    def throughput(self):
        a = self.args
        layouts = [
            # Ray's case: tasks over nodes 1..k, each node running one at a
            # time (Ray: num_cpus=1 per node, one CPU per task): here node
            # i has {"accelerator": 1} and each task asks for one.
            ("one_per_node", lambda k: [{"accelerator": 1}] * k),
            # Every task forwarded: node 1 (the driver) has none, k others
            # have 64 (not the limit).
            ("forwarded", lambda k: [None] + [{"accelerator": 64}] * k),
        ]
        for layout, make in layouts:
            for k in (1, 2, 3):
                nodes = self.cluster(make(k))
                try:
                    self.job(nodes[0], "cluster_spread", min(1000, a.tput_tasks), 0)
                    rates, last = [], None
                    for _ in range(a.tput_runs):
                        jid, _, secs, out = self.job(nodes[0], "cluster_spread", a.tput_tasks, 0)
                        assert out[-1] == f"cluster_spread {a.tput_tasks * (a.tput_tasks - 1) // 2}", out
                        rates.append(a.tput_tasks / secs)
                        last = jid
                    # Where the last run's tasks ran (node 1's table: a
                    # forwarded task names the node it was sent to).
                    ids = {n.node_id: n.name for n in nodes}
                    per = {}
                    for t in nodes[0].tasks():
                        if t["task_id"].startswith(last) and t["function"] == "slow_on_accelerator":
                            w = ids.get(t["node_id"], "node1")
                            per[w] = per.get(w, 0) + 1
                    emit(
                        bench="throughput", layout=layout, nodes=k,
                        total_nodes=len(nodes), tasks=a.tput_tasks, runs=a.tput_runs,
                        tasks_per_s=round(max(rates), 1),
                        tasks_per_s_all=[round(r, 1) for r in rates],
                        last_run_tasks_per_node=dict(sorted(per.items())),
                    )
                finally:
                    self.stop_nodes(nodes)

    def kill_retry(self):
        a = self.args
        for how, runs in (("SIGKILL", a.kill_runs), ("SIGSTOP", a.stop_runs)):
            results = []
            for r in range(runs):
                n1, n2, n3 = self.cluster([None, {"accelerator": 8}, {"accelerator": 8}])
                try:
                    results.append(self.kill_once(r + 1, n1, n2, n3, how))
                finally:
                    self.stop_nodes([n1, n2, n3])
            if not results:
                continue
            emit(
                bench="kill_retry_summary", signal=how, runs=len(results),
                median_s=round(statistics.median(x["kill_to_retry_start_s"] for x in results), 3),
                min_s=round(min(x["kill_to_retry_start_s"] for x in results), 3),
                max_s=round(max(x["kill_to_retry_start_s"] for x in results), 3),
                median_retry_logged_s=round(statistics.median(x["kill_to_retry_logged_s"] for x in results), 3),
            )

    def kill_once(self, run, n1, n2, n3, how):
        a = self.args
        proc = subprocess.Popen(
            [self.wray, "job", "submit", "--node", str(n1.pid), "api", "--",
             "cluster_spread", "8", "3000"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        t_submit = time.time()
        # Which of nodes 2, 3 runs the tasks (the placement puts them where
        # most CPU is free: often all 8 on one node)?
        victim = None
        deadline = t_submit + 20
        while victim is None:
            if time.time() > deadline or proc.poll() is not None:
                if proc.poll() is None:
                    proc.kill()
                out, err = proc.communicate()
                raise RuntimeError(f"no task started on node 2 or 3: job said {out}{err}; "
                                   f"node 1's tasks: {n1.tasks()[-3:]}")
            for n in (n2, n3):
                if any(t["state"] == "RUNNING" and t["function"] == "slow_on_accelerator"
                       for t in n.tasks()):
                    victim = n
                    break
            time.sleep(0.02)
        other = n3 if victim is n2 else n2
        running = {n.name: sum(1 for t in n.tasks() if t["state"] == "RUNNING"
                               and t["function"] == "slow_on_accelerator") for n in (n2, n3)}
        time.sleep(max(0.0, a.kill_after - (time.time() - t_submit)))
        before = {t["task_id"] for t in other.tasks()}
        t_kill = time.time()
        # SIGKILL: the process is gone, the kernel closes its connections.
        # SIGSTOP: a node that hangs (or a machine cut off): its connections
        # stay open, its heartbeats stop; only the lease tells. Killed
        # for good once the job has ended.
        os.kill(victim.pid, signal.SIGKILL if how == "SIGKILL" else signal.SIGSTOP)
        victim.killed = True
        # Poll: the surviving node's task table (a task id it had not before
        # the kill, RUNNING: a retried one; it started run_ms before the poll)
        # and node 1's view of the victim (DEAD).
        started = dead_at = None
        deadline = t_kill + 60
        while (started is None or dead_at is None) and time.time() < deadline:
            now = time.time()
            if started is None:
                for t in other.tasks():
                    if t["task_id"] not in before and t["function"] == "slow_on_accelerator" \
                            and t["run_ms"] is not None:
                        started = now - t["run_ms"] / 1000
                        break
            if dead_at is None:
                for x in n1.get("/v1/nodes"):
                    if x["node_id"] == victim.node_id and x["state"] == "DEAD":
                        dead_at = now
            time.sleep(0.02)
        try:
            out, err = proc.communicate(timeout=120)
        finally:
            if how != "SIGKILL":
                os.kill(victim.pid, signal.SIGKILL)
        m = re.search(r"job ([0-9a-f]+) (\w+) in ([\d.]+) s", out)
        ids = {n.node_id for n in (n1, n2, n3)}
        if not m or m.group(2) != "SUCCEEDED" or "cluster_spread 28" not in out:
            raise RuntimeError(f"kill_retry job: {out}{err}")
        # node 1's log: one warn line per retried task, RFC 3339 UTC times.
        retries = []
        with open(n1.log_path()) as f:
            for line in f:
                if "retrying a task elsewhere" in line:
                    ts = line.split()[0]
                    retries.append(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp())
                    why = line.split("retrying a task elsewhere: ", 1)[1].strip()
        if not retries:
            raise RuntimeError("no `retrying a task elsewhere` in node 1's log")
        # Where the 8 ended (the survivors' tables, each the tasks it ran).
        per_node = {}
        for n in (n1, other):
            per_node[n.name] = sum(
                1 for t in n.tasks()
                if t["task_id"].startswith(m.group(1)) and t["state"] == "FINISHED"
                and t["function"] == "slow_on_accelerator" and t["node_id"] == n.node_id)
        rec = dict(
            bench="kill_retry", run=run, signal=how, killed_processes=1, kill="node",
            victim=victim.name, running_at_kill=running, killed_at_s=round(t_kill - t_submit, 3),
            kill_to_retry_start_s=round(started - t_kill, 3) if started else None,
            kill_to_retry_logged_s=round(min(retries) - t_kill, 3),
            retries=len(retries), retry_reason=why,
            kill_to_node_dead_s=round(dead_at - t_kill, 3) if dead_at else None,
            job_status=m.group(2), job_s=float(m.group(3)), job_result=out.strip().splitlines()[-2]
            if len(out.strip().splitlines()) > 1 else out.strip(),
            tasks_finished_per_node=per_node,
        )
        emit(**rec)
        return rec

    # ------------------------------------------------------------ spread

    def spread(self):
        """A burst of one-CPU tasks from one driver on one node and on
        three (each `--num-cpus 1`): the time the burst took as the guest
        measures it (first submit to last get) and where the tasks ran."""
        a = self.args
        for k in (1, 3):
            nodes = self.cluster([None] * k)
            try:
                names = {n.node_id: n.name for n in nodes}
                for n_tasks, ms in a.burst:
                    self.job(nodes[0], "cluster_burst", n_tasks, ms)  # warm-up
                    took, per = [], {}
                    for _ in range(a.spread_runs):
                        _, _, _, out = self.job(nodes[0], "cluster_burst", n_tasks, ms)
                        line = next(x for x in out if x.startswith("burst "))
                        took.append(int(line.split()[2]) / 1000)
                        per = {}
                        for x in out:
                            if x.startswith("ran "):
                                _, node, count = x.split()
                                per[names.get(node, node)] = int(count)
                    ideal = -(-n_tasks // k) * ms / 1000
                    emit(
                        bench="spread", nodes=k, tasks=n_tasks, task_ms=ms, runs=len(took),
                        median_s=round(statistics.median(took), 3), min_s=round(min(took), 3),
                        ideal_s=ideal, median_over_ideal=round(statistics.median(took) / ideal, 2),
                        all_s=[round(x, 3) for x in took],
                        last_run_tasks_per_node=dict(sorted(per.items())),
                        moved=sum(self.metric(n, "wray_cluster_tasks_moved_total") or 0
                                  for n in nodes),
                    )
            finally:
                self.stop_nodes(nodes)

    def wordcount(self):
        """The README's word count as a job over a working directory
        (`wray job submit --working-dir CORPUS wordcount -- .`) on one
        node and on three (each `--num-cpus 1`): the job's time as it
        reports it, its total (the same on both), and where its map tasks
        (`count_words`) ran, as the driver's node lists them."""
        a = self.args
        if not a.wordcount_wasm or not os.path.isfile(a.wordcount_wasm):
            log(f"wordcount: no word count component ({a.wordcount_wasm}); skipped")
            return
        if not os.path.isdir(a.wordcount_corpus):
            log(f"wordcount: no corpus directory {a.wordcount_corpus}; skipped")
            return
        totals = set()
        for k in (1, 3):
            nodes = self.cluster([None] * k)
            try:
                self.cli("deploy", "--node", str(nodes[0].pid), a.wordcount_wasm)
                names = {n.node_id: n.name for n in nodes}
                took, per = [], {}
                for run in range(a.wordcount_runs + 1):  # the first is a warm-up
                    r = self.cli("job", "submit", "--node", str(nodes[0].pid), "--working-dir",
                                 a.wordcount_corpus,
                                 "wordcount", "--", ".", check=False)
                    m = re.search(r"job ([0-9a-f]+) (\w+) in ([\d.]+) s", r.stdout)
                    if not m or m.group(2) != "SUCCEEDED":
                        raise RuntimeError(f"wordcount: {r.returncode}\n{r.stdout}{r.stderr}")
                    total = re.search(r"^total\t(\d+)", r.stdout, re.M)
                    totals.add(total and int(total.group(1)))
                    if run == 0:
                        continue
                    took.append(float(m.group(3)))
                    per = {}
                    for t in nodes[0].tasks():
                        if t["task_id"].startswith(m.group(1)) and t["function"] == "count_words":
                            where = names.get(t.get("node_id"), t.get("node_id"))
                            per[where] = per.get(where, 0) + 1
                maps = sum(per.values())
                emit(
                    bench="wordcount", nodes=k, runs=len(took),
                    median_s=round(statistics.median(took), 3), all_s=took,
                    map_tasks=maps, last_run_maps_per_node=dict(sorted(per.items())),
                    least_share=round(min(per.get(n.name, 0) for n in nodes) / max(1, maps), 2),
                    totals=sorted(t for t in totals if t is not None),
                )
            finally:
                self.stop_nodes(nodes)
        if len(totals) != 1:
            raise RuntimeError(f"wordcount: totals differ between runs: {totals}")

    def scale(self):
        """Many short one-CPU tasks from one driver: one node of C CPUs,
        then N such nodes (issue 37's check on a 16-core machine: four
        nodes of four CPUs at no less than 0.8 x 4 of one node's rate)."""
        a = self.args
        rates = {}
        for k in (1, a.scale_nodes):
            nodes = self.cluster([None] * k, cpus=a.scale_cpus)
            try:
                names = {n.node_id: n.name for n in nodes}
                self.job(nodes[0], "cluster_burst", min(1000, a.scale_tasks), a.scale_ms)
                took, per = [], {}
                for _ in range(a.scale_runs):
                    _, _, _, out = self.job(nodes[0], "cluster_burst", a.scale_tasks, a.scale_ms)
                    line = next(x for x in out if x.startswith("burst "))
                    took.append(int(line.split()[2]) / 1000)
                    per = {}
                    for x in out:
                        if x.startswith("ran "):
                            _, node, count = x.split()
                            per[names.get(node, node)] = int(count)
                rates[k] = a.scale_tasks / statistics.median(took)
                emit(
                    bench="scale", nodes=k, cpus_per_node=a.scale_cpus, tasks=a.scale_tasks,
                    task_ms=a.scale_ms, runs=len(took),
                    tasks_per_s=round(rates[k], 1),
                    all_s=[round(x, 3) for x in took],
                    last_run_tasks_per_node=dict(sorted(per.items())),
                    over_one_node=round(rates[k] / rates[1], 2) if k > 1 else None,
                )
            finally:
                self.stop_nodes(nodes)

    def nested(self):
        """Tasks submitted from tasks on every node: `cluster_nested K M`
        from a driver on node 1 (K tasks spread over the nodes, each
        submitting M trivial one-CPU tasks from where it runs and waiting
        for them), on one node of C CPUs, then on K such nodes: the K x M
        tasks per second, where they ran and what each node forwarded and
        took (issue 40: on four nodes at no less than 3x one node)."""
        a = self.args
        k_fans = a.nested_nodes
        rates = {}
        for k in (1, a.nested_nodes):
            nodes = self.cluster([None] * k, cpus=a.nested_cpus)
            try:
                names = {n.node_id: n.name for n in nodes}
                self.job(nodes[0], "cluster_nested", k_fans, min(500, a.nested_tasks))
                took, per, fans = [], {}, {}
                for _ in range(a.nested_runs):
                    _, _, _, out = self.job(nodes[0], "cluster_nested", k_fans, a.nested_tasks)
                    line = next(x for x in out if x.startswith("nested "))
                    took.append(int(line.split()[3]) / 1000)
                    per, fans = {}, {}
                    for x in out:
                        if x.startswith("ran "):
                            _, node, count = x.split()
                            per[names.get(node, node)] = int(count)
                        elif x.startswith("fan "):
                            name = names.get(x.split()[1], x.split()[1])
                            fans[name] = fans.get(name, 0) + 1
                total = k_fans * a.nested_tasks
                rates[k] = total / statistics.median(took)
                emit(
                    bench="nested", nodes=k, cpus_per_node=a.nested_cpus, fans=k_fans,
                    tasks_per_fan=a.nested_tasks, runs=len(took),
                    tasks_per_s=round(rates[k], 1), all_s=[round(x, 3) for x in took],
                    last_run_fans_per_node=dict(sorted(fans.items())),
                    last_run_tasks_per_node=dict(sorted(per.items())),
                    forwarded={n.name: self.metric(n, "wray_cluster_tasks_forwarded_total")
                               for n in nodes},
                    taken={n.name: self.metric(n, "wray_cluster_tasks_taken_total")
                           for n in nodes},
                    over_one_node=round(rates[k] / rates[1], 2) if k > 1 else None,
                )
            finally:
                self.stop_nodes(nodes)

    def metric(self, node, name):
        req = urllib.request.Request(
            node.url + "/metrics", headers={"Authorization": "Bearer " + node.token})
        with urllib.request.urlopen(req, timeout=10) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return int(float(line.split()[1]))
        return None

    # ------------------------------------------------------------ tree reduce

    def tree_layout(self):
        slots = {"accelerator": self.args.tree_slots}
        return [None, slots, slots]

    def tree_job_args(self):
        a = self.args
        return ("cluster_tree_reduce", a.leaves, a.leaf_ms, a.leaf_len)

    def tree_result(self, out):
        """The guest's time (s) from its first submit to the root's get,
        after checking that its sum is exact."""
        line = next((x for x in out if x.startswith("tree_reduce len")), "")
        if not line.endswith(" exact"):
            raise RuntimeError(f"tree_reduce: not exact: {out}")
        ms = next(x for x in out if x.startswith("tree_reduce_ms "))
        return int(ms.split()[1]) / 1000, line

    def tree_placement(self, nodes, job_id):
        """Where the job's tasks ran, from node 1's table (the node of the
        last attempt for a forwarded task; the record's key still says
        first_attempt, as the runs recorded before)."""
        ids = {n.node_id: n.name for n in nodes}
        per = {}
        for t in nodes[0].tasks():
            if t["task_id"].startswith(job_id) and t["function"] in ("reduce_leaf", "reduce_add"):
                w = ids.get(t["node_id"], "node1")
                per[w] = per.get(w, 0) + 1
        return dict(sorted(per.items()))

    def retried(self, node):
        return self.metric(node, "wray_cluster_tasks_retried_total")

    def tree_reduce(self):
        a = self.args
        base, placement = [], None
        nodes = self.cluster(self.tree_layout())
        try:
            for r in range(a.tree_runs + 1):  # the first is a warm-up
                jid, _, secs, out = self.job(nodes[0], *self.tree_job_args())
                took, line = self.tree_result(out)
                log(f"tree_reduce run {r}: {took:.3f} s (job {secs} s): {line}")
                if r > 0:
                    base.append(took)
                    placement = self.tree_placement(nodes, jid)
        finally:
            self.stop_nodes(nodes)
        med = statistics.median(base)
        emit(
            bench="tree_reduce", kill=False, leaves=a.leaves, leaf_bytes=a.leaf_len * 8,
            leaf_ms=a.leaf_ms, layout=self.tree_layout(), runs=len(base),
            median_s=round(med, 3), min_s=round(min(base), 3),
            all_s=[round(x, 3) for x in base], last_run_tasks_per_node=placement,
        )
        kill_at = med * 0.5
        killed = []
        for r in range(a.tree_kill_runs):
            nodes = self.cluster(self.tree_layout())
            try:
                # The same warm-up as the no-kill runs had.
                self.job(nodes[0], *self.tree_job_args())
                killed.append(self.tree_kill_once(r + 1, nodes, kill_at))
            finally:
                self.stop_nodes(nodes)
        emit(
            bench="tree_reduce_summary", no_kill_median_s=round(med, 3),
            kill_median_s=round(statistics.median(x["total_s"] for x in killed), 3),
            kill_all_s=[x["total_s"] for x in killed],
            ratio_kill_over_no_kill=round(statistics.median(x["total_s"] for x in killed) / med, 2),
            retried_all=[x["retried"] for x in killed],
        )

    def tree_kill_once(self, run, nodes, kill_at):
        n1, n2, n3 = nodes
        before = self.retried(n1) or 0
        leaves_done = lambda n: sum(  # noqa: E731
            1 for t in n.tasks() if t["function"] == "reduce_leaf" and t["state"] == "FINISHED")
        done_before = {n.name: leaves_done(n) for n in (n2, n3)}
        args = [str(x) for x in self.tree_job_args()]
        proc = subprocess.Popen(
            [self.wray, "job", "submit", "--node", str(n1.pid), "api", "--", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        t_submit = time.time()
        time.sleep(max(0.0, kill_at - (time.time() - t_submit)))
        # The node holding the most of the job's unfinished tasks (running
        # or queued there): the placement queues a burst on one of them.
        pending = {}
        for n in (n2, n3):
            pending[n.name] = sum(
                1 for t in n.tasks()
                if t["function"] in ("reduce_leaf", "reduce_add") and t["state"] != "FINISHED")
        victim = n2 if pending[n2.name] >= pending[n3.name] else n3
        finished_there = leaves_done(victim) - done_before[victim.name]
        t_kill = time.time()
        os.kill(victim.pid, signal.SIGKILL)
        victim.killed = True
        out, err = proc.communicate(timeout=600)
        m = re.search(r"job ([0-9a-f]+) (\w+) in ([\d.]+) s", out)
        if not m or m.group(2) != "SUCCEEDED":
            raise RuntimeError(f"tree_reduce with a kill: {out}{err}")
        lines = [x for x in out.splitlines() if not x.startswith("job ")]
        took, line = self.tree_result(lines)
        retried = (self.retried(n1) or 0) - before
        # Leaves run to the end twice: those the victim finished before
        # the kill and its survivor ran too (a result already at its owner
        # is never rebuilt; one whose answer the kill cut off is).
        survivor = n3 if victim is n2 else n2
        on_survivor = leaves_done(survivor) - done_before[survivor.name]
        twice = max(0, on_survivor + finished_there - self.args.leaves)
        rec = dict(
            bench="tree_reduce", kill=True, run=run, leaves=self.args.leaves,
            leaf_ms=self.args.leaf_ms, total_s=round(took, 3), job_s=float(m.group(3)),
            killed_at_s=round(t_kill - t_submit, 3), victim=victim.name,
            unfinished_at_kill=pending, leaves_finished_on_victim=finished_there,
            retried=retried, leaves_on_survivor=on_survivor, leaves_run_twice=twice,
            tasks_per_node_first_attempt=self.tree_placement(nodes, m.group(1)),
        )
        log(f"tree_reduce kill run {run}: {took:.3f} s, {victim.name} killed at "
            f"{rec['killed_at_s']} s, {retried} retried: {line}")
        emit(**rec)
        return rec


CASES = ("transfer", "roundtrip", "throughput", "spread", "wordcount", "tree_reduce", "kill_retry",
         "scale", "nested")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--wray", required=True)
    ap.add_argument("--wasm", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--only", default=",".join(c for c in CASES if c not in ("scale", "nested")))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default="1,64,1024", help="MiB")
    ap.add_argument("--transfer-runs", type=int, default=5)
    ap.add_argument("--transfer-runs-1g", type=int, default=3)
    ap.add_argument("--rtt-calls", type=int, default=1000)
    ap.add_argument("--tput-tasks", type=int, default=10000)
    ap.add_argument("--tput-runs", type=int, default=2)
    ap.add_argument("--kill-runs", type=int, default=3)
    ap.add_argument("--stop-runs", type=int, default=2, help="runs with SIGSTOP instead")
    ap.add_argument("--kill-after", type=float, default=1.0, help="seconds after the submit")
    ap.add_argument("--leaves", type=int, default=64)
    ap.add_argument("--leaf-ms", type=int, default=100)
    ap.add_argument("--leaf-len", type=int, default=131072, help="f64s a leaf (1 MiB)")
    ap.add_argument("--tree-slots", type=int, default=4,
                    help="accelerators of nodes 2 and 3 (tasks at once each)")
    ap.add_argument("--tree-runs", type=int, default=3)
    ap.add_argument("--tree-kill-runs", type=int, default=2)
    ap.add_argument("--burst", default="12x500,24x250,300x10",
                    help="bursts of the spread case: TASKSxMS,...")
    ap.add_argument("--spread-runs", type=int, default=3)
    ap.add_argument("--wordcount-wasm", default="", help="the word count component (wordcount case)")
    ap.add_argument("--wordcount-corpus", default="/usr/lib/rustlib/src/rust/library",
                    help="the word count's working directory")
    ap.add_argument("--wordcount-runs", type=int, default=3)
    ap.add_argument("--scale-nodes", type=int, default=4, help="nodes of the scale case")
    ap.add_argument("--scale-cpus", type=int, default=4, help="CPUs of each node there")
    ap.add_argument("--scale-tasks", type=int, default=20000)
    ap.add_argument("--scale-ms", type=int, default=1, help="each task's sleep")
    ap.add_argument("--scale-runs", type=int, default=3)
    ap.add_argument("--nested-nodes", type=int, default=3,
                    help="nodes of the nested case, and tasks the driver submits")
    ap.add_argument("--nested-cpus", type=int, default=1, help="CPUs of each node there")
    ap.add_argument("--nested-tasks", type=int, default=2000, help="tasks each of those submits")
    ap.add_argument("--nested-runs", type=int, default=3)
    ap.add_argument("--start-arg", dest="start_args", action="append", default=[],
                    help="extra `wray start` argument (repeatable)")
    args = ap.parse_args()
    args.sizes = [int(x) for x in args.sizes.split(",")]
    args.burst = [tuple(int(v) for v in b.split("x")) for b in args.burst.split(",")]
    if args.quick:
        args.burst = [(12, 200)]
        args.spread_runs = 1
        args.wordcount_runs = 1
        args.scale_tasks = 500
        args.scale_runs = 1
        args.nested_tasks = 200
        args.nested_runs = 1
        args.sizes = [1, 64]
        args.transfer_runs = 2
        args.rtt_calls = 100
        args.tput_tasks = 1000
        args.tput_runs = 1
        args.kill_runs = 1
        args.stop_runs = 1
        args.tree_runs = 1
        args.tree_kill_runs = 1
    only = [c for c in args.only.split(",") if c]
    for c in only:
        if c not in CASES:
            ap.error(f"unknown case {c!r}")
    os.environ["TMPDIR"] = os.path.join(args.tmp, "tmp")
    os.makedirs(os.environ["TMPDIR"], exist_ok=True)
    w = Wray(args)
    w.token_file = os.path.join(args.tmp, "cluster-token")
    with open(w.token_file, "w") as f:
        f.write(os.urandom(32).hex())
    os.chmod(w.token_file, 0o600)
    status = 0
    try:
        w.start_etcd()
        for c in CASES:
            if c in only:
                t = time.perf_counter()
                log(f"{c} ...")
                try:
                    getattr(w, c)()
                except Exception as e:  # noqa: BLE001 - report, go on
                    log(f"{c} FAILED: {e}")
                    emit(bench=c, error=str(e)[:2000])
                    status = 1
                log(f"{c} took {time.perf_counter() - t:.1f} s")
    finally:
        w.shutdown()
    return status


if __name__ == "__main__":
    sys.exit(main())
