"""A forwarded burst, two `wray` binaries alternating (issue 40): node 1
has no accelerator, node 2 `{"accelerator": 64}` (one CPU each), so every
task of `cluster_spread TASKS 0` forwards; per round and binary, tasks/s of
three bursts after a warm-up, and in the first round the syscalls per task
of the owner and of the runner (`strace -c -f` attached during one burst;
the tables go to strace-{owner,runner}-{old,new}.txt in the current
directory). Stdlib only; needs strace and etcd.

    python3 bench/cluster/forward_syscalls.py OLD_WRAY NEW_WRAY api.wasm ROUNDS TASKS
"""
import os, sys, subprocess, time, json, tempfile, re
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wray_cluster as wc

old, new, wasm, rounds, tasks = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
tmp = tempfile.mkdtemp(prefix="fwdprof")
os.environ["TMPDIR"] = os.path.join(tmp, "tmp"); os.makedirs(os.environ["TMPDIR"])
class A: pass
a = A(); a.wray = old; a.wasm = wasm; a.tmp = tmp; a.start_args = []
w = wc.Wray(a)
w.token_file = os.path.join(tmp, "cluster-token")
open(w.token_file, "w").write(os.urandom(32).hex()); os.chmod(w.token_file, 0o600)
w.start_etcd()

def strace_count(pid, secs_fn):
    out = os.path.join(tmp, f"strace-{pid}-{time.time()}")
    p = subprocess.Popen(["strace", "-c", "-f", "-q", "-o", out, "-p", str(pid)])
    time.sleep(1.0)
    secs_fn()
    p.send_signal(2); p.wait()
    calls = 0
    for line in open(out):
        m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(\d+)?\s*(\w+)", line)
        if m and m.group(3) != "total":
            calls += int(m.group(1))
    return calls, open(out).read()

try:
    for r in range(rounds):
        for label, binary in (("old", old), ("new", new)):
            w.wray = binary
            nodes = w.cluster([None, {"accelerator": 64}])
            try:
                w.job(nodes[0], "cluster_spread", 1000, 0)
                rates = []
                for _ in range(3):
                    _, _, secs, _ = w.job(nodes[0], "cluster_spread", tasks, 0)
                    rates.append(tasks / secs)
                res = {}
                def run():
                    res["secs"] = w.job(nodes[0], "cluster_spread", tasks, 0)[2]
                if r == 0:
                    calls, text = strace_count(nodes[0].pid, run)
                    res["owner_syscalls_per_task"] = round(calls / tasks, 1)
                    open(f"strace-owner-{label}.txt", "w").write(text)
                    calls, text = strace_count(nodes[1].pid, run)
                    res["runner_syscalls_per_task"] = round(calls / tasks, 1)
                    open(f"strace-runner-{label}.txt", "w").write(text)
                print(json.dumps(dict(round=r, binary=label, tasks=tasks,
                                      tasks_per_s=[round(x) for x in rates],
                                      median=round(sorted(rates)[1]), **{k: v for k, v in res.items() if k != "secs"})), flush=True)
            finally:
                w.stop_nodes(nodes)
finally:
    w.shutdown()
