#!/usr/bin/env bash
# Python guests on wray against Ray's own Python tasks, one after the other
# on this machine (same work, same timing: see the two scripts).
#
#   bash bench/python/run.sh [N]     (N tasks per case, default 10000)
#
# Needs `cargo xtask build-guests` (the wray binary, microbench.wasm) and the
# Ray venv of bench/ray/setup.sh.
set -euo pipefail
n=${1:-10000}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
wasm=${WRAY_WASM_DIR:-$target/wasm}
wray=$target/release/wray
venv=${RAY_VENV:-$HOME/.cache/wray/ray-venv}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$root/sdk/python" && WRAY_WIT=$root/wit python3 -m wray.build bench/trivial_tasks.py -o "$out/trivial_tasks.wasm" >/dev/null)
echo "== wray, Python guest (N=$n)"
"$wray" run "$out/trivial_tasks.wasm" --quiet --num-cpus 2 --with "$wasm/microbench.wasm" -- "$n" microbench
echo "== Ray $("$venv/bin/python" -c 'import ray; print(ray.__version__)'), Python tasks (N=$n)"
"$venv/bin/python" "$root/bench/python/ray_trivial_tasks.py" "$n" 2>/dev/null
