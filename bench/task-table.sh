#!/usr/bin/env bash
# The task table under many tasks: peak RSS and exit time of `wray run` after
# N tiny tasks (the microbench guest's `roundtrip N`: N times, submit a no-op
# task and `get` its result, so objects are freed and only the task table
# and the session grow). Results go to docs/benchmarks.md ("Task table").
#
# usage: bench/task-table.sh [WRAY] [N...]
#   WRAY: the wray binary (default: $CARGO_TARGET_DIR/release/wray);
#   N: task counts (default: 100000 1000000).
# Needs the guests built (`cargo xtask build-guests`, or WRAY_WASM_DIR).
# Prints one line per N: the driver's time (from wray's summary), the
# process's wall time, their difference (the exit: session state, shutdown)
# and the peak RSS (GNU time's %M).
set -euo pipefail
target=${CARGO_TARGET_DIR:-target}
wray=${1:-$target/release/wray}
shift || true
counts=("${@:-100000 1000000}")
wasm=${WRAY_WASM_DIR:-$target/wasm}/microbench.wasm
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for n in ${counts[@]}; do
    /usr/bin/time -f "TIME %e %M" "$wray" run --quiet --num-cpus 2 "$wasm" -- roundtrip "$n" >"$out" 2>&1
    driver=$(grep -o 'CPUs in [0-9.]*' "$out" | awk '{print $3}')
    read -r _ wall rss < <(grep '^TIME' "$out")
    exit_s=$(awk -v w="$wall" -v d="$driver" 'BEGIN { printf "%.2f", w - d }')
    echo "n=$n driver_s=$driver process_s=$wall exit_s=$exit_s peak_rss_mib=$((rss / 1024))"
done
