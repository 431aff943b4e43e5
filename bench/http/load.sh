#!/usr/bin/env bash
# The issue's load test: about a million requests (`--requests N`, default
# 1,000,000) to a trivial function of a `wray start` node over HTTP with
# keep-alive (wrk, 64 connections), counting the answers by status (no 5xx
# but 503 may appear) and the node's RSS before and after (flat memory).
#
#   bash bench/http/load.sh [REQUESTS]
set -euo pipefail
requests=${1:-1000000}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
wasm=${WRAY_WASM_DIR:-$target/wasm}
wray=$target/release/wray
tmp=$(mktemp -d)
export TMPDIR=$tmp
cleanup() { "$wray" stop >/dev/null 2>&1 || true; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$wray" start --port "$port" --no-auth --num-cpus 2 >/dev/null
"$wray" deploy "$wasm/microbench.wasm" --name mb >/dev/null
pid=$(python3 -c "import json; print(json.load(open('$tmp/wray/node_latest/node.json'))['pid'])")
url="http://127.0.0.1:$port/v1/functions/mb/noop"
rss() { awk '/VmRSS/ { print $2 }' "/proc/$pid/status"; }
# Warm: instances, pooling slots, the allocator's arenas.
wrk -t2 -c64 -d5s -s "$root/bench/http/load.lua" "$url" >/dev/null
before=$(rss)
# Rate from a short run, then a run long enough for the requests asked for.
rate=$(wrk -t2 -c64 -d5s -s "$root/bench/http/load.lua" "$url" | awk '/Requests\/sec/ { print int($2) }')
secs=$(( requests / (rate > 0 ? rate : 1) + 1 ))
echo "== $requests requests at about $rate /s: ${secs} s, 64 connections"
wrk -t2 -c64 -d"${secs}s" --latency -s "$root/bench/http/load.lua" "$url" | tee "$tmp/out.txt"
after=$(rss)
echo "rss_kib before $before after $after"
fivexx=$(awk '$1 == "status" && $2 >= 500 && $2 != 503 { n += $3 } END { print n + 0 }' "$tmp/out.txt")
echo "5xx other than 503: $fivexx"
