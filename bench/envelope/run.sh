#!/usr/bin/env bash
# Ray's scalability envelope against wray on one machine (see README.md here):
#
#   run.sh [--quick] [--no-ray] [--only DIM,...] [-- ENVELOPE_PY_ARGS...]
#
#   --quick   small sizes (under 3 minutes; the test suite runs it, --no-ray)
#   --no-ray  skip Ray 2.60 (ray_envelope.py, in the venv bench/ray/setup.sh makes)
#   --only    dimensions: nodes,actors,running,broadcast,args,returns,get,
#             queued,large,placement_groups (default: all)
#
# One JSON line per dimension and system on stdout ("bench": "envelope",
# "system": "wray" or "ray"); progress on stderr. Uses the already-built
#   ${WRAY_BIN:-$HOME/.cache/wray/target/release/wray}
#   ${WRAY_WASM_DIR:-$HOME/.cache/wray/target/wasm}/envelope.wasm
# copied aside first (a build may replace them while this runs), Debian's
# `etcd` (or ETCD_BIN) and python3 (stdlib only on the wray side).
# Everything it starts lives under one temporary directory (TMPDIR points
# there) and is stopped at the end; pids still alive are SIGKILLed. The
# directory is removed unless WRAY_ENVELOPE_KEEP is set (to read node logs).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="${WRAY_RAY_VENV:-$HOME/.cache/wray/ray-venv}"
BIN="${WRAY_BIN:-$HOME/.cache/wray/target/release/wray}"
WASM_DIR="${WRAY_WASM_DIR:-$HOME/.cache/wray/target/wasm}"

quick=()
only=()
do_ray=1
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=(--quick) ;;
        --no-ray) do_ray=0 ;;
        --only) shift; only=(--only "$1") ;;
        --) shift; extra=("$@"); break ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

for f in "$BIN" "$WASM_DIR/envelope.wasm"; do
    if [ ! -f "$f" ]; then
        echo "run.sh: $f is missing (build the workspace and the guests first)" >&2
        exit 2
    fi
done
export ETCD_BIN="${ETCD_BIN:-etcd}"
command -v "$ETCD_BIN" >/dev/null || { echo "run.sh: no etcd ($ETCD_BIN; apt-get install etcd-server, or set ETCD_BIN)" >&2; exit 2; }

TMP="$(mktemp -d /tmp/wray-envelope.XXXXXX)"
ray_stop() {
    if [ -x "$VENV/bin/ray" ]; then
        "$VENV/bin/ray" stop --force >/dev/null 2>&1 || true
    fi
}
cleanup() {
    if [ -f "$TMP/pids" ]; then
        while read -r pid; do
            # Only a process of this run: pids wrap (pid_max may be 32768),
            # so a recorded pid may name someone else's process by now; ours
            # all name the run's directory in their command line.
            if kill -0 "$pid" 2>/dev/null && ! grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null \
                && { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -qF "$TMP/"; then
                echo "run.sh: pid $pid still running; SIGKILL" >&2
                kill -9 "$pid" 2>/dev/null || true
            fi
        done < "$TMP/pids"
    fi
    if [ "$do_ray" -eq 1 ]; then ray_stop; fi
    if [ -n "${WRAY_ENVELOPE_KEEP:-}" ]; then
        echo "run.sh: kept $TMP (node logs under tmp/wray/)" >&2
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$TMP/bin" "$TMP/tmp"
cp "$BIN" "$TMP/bin/wray"
cp "$WASM_DIR/envelope.wasm" "$TMP/bin/envelope.wasm"
echo "run.sh: $("$TMP/bin/wray" --version), binary of $(date -u -r "$BIN" +%FT%TZ), in $TMP" >&2

status=0
start=$(date +%s)
python3 "$HERE/envelope.py" --wray "$TMP/bin/wray" --wasm "$TMP/bin/envelope.wasm" --tmp "$TMP" \
    "${quick[@]}" "${only[@]}" "${extra[@]}" || status=$?
echo "run.sh: wray side took $(( $(date +%s) - start ))s" >&2

if [ "$do_ray" -eq 1 ]; then
    if [ ! -x "$VENV/bin/python" ]; then
        "$ROOT/bench/ray/setup.sh" >&2
    fi
    export RAY_USAGE_STATS_ENABLED=0 RAY_DISABLE_DOCKER_CPU_WARNING=1 PYTHONUNBUFFERED=1
    unset RAY_ADDRESS
    ray_stop
    start=$(date +%s)
    timeout -k 30 1200 "$VENV/bin/python" "$HERE/ray_envelope.py" --tmp "$TMP" "${quick[@]}" "${only[@]}" \
        || { rc=$?; echo "run.sh: ray_envelope.py exited with status $rc" >&2; status=$rc; }
    echo "run.sh: ray side took $(( $(date +%s) - start ))s" >&2
    ray_stop
fi
exit "$status"
