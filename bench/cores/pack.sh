#!/usr/bin/env bash
# Makes the directory bench/cores/run.sh needs on a machine that cannot
# build or install anything (the 16-core device machine: no network), small
# enough to travel with the checkout (the device tool carries at most
# 64 MiB in all): a stripped `wray` and `store-contention`, the guests,
# Debian's etcd, each compressed with xz.
#
#   bench/cores/pack.sh [DIR]       (default: carry/, which git ignores)
#
# XZ_LEVEL (default -6) trades size for time.
# Build first: cargo build --release -p wray-cli -p wray-bench && cargo xtask build-guests
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
wasm=${WRAY_WASM_DIR:-$target/wasm}
dir=${1:-$root/carry}
mkdir -p "$dir"
for bin in wray store-contention; do
  [ -x "$target/release/$bin" ] || { echo "$target/release/$bin is missing: cargo build --release -p wray-cli -p wray-bench" >&2; exit 1; }
  strip -o "$dir/$bin" "$target/release/$bin"
done
for guest in microbench wordcount api; do
  [ -f "$wasm/$guest.wasm" ] || { echo "$wasm/$guest.wasm is missing: cargo xtask build-guests" >&2; exit 1; }
  cp "$wasm/$guest.wasm" "$dir/"
done
cp "${ETCD_BIN:-/usr/bin/etcd}" "$dir/etcd"
xz -T0 ${XZ_LEVEL:--6} -f "$dir/wray" "$dir/store-contention" "$dir/etcd"
du -sh "$dir"
