#!/usr/bin/env bash
# Issue 37's check on a machine with more cores (the 16-core device
# machine): one node of 4 CPUs, then four nodes of 4 CPUs on one etcd,
# each running a burst of one-CPU 1 ms tasks from one driver; prints the
# `scale` JSON lines of wray_cluster.py (tasks per second, and the ratio
# of four nodes to one; the aim is at least 0.8 x 4). Then issue 40's:
# the `nested` lines, tasks submitted from tasks on every node (four
# tasks spread over the nodes, each submitting 5,000 trivial ones from
# where it runs), one node of 4 CPUs against four (the aim: at least 3x).
#
#   bench/cluster/scale16.sh DIR
#
# DIR holds what the machine cannot build or install (it has no network):
# `wray` (a stripped release binary), `api.wasm` (the test-programs guest)
# and `etcd` (Debian's /usr/bin/etcd). Make it here with
#   mkdir -p carry && cp ~/.cache/wray/target/release/wray carry/ && strip carry/wray \
#     && cp ~/.cache/wray/target/wasm/api.wasm /usr/bin/etcd carry/
# and carry it (`run` with carry: ["carry"]). Needs python3 (stdlib only).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="$(cd "${1:?usage: scale16.sh DIR}" && pwd)"
export WRAY_BIN="$DIR/wray" WRAY_WASM_DIR="$DIR" ETCD_BIN="$DIR/etcd"
echo "scale16.sh: $(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB" >&2
exec bash "$HERE/wray_cluster.sh" --only scale,nested --scale-nodes 4 --scale-cpus 4 \
    --scale-tasks 20000 --scale-ms 1 --scale-runs 3 \
    --nested-nodes 4 --nested-cpus 4 --nested-tasks 5000 --nested-runs 3
