#!/usr/bin/env bash
# Deploy to first result over HTTP, on the embedded function table and on
# etcd, in one run:
#
#   bash bench/http/first_result.sh [RUNS]     (each case, default 3)
#
# Each run is on new nodes (and, on etcd, a new etcd), with `microbench.wasm`:
#   - embedded, etcd: `POST /v1/components?name=mb` to a node, then its first
#     `POST /v1/functions/mb/noop` (curl's time_total of each);
#   - second node (etcd): two nodes follow one etcd; the deploy goes to the
#     first, and the time is from just before the deploy's request to the
#     second node's first answer `1` to `POST /v1/functions/mb/noop` (polled
#     every millisecond over one keep-alive connection; until then it answers
#     404), and from the end of the deploy's request to that answer.
# Compile caches: cold (an empty `XDG_CACHE_HOME` per node: Cranelift
# compiles the component, on each node) and warm (the caches a cold run of
# the same case filled). Prints one line per run, then medians as markdown.
#
# Etcd: $ETCD (default /usr/bin/etcd) on two free loopback ports with its
# data in a temporary directory, started for each run and stopped by its PID.
# Needs: the release `wray` (cargo build --release -p wray-cli), microbench.wasm
# (cargo xtask build-guests), curl, python3. `WRAY`, `PORT` (the first node's
# port, default a free one; the second node's is PORT+1), `CARGO_TARGET_DIR` and
# `WRAY_WASM_DIR` override where things are.
set -euo pipefail
runs=${1:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
wasm=${WRAY_WASM_DIR:-$target/wasm}
wray=${WRAY:-$target/release/wray}
etcd=${ETCD:-/usr/bin/etcd}
# PORT unset: each node takes a free port (`--port 0`) and says which.
port=${PORT:-0}
port_b=$((port == 0 ? 0 : port + 1))

[ -x "$wray" ] || { echo "$wray is missing: cargo build --release -p wray-cli" >&2; exit 1; }
[ -x "$etcd" ] || { echo "$etcd is missing: apt-get install -y etcd-server, or ETCD=..." >&2; exit 1; }
[ -f "$wasm/microbench.wasm" ] || { echo "$wasm/microbench.wasm is missing: cargo xtask build-guests" >&2; exit 1; }

out=$(mktemp -d)
token=$out/cluster-token
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$token")
etcd_pid=""
cleanup() {
  for d in "$out"/node-*; do
    [ -d "$d" ] && TMPDIR=$d "$wray" stop >/dev/null 2>&1 || true
  done
  etcd_stop
  rm -rf "$out"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

etcd_start() { # DIR: a new etcd, data under DIR; sets etcd_pid and etcd_url
  local client peer
  client=$(free_port)
  peer=$(free_port)
  etcd_url=http://127.0.0.1:$client
  "$etcd" --name=wray-bench --data-dir="$1/data" \
    --listen-client-urls="$etcd_url" --advertise-client-urls="$etcd_url" \
    --listen-peer-urls="http://127.0.0.1:$peer" --initial-advertise-peer-urls="http://127.0.0.1:$peer" \
    --initial-cluster="wray-bench=http://127.0.0.1:$peer" >"$1/etcd.log" 2>&1 &
  etcd_pid=$!
  for _ in $(seq 300); do
    if curl -s "$etcd_url/health" 2>/dev/null | grep -q '"health":"true"'; then return 0; fi
    kill -0 "$etcd_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "etcd did not start:" >&2
  tail -20 "$1/etcd.log" >&2
  exit 1
}
etcd_stop() {
  if [ -n "$etcd_pid" ]; then kill "$etcd_pid" 2>/dev/null || true; wait "$etcd_pid" 2>/dev/null || true; fi
  etcd_pid=""
}

node_start() { # DIR CACHE PORT [ETCD_URL]: a wray node whose files are under DIR; sets node_url
  mkdir -p "$1"
  local backend=()
  # A node on etcd joins a cluster, which needs the token every node shares
  # (docs/cluster.md): one per run, mode 0600.
  [ -z "${4:-}" ] || backend=(--etcd "$4" --cluster-token-file "$token")
  TMPDIR=$1 XDG_CACHE_HOME=$2 "$wray" start --port "$3" --no-auth --num-cpus 2 "${backend[@]}" >/dev/null
  # The node's own record says where it listens (PORT 0: a free one).
  node_url=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$1/wray/node_latest/node.json")
}
node_stop() { TMPDIR=$1 "$wray" stop >/dev/null; }

one_node() { # LABEL CACHE BACKEND(embedded|etcd) I: deploy, then the first call, on one new node
  local dir=$out/node-$1-$4 url etcd_arg=""
  if [ "$3" = etcd ]; then
    etcd_start "$(mktemp -d -p "$out")"
    etcd_arg=$etcd_url
  fi
  node_start "$dir" "$2" "$port" "$etcd_arg"
  url=$node_url
  local deploy answer
  deploy=$(curl -s -o "$out/deploy.json" -w '%{http_code} %{time_total}' -X POST \
    -H 'Content-Type: application/wasm' --data-binary "@$wasm/microbench.wasm" "$url/v1/components?name=mb")
  answer=$(curl -s -o "$out/answer" -w '%{http_code} %{time_total}' -X POST \
    -H 'Content-Type: application/json' -d '[1]' "$url/v1/functions/mb/noop")
  node_stop "$dir"
  etcd_stop
  if [ "${deploy%% *}" != 200 ] && [ "${deploy%% *}" != 201 ]; then
    echo "deploy answered ${deploy%% *}: $(cat "$out/deploy.json")" >&2; exit 1
  fi
  [ "$(cat "$out/answer")" = 1 ] || { echo "first call answered $(cat "$out/answer")" >&2; exit 1; }
  awk -v l="$1" -v d="${deploy#* }" -v c="${answer#* }" \
    'BEGIN { printf "first_result %s deploy_ms=%.1f call_ms=%.1f total_ms=%.1f\n", l, d * 1e3, c * 1e3, (d + c) * 1e3 }' |
    tee -a "$out/results"
}

# Deploys microbench.wasm to the node at $1 and polls the node at $2 until its
# noop answers 1; prints deploy_ms, second_ms (from before the deploy) and
# after_deploy_ms (from the deploy's answer), and how many polls it took.
second_node_timing() {
  python3 - "$1" "$2" "$wasm/microbench.wasm" <<'EOF'
import http.client, sys, time
a, b, path = sys.argv[1], sys.argv[2], sys.argv[3]
body = open(path, "rb").read()
poll = http.client.HTTPConnection(b, timeout=10)
poll.connect()
deploy = http.client.HTTPConnection(a, timeout=60)
deploy.connect()
start = time.perf_counter()
deploy.request("POST", "/v1/components?name=mb", body, {"Content-Type": "application/wasm"})
r = deploy.getresponse()
text = r.read()
deployed = time.perf_counter()
if r.status != 201:
    sys.exit(f"deploy answered {r.status}: {text[:300]!r}")
polls = 0
while True:
    polls += 1
    poll.request("POST", "/v1/functions/mb/noop", b"[1]", {"Content-Type": "application/json"})
    r = poll.getresponse()
    answer = r.read()
    if r.status == 200 and answer.strip() == b"1":
        break
    if r.status != 404:
        sys.exit(f"the second node answered {r.status}: {answer[:300]!r}")
    if time.perf_counter() - start > 60:
        sys.exit("the second node did not answer within 60 s")
    time.sleep(0.001)
done = time.perf_counter()
print(f"deploy_ms={(deployed - start) * 1e3:.1f} second_ms={(done - start) * 1e3:.1f} "
      f"after_deploy_ms={(done - deployed) * 1e3:.1f} polls={polls}")
EOF
}

two_nodes() { # LABEL CACHE_A CACHE_B I: deploy through one node, first result on the other
  local dir_a=$out/node-$1-a-$4 dir_b=$out/node-$1-b-$4
  etcd_start "$(mktemp -d -p "$out")"
  local url_a url_b
  node_start "$dir_a" "$2" "$port" "$etcd_url"
  url_a=$node_url
  node_start "$dir_b" "$3" "$port_b" "$etcd_url"
  url_b=$node_url
  # Both watches connected (a watch that connects late reads the table
  # whole: slower, and not what this measures).
  sleep 1
  local line
  line=$(second_node_timing "${url_a#http://}" "${url_b#http://}")
  node_stop "$dir_a"
  node_stop "$dir_b"
  etcd_stop
  echo "second_node $1 $line" | tee -a "$out/results"
}

echo "== $(date -u +%Y-%m-%d), $(nproc) cores, $("$wray" --version), $("$etcd" --version | head -1), microbench.wasm $(stat -c %s "$wasm/microbench.wasm") bytes, $runs runs per case"
for i in $(seq "$runs"); do one_node embedded_cold "$out/cache-embedded-$i" embedded "$i"; done
for i in $(seq "$runs"); do one_node embedded_warm "$out/cache-embedded-1" embedded "w$i"; done
for i in $(seq "$runs"); do one_node etcd_cold "$out/cache-etcd-$i" etcd "$i"; done
for i in $(seq "$runs"); do one_node etcd_warm "$out/cache-etcd-1" etcd "w$i"; done
for i in $(seq "$runs"); do two_nodes second_node_cold "$out/cache-a-$i" "$out/cache-b-$i" "$i"; done
for i in $(seq "$runs"); do two_nodes second_node_warm "$out/cache-a-1" "$out/cache-b-1" "w$i"; done

[ "${SUMMARY:-1}" = 1 ] || exit 0
echo "== summary (markdown)"
awk '
  function val(field,   i, kv) {
    for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == field) return kv[2] }
  }
  function median(a, k, m,   i, j, x, v) {
    for (i = 1; i <= m; i++) v[i] = a[k, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
    return v[int((m + 1) / 2)]
  }
  $1 == "first_result" {
    k = $2; if (!(k in n1)) order1[c1++] = k
    n1[k]++; d[k, n1[k]] = val("deploy_ms"); f[k, n1[k]] = val("call_ms"); t[k, n1[k]] = val("total_ms")
  }
  $1 == "second_node" {
    k = $2; if (!(k in n2)) order2[c2++] = k
    n2[k]++; sd[k, n2[k]] = val("deploy_ms"); s2[k, n2[k]] = val("second_ms"); sa[k, n2[k]] = val("after_deploy_ms")
  }
  END {
    print "| deploy to first result (medians) | deploy ms | first call ms | total ms |"
    print "| --- | ---: | ---: | ---: |"
    for (i = 0; i < c1; i++) { k = order1[i]
      printf "| %s (%d runs) | %.1f | %.1f | %.1f |\n", k, n1[k], median(d, k, n1[k]), median(f, k, n1[k]), median(t, k, n1[k]) }
    print ""
    print "| deploy through one node, first result on another (medians) | deploy ms | deploy to first result ms | after the deploy ms |"
    print "| --- | ---: | ---: | ---: |"
    for (i = 0; i < c2; i++) { k = order2[i]
      printf "| %s (%d runs) | %.1f | %.1f | %.1f |\n", k, n2[k], median(sd, k, n2[k]), median(s2, k, n2[k]), median(sa, k, n2[k]) }
  }' "$out/results"
