#!/usr/bin/env bash
# A trivial function over HTTP, side by side on this machine in one run:
# wray's HTTP API, the `wasmtime serve` yardstick (bench/http-yardstick) and
# Ray Serve 2.60.
#
#   bash bench/http/run.sh [--quick] [--no-yardstick] [--no-ray] [SECONDS]
#
# SECONDS: each wrk run (default 10). `--quick` is the smoke test the test
# command runs (cli/tests/all/http_bench.rs) so that this script cannot rot:
# 1 s wrk runs, one deploy-to-first-result run of each case, and neither the
# yardstick (its build is a second wasmtime) nor Ray Serve.
#
# Load: wrk with keep-alive, POST of the JSON body `[1]`, at concurrency 1
# (`-t1 -c1`) and 64 (`-t2 -c64`), after a 2 s warm-up at 64; requests/s,
# p50 and p99 latency of each run. Peers, one at a time:
#   - wray: `wray start --no-auth --num-cpus 2`, microbench.wasm deployed as
#     `mb`; `POST /v1/functions/mb/noop` (a fresh instance per call) and
#     `mb/noop_reused` (`#[wray::remote(reuse)]`);
#   - the yardstick (wasmtime-wasi-http 48.0.8's ProxyHandler, what
#     `wasmtime serve -S cli` runs) serving a wasi:http component that answers
#     `1`: fresh instance per request (`wasmtime serve`'s default), and
#     `--max-instance-reuse-count 1000`;
#   - Ray Serve (bench/http/ray_serve_app.py, one replica): its defaults
#     (max_ongoing_requests 5), and max_ongoing_requests 64.
# Before them, wray's deploy-to-first-result for a new component, on the
# embedded table and on etcd, and on a second node following the same etcd
# (bench/http/first_result.sh, 3 runs of each case, medians).
#
# Needs: wrk, etcd (/usr/bin/etcd, or $ETCD), the release `wray` (cargo
# build --release -p wray-cli), microbench.wasm (cargo xtask build-guests),
# python3, cargo-component and the
# wasm32-wasip1 target for the yardstick's guest, the Ray venv with
# ray[serve]==2.60.0 ($RAY_VENV, default ~/.cache/wray/ray-venv). The
# yardstick and its guest are built here when missing.
set -euo pipefail
secs=10 first_runs=3 yardstick_on=1 ray_on=1
while [ $# -gt 0 ]; do
  case $1 in
    --quick) secs=1 first_runs=1 yardstick_on=0 ray_on=0 ;;
    --no-yardstick) yardstick_on=0 ;;
    --no-ray) ray_on=0 ;;
    -*) echo "unknown option $1 (known: --quick --no-yardstick --no-ray)" >&2; exit 2 ;;
    *) secs=$1 ;;
  esac
  shift
done
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
wasm=${WRAY_WASM_DIR:-$target/wasm}
wray=${WRAY:-$target/release/wray}
venv=${RAY_VENV:-$HOME/.cache/wray/ray-venv}
yardstick=$target/release/wray-http-yardstick
guest=$target/http-yardstick-guest/wasm32-wasip1/release/http_yardstick_guest.wasm
port=${PORT:-18265}
lua=$root/bench/http/post.lua

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
[ -x "$wray" ] || { echo "$wray is missing: cargo build --release -p wray-cli" >&2; exit 1; }
[ -f "$wasm/microbench.wasm" ] || { echo "$wasm/microbench.wasm is missing: cargo xtask build-guests" >&2; exit 1; }
if [ "$yardstick_on" = 1 ] && [ ! -x "$yardstick" ]; then
  echo "== building the yardstick (wasmtime 48.0.8 in release: minutes)"
  (cd "$root/bench/http-yardstick" && CARGO_TARGET_DIR=$target cargo build --release)
fi
if [ "$yardstick_on" = 1 ] && [ ! -f "$guest" ]; then
  echo "== building the yardstick's guest"
  (cd "$root/bench/http-yardstick/guest" &&
    CARGO_TARGET_DIR=$target/http-yardstick-guest cargo component build --release --target wasm32-wasip1)
fi

out=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  for d in "$out"/node-*; do
    [ -d "$d" ] && TMPDIR=$d "$wray" stop >/dev/null 2>&1 || true
  done
  rm -rf "$out"
}
trap cleanup EXIT

url=http://127.0.0.1:$port

wait_answer() { # URL: waits until POST [1] answers `1`
  for _ in $(seq 600); do
    if [ "$(curl -s -X POST -H 'Content-Type: application/json' -d '[1]' "$1" 2>/dev/null)" = 1 ]; then return 0; fi
    sleep 0.1
  done
  echo "no answer `1` from $1" >&2
  return 1
}

load() { # NAME URL: the warm-up and the two measured runs
  wait_answer "$2"
  wrk -t2 -c64 -d2s -s "$lua" "$2" >/dev/null
  for c in 1 64; do
    local t=1
    [ "$c" = 1 ] || t=2
    local line
    line=$(wrk -t$t -c$c -d${secs}s --timeout 10s --latency -s "$lua" "$2" | grep '^RESULT')
    echo "load $1 c=$c ${line#RESULT }" | tee -a "$out/results"
  done
}

node_start() { # DIR CACHE: a wray node whose files are under DIR, compile cache under CACHE
  mkdir -p "$1"
  # A free port (`--port 0`), which the node's record names: the yardstick
  # and Ray Serve take $port after it.
  TMPDIR=$1 XDG_CACHE_HOME=$2 "$wray" start --port 0 --no-auth --num-cpus 2 >/dev/null
  node_url=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$1/wray/node_latest/node.json")
}
node_stop() { TMPDIR=$1 "$wray" stop >/dev/null; }

echo "== $(date -u +%Y-%m-%d), $(nproc) cores, wrk ${secs}s runs, $(uname -r)"

echo "== wray: deploy to first result"
WRAY=$wray PORT=${PORT:-} bash "$root/bench/http/first_result.sh" "$first_runs"

echo "== wray $("$wray" --version | awk '{print $2}')"
node_start "$out/node-load" "$out/cache-load"
TMPDIR=$out/node-load "$wray" deploy "$wasm/microbench.wasm" --name mb >/dev/null
load wray_noop "$node_url/v1/functions/mb/noop"
load wray_noop_reused "$node_url/v1/functions/mb/noop_reused"
node_stop "$out/node-load"

[ "$yardstick_on" = 1 ] && echo "== the wasmtime serve yardstick (wasmtime-wasi-http 48.0.8)"
for reuse in 1 1000; do
  [ "$yardstick_on" = 1 ] || break
  "$yardstick" "$guest" --addr "127.0.0.1:$port" --max-instance-reuse-count "$reuse" 2>"$out/yardstick.log" &
  server=$!
  load "yardstick_reuse_$reuse" "$url/"
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
done

[ "$ray_on" = 1 ] && echo "== Ray Serve $("$venv/bin/python" -c 'import ray; print(ray.__version__)')"
for ongoing in default 64; do
  [ "$ray_on" = 1 ] || break
  if [ "$ongoing" = default ]; then
    "$venv/bin/python" "$root/bench/http/ray_serve_app.py" "$port" >"$out/serve.log" 2>&1 &
  else
    MAX_ONGOING_REQUESTS=$ongoing "$venv/bin/python" "$root/bench/http/ray_serve_app.py" "$port" >"$out/serve.log" 2>&1 &
  fi
  server=$!
  for _ in $(seq 120); do grep -q '^ready' "$out/serve.log" && break; sleep 1; done
  grep -q '^ready' "$out/serve.log" || { echo "Ray Serve did not start:" >&2; tail -20 "$out/serve.log" >&2; exit 1; }
  load "ray_serve_max_ongoing_$ongoing" "$url/noop"
  kill -INT "$server"; wait "$server" 2>/dev/null || true; server=""
done

echo "== summary (markdown)"
awk '
  function val(field,   i, kv) {
    for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == field) return kv[2] }
  }
  $1 == "load" {
    c = substr($3, 3); name[$2] = 1; if (!($2 in seen)) { order[n++] = $2; seen[$2] = 1 }
    rps[$2, c] = val("rps"); p50[$2, c] = val("p50_us"); p99[$2, c] = val("p99_us")
    bad[$2, c] = val("non2xx") + val("socket_errors")
  }
  function ms(us) { return sprintf("%.2f", us / 1000) }
  END {
    print "| peer | c=1 req/s | c=1 p50 ms | c=1 p99 ms | c=64 req/s | c=64 p50 ms | c=64 p99 ms |"
    print "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    for (i = 0; i < n; i++) {
      p = order[i]
      printf "| %s | %.0f | %s | %s | %.0f | %s | %s |%s\n", p, rps[p, 1], ms(p50[p, 1]), ms(p99[p, 1]),
        rps[p, 64], ms(p50[p, 64]), ms(p99[p, 64]), (bad[p, 1] + bad[p, 64] > 0 ? " errors: " bad[p, 1] + bad[p, 64] : "")
    }
    print ""
    print "| ratio | c=1 | c=64 |"
    print "| --- | ---: | ---: |"
    split("wray_noop/yardstick_reuse_1 wray_noop_reused/yardstick_reuse_1000 wray_noop/ray_serve_max_ongoing_default wray_noop/ray_serve_max_ongoing_64 wray_noop_reused/ray_serve_max_ongoing_64", rs, " ")
    for (i = 1; i in rs; i++) {
      split(rs[i], ab, "/")
      if ((ab[1], 1) in rps && (ab[2], 1) in rps)
        printf "| %s | %.2f | %.2f |\n", rs[i], rps[ab[1], 1] / rps[ab[2], 1], rps[ab[1], 64] / rps[ab[2], 64]
    }
  }' "$out/results"
