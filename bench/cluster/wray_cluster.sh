#!/usr/bin/env bash
# wray's side of the cluster benchmark (see README.md here), called by
# run.sh's run_wray():
#
#   wray_cluster.sh [--quick] [wray_cluster.py ARGS...]   (e.g. --only transfer)
#
# Uses the already-built binary and guest, copied aside first (the build
# may replace them while this runs):
#   ${WRAY_BIN:-$HOME/.cache/wray/target/release/wray}
#   ${WRAY_WASM_DIR:-$HOME/.cache/wray/target/wasm}/api.wasm
# Needs Debian's `etcd` on PATH (or ETCD_BIN) and python3 (stdlib only). Everything it
# starts (etcd, `wray start` nodes) lives under one temporary directory
# (TMPDIR is pointed there, so node directories are DIR/wray/node-PID) and
# is stopped at the end: the nodes with `wray stop`, then anything still
# alive of the pids it recorded with SIGKILL. JSON lines on stdout
# ("system": "wray"), progress on stderr. ~4 minutes on 2 cores.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${WRAY_BIN:-$HOME/.cache/wray/target/release/wray}"
WASM_DIR="${WRAY_WASM_DIR:-$HOME/.cache/wray/target/wasm}"

for f in "$BIN" "$WASM_DIR/api.wasm"; do
    if [ ! -f "$f" ]; then
        echo "wray_cluster.sh: $f is missing (build the workspace and the guests first)" >&2
        exit 2
    fi
done
export ETCD_BIN="${ETCD_BIN:-etcd}"
command -v "$ETCD_BIN" >/dev/null || { echo "wray_cluster.sh: no etcd ($ETCD_BIN; apt-get install etcd-server, or set ETCD_BIN)" >&2; exit 2; }

TMP="$(mktemp -d /tmp/wray-cluster-bench.XXXXXX)"
cleanup() {
    # Anything the run started and did not stop (it records every pid).
    if [ -f "$TMP/pids" ]; then
        while read -r pid; do
            # (a zombie, exited but not yet reaped by its parent, is not running)
            # Only a process of this run: pids wrap (pid_max may be 32768),
            # so a recorded pid may name someone else's process by now; ours
            # all name the run's directory in their command line.
            if kill -0 "$pid" 2>/dev/null && ! grep -q '^[0-9]* (.*) Z' "/proc/$pid/stat" 2>/dev/null \
                && { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -qF "$TMP/"; then
                echo "wray_cluster.sh: pid $pid still running; SIGKILL" >&2
                kill -9 "$pid" 2>/dev/null || true
            fi
        done < "$TMP/pids"
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$TMP/bin" "$TMP/tmp"
cp "$BIN" "$TMP/bin/wray"
cp "$WASM_DIR/api.wasm" "$TMP/bin/api.wasm"
# The word count (the wordcount case), when it was built.
WORDCOUNT=()
if [ -f "$WASM_DIR/wordcount.wasm" ]; then
    cp "$WASM_DIR/wordcount.wasm" "$TMP/bin/wordcount.wasm"
    WORDCOUNT=(--wordcount-wasm "$TMP/bin/wordcount.wasm")
fi
echo "wray_cluster.sh: $("$TMP/bin/wray" --version), binary of $(date -u -r "$BIN" +%FT%TZ), in $TMP" >&2

python3 "$HERE/wray_cluster.py" --wray "$TMP/bin/wray" --wasm "$TMP/bin/api.wasm" --tmp "$TMP" \
    "${WORDCOUNT[@]}" "$@"
