#!/usr/bin/env bash
# How one wray node scales with cores (issue 40, item 2), in one run short
# enough for a borrowed many-core machine (the 16-core device machine: 15
# minutes of device time, no network), as JSON lines on stdout:
#   1. `store-contention`: the object store alone, puts/s by threads
#      (1, 2, 4, ... up to the cores);
#   2. the microbenchmark's cases that share the most (multi client put
#      calls, multi client tasks async, single client tasks async, n:n actor
#      calls async, multi client put gigabytes), each at `--num-cpus 2` and
#      at every core (`wray run microbench.wasm -- suite CASE SCALE CORES`);
#   3. the word count over CORPUS at 1 CPU, 4 and every core
#      (`wray run wordcount.wasm --dir CORPUS::/data -- /data`);
#   4. the cluster: bench/cluster/scale16.sh (four nodes of 4 CPUs against
#      one), unless --no-cluster.
# Aims (issue 40): multi client put calls at every core no slower than at 2;
# multi client tasks async at least 6x its 2-core rate; the word count at
# least 8x faster on 16 CPUs than on 1.
#
#   bench/cores/run.sh DIR [--quick] [--no-cluster] [--corpus CORPUS] [--scale S]
#
# DIR is what bench/cores/pack.sh made (xz-compressed binaries are unpacked
# into a temporary directory). CORPUS defaults to the machine's Python
# library (/usr/lib/python3*), else this checkout. --quick: 2 cores at most,
# the smallest scale, no cluster (the smoke test of this script).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "${1:?usage: run.sh DIR [--quick] [--no-cluster] [--corpus DIR] [--scale S]}" && pwd)
shift
quick=0 cluster=1 scale=0.3 corpus=""
while [ $# -gt 0 ]; do
  case $1 in
    --quick) quick=1 cluster=0 scale=0.05 ;;
    --no-cluster) cluster=0 ;;
    --corpus) corpus=$2; shift ;;
    --scale) scale=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
cores=$(nproc)
[ "$quick" = 0 ] || cores=$((cores < 2 ? cores : 2))
if [ -z "$corpus" ]; then
  corpus=$(ls -d /usr/lib/python3* 2>/dev/null | head -1 || true)
  [ -n "$corpus" ] || corpus=$(cd "$here/../.." && pwd)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for f in "$src"/*; do
  case $f in
    *.xz) xz -dc "$f" >"$work/$(basename "${f%.xz}")"; chmod +x "$work/$(basename "${f%.xz}")" ;;
    *) cp "$f" "$work/" ;;
  esac
done
wray=$work/wray
mkdir "$work/tmp"
# (not $work itself: a node's directory is $TMPDIR/wray, and $work/wray is the binary)
export TMPDIR=$work/tmp XDG_CACHE_HOME=$work/cache
echo "cores/run.sh: $cores cores, $(free -g | awk '/Mem/ {print $2}') GiB, $("$wray" --version), corpus $corpus" >&2

json() { # NAME=VALUE...: one JSON line (values that are numbers stay numbers)
  python3 -c 'import json, sys
out = {}
for kv in sys.argv[1:]:
    k, v = kv.split("=", 1)
    try: out[k] = float(v) if any(c in v for c in ".e") else int(v)
    except ValueError: out[k] = v
print(json.dumps(out))' "$@"
}

# 1. the store alone
threads=1; list=1
while [ $((threads * 2)) -le "$cores" ]; do threads=$((threads * 2)); list=$list,$threads; done
[ "$threads" = "$cores" ] || list=$list,$cores
"$work/store-contention" --threads "$list" --seconds "$([ "$quick" = 1 ] && echo 0.2 || echo 1)" --runs 2

# 2. the microbenchmark's shared cases, at 2 CPUs and at every core
cases=("multi client put calls" "multi client tasks async" "single client tasks async" "n:n actor calls async" "multi client put gigabytes")
[ "$quick" = 0 ] || cases=("multi client put calls" "single client tasks async")
for n in 2 "$cores"; do
  for case in "${cases[@]}"; do
    line=$("$wray" run --num-cpus "$n" "$work/microbench.wasm" -- suite "$case" "$scale" "$n" | grep -F "$case" | head -1)
    rate=$(printf '%s' "$line" | cut -f2)
    json bench=cores_microbench case="$case" num_cpus="$n" cores="$cores" rate="$rate" unit="$(printf '%s' "$line" | cut -f4)"
  done
  [ "$n" != "$cores" ] || break
done

# 3. the word count by CPUs, after one run that fills the compile cache and
# the page cache with the corpus
"$wray" run "$work/wordcount.wasm" --dir "$corpus::/data" -- /data >"$work/wordcount.out" 2>&1 ||
  { echo "the word count failed:" >&2; tail -5 "$work/wordcount.out" >&2; exit 1; }
for n in 1 4 "$cores"; do
  [ "$n" -le "$cores" ] || continue
  start=$EPOCHREALTIME
  "$wray" run --num-cpus "$n" "$work/wordcount.wasm" --dir "$corpus::/data" -- /data >"$work/wordcount.out" 2>&1 ||
    { echo "the word count failed at $n CPUs:" >&2; tail -5 "$work/wordcount.out" >&2; exit 1; }
  end=$EPOCHREALTIME
  json bench=cores_wordcount num_cpus="$n" cores="$cores" seconds="$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }')" corpus="$corpus"
  [ "$n" != "$cores" ] || break
done

# 4. the cluster
if [ "$cluster" = 1 ]; then
  mkdir -p "$work/cluster"
  cp "$work/wray" "$work/api.wasm" "$work/etcd" "$work/cluster/"
  bash "$here/../cluster/scale16.sh" "$work/cluster"
fi
