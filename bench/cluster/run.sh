#!/usr/bin/env bash
# wray's cluster benchmark, the yardstick and Ray sides (see README.md here):
#
#   run.sh [--quick] [--no-tcp] [--no-ray] [--no-wray] [--ray-fast-detect]
#          [--wray-only CASES] [-- RAY_CLUSTER_ARGS...]
#
#   --quick     small counts, for a smoke test (no 1 GiB transfer)
#   --ray-fast-detect  also run Ray's two failure cases (tree_reduce,
#               kill_retry) on a second cluster whose GCS declares a node dead
#               after 3 missed 500 ms health checks instead of Ray's default
#               5 x 3000 ms (records carry "ray_env" with the settings)
#   --no-tcp    skip tcp_copy.py (the plain TCP copy, the physical limit)
#   --no-ray    skip ray_cluster.py (Ray 2.60, three nodes on this machine)
#   --no-wray   skip run_wray() (bench/cluster/wray_cluster.sh, if present)
#   --wray-only CASES  only these wray cases (wray_cluster.py --only CASES)
#   -- ARGS     passed on to ray_cluster.py (e.g. -- --only transfer,roundtrip)
#
# Results: JSON lines on stdout, one per measured case, each with "bench" and
# "system" ("tcp", "ray", "wray"). Progress and Ray's logging go to stderr.
# The Ray venv comes from bench/ray/setup.sh (${WRAY_RAY_VENV:-$HOME/.cache/wray/ray-venv}).
# Takes about 6 minutes on this 2-core machine (Ray side ~3.5 min, wray ~2 min).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="${WRAY_RAY_VENV:-$HOME/.cache/wray/ray-venv}"

quick=()
do_tcp=1
do_ray=1
do_wray=1
fast_detect=0
ray_args=()
wray_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=(--quick) ;;
        --no-tcp) do_tcp=0 ;;
        --no-ray) do_ray=0 ;;
        --no-wray) do_wray=0 ;;
        --ray-fast-detect) fast_detect=1 ;;
        --wray-only) shift; wray_args=(--only "$1") ;;
        --) shift; ray_args=("$@"); break ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

# No usage-stats upload, no Docker CPU warning; nothing here needs the network.
export RAY_USAGE_STATS_ENABLED=0
export RAY_DISABLE_DOCKER_CPU_WARNING=1
export PYTHONUNBUFFERED=1
unset RAY_ADDRESS

ray_stop() {
    if [ -x "$VENV/bin/ray" ]; then
        "$VENV/bin/ray" stop --force >/dev/null 2>&1 || true
    fi
}
cleanup() {
    ray_stop
    if pgrep -f raylet >/dev/null 2>&1; then
        echo "run.sh: WARNING: Ray processes left behind:" >&2
        pgrep -fa raylet >&2 || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

status=0

# ---- 1. the physical limit: a plain TCP copy of the same bytes over loopback
if [ "$do_tcp" -eq 1 ]; then
    echo "run.sh: tcp_copy.py" >&2
    sizes="1MiB,64MiB,1GiB"
    if [ "${#quick[@]}" -gt 0 ]; then sizes="1MiB,64MiB"; fi
    python3 "$HERE/tcp_copy.py" --sizes "$sizes" || status=$?
fi

# ---- 2. Ray 2.60, head + two worker nodes on this machine
if [ "$do_ray" -eq 1 ]; then
    "$ROOT/bench/ray/setup.sh" >&2
    ray_stop
    echo "run.sh: ray_cluster.py ${quick[*]} ${ray_args[*]}" >&2
    start=$(date +%s)
    timeout -k 30 1800 "$VENV/bin/python" "$HERE/ray_cluster.py" "${quick[@]}" "${ray_args[@]}" \
        || { rc=$?; echo "run.sh: ray_cluster.py exited with status $rc" >&2; status=$rc; }
    echo "run.sh: ray side took $(( $(date +%s) - start ))s" >&2
    ray_stop
    if [ "$fast_detect" -eq 1 ]; then
        echo "run.sh: ray_cluster.py, failure cases, 500 ms x 3 health checks" >&2
        RAY_health_check_period_ms=500 RAY_health_check_failure_threshold=3 \
            timeout -k 30 900 "$VENV/bin/python" "$HERE/ray_cluster.py" "${quick[@]}" \
            --only tree_reduce,kill_retry \
            || { rc=$?; echo "run.sh: ray_cluster.py (fast detect): status $rc" >&2; status=$rc; }
        ray_stop
    fi
fi

# ---- 3. wray: the wray side (wray_cluster.sh, beside this file).
# bench/cluster/wray_cluster.sh, if it exists, is run with the same --quick
# flag and must print the same JSON lines with "system": "wray".
run_wray() {
    local script="$HERE/wray_cluster.sh"
    if [ ! -f "$script" ]; then
        echo "run.sh: no $script yet; wray side skipped" >&2
        return 0
    fi
    echo "run.sh: wray_cluster.sh ${quick[*]} ${wray_args[*]}" >&2
    bash "$script" "${quick[@]}" "${wray_args[@]}"
}
if [ "$do_wray" -eq 1 ]; then
    run_wray || { rc=$?; echo "run.sh: wray_cluster.sh exited with status $rc" >&2; status=$rc; }
fi

exit "$status"
