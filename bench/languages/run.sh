#!/usr/bin/env bash
# Guests in four languages side by side on this machine, one run, with
# Ray's own Python tasks and Ray running the same Python word count.
#
#   bash bench/languages/run.sh [N]      (N tasks per async case, default 10000)
#
# Per language: component size, first-run compile time (an empty compile
# cache) and a warm load (`wray describe`), then a trivial function called
# from a Rust driver (microbench's `call` case, JSON in and out): N/10 round
# trips and N tasks submitted at once, each in a fresh instance, and with
# `reuse` where the SDK has it; for the large Python and JavaScript
# components also without the pooling allocator and without copy-on-write
# memory images. Needs `cargo xtask build-guests` and the Ray venv of
# bench/ray/setup.sh. With BASELINE=/path/to/another/wray, the fresh-instance
# cases of the large components and the Python driver run with that binary
# too, alternated with this one, in the same run (lines marked `baseline`).
set -euo pipefail
n=${1:-10000}
root=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
wasm=${WRAY_WASM_DIR:-$target/wasm}
wray=$target/release/wray
venv=${RAY_VENV:-$HOME/.cache/wray/ray-venv}
corpus=${CORPUS:-/usr/lib/rustlib/src/rust/library}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

(cd "$root/sdk/python" && WRAY_WIT=$root/wit python3 -m wray.build bench/trivial_tasks.py -o "$out/trivial_py.wasm" >/dev/null)
(cd "$root" && WRAY_WIT=$root/wit node sdk/js/build.mjs bench/languages/trivial.js -o "$out/trivial_js.wasm" >/dev/null)
cp "$wasm/microbench.wasm" "$wasm/sum_bytes.wasm" "$out/"

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

echo "== component size, first-run compile (empty cache), warm load"
for c in microbench:Rust sum_bytes:C trivial_py:Python trivial_js:JavaScript; do
  name=${c%%:*}
  cache=$(mktemp -d)
  t0=$(now); XDG_CACHE_HOME=$cache "$wray" describe "$out/$name.wasm" >/dev/null; t1=$(now)
  XDG_CACHE_HOME=$cache "$wray" describe "$out/$name.wasm" >/dev/null; t2=$(now)
  rm -rf "$cache"
  echo "size ${c#*:} $name $(stat -c %s "$out/$name.wasm") compile_s $(secs "$t0" "$t1") warm_s $(secs "$t1" "$t2")"
done

call() { # FLAGS... -- COMPONENT FUNCTION ARGS (WRAY= another binary)
  local flags=()
  while [ "$1" != "--" ]; do flags+=("$1"); shift; done
  shift
  "${WRAY:-$wray}" run "$out/microbench.wasm" --quiet --num-cpus 2 "${flags[@]}" \
    --with "$out/sum_bytes.wasm" --with "$out/trivial_py.wasm" --with "$out/trivial_js.wasm" \
    -- call "$1" "$2" "$3" "$n"
}

echo "== trivial function from a Rust driver (N=$n)"
call -- microbench noop '[1]'
call -- sum_bytes add '[1, 2]'
for f in "trivial_py noop" "trivial_py noop_reused" "trivial_js noop" "trivial_js noopReused"; do
  set -- $f
  call -- "$1" "$2" '[1]'
done
if [ -n "${BASELINE:-}" ]; then
  echo "== fresh instances, baseline ($BASELINE) and this build alternated"
  for round in 1 2; do
    for f in "trivial_py noop" "trivial_js noop"; do
      set -- $f
      echo -n "baseline "; WRAY=$BASELINE call -- "$1" "$2" '[1]'
      echo -n "this "; call -- "$1" "$2" '[1]'
    done
    echo -n "baseline python_driver "; "$BASELINE" run "$out/trivial_py.wasm" --quiet --num-cpus 2 --with "$out/microbench.wasm" -- "$n" microbench
    echo -n "this python_driver "; "$wray" run "$out/trivial_py.wasm" --quiet --num-cpus 2 --with "$out/microbench.wasm" -- "$n" microbench
  done
fi
echo "== the large components without the pooling allocator, without copy-on-write images"
for f in "trivial_py noop" "trivial_js noop"; do
  set -- $f
  echo -n "no-pooling "; call --no-pooling -- "$1" "$2" '[1]'
  echo -n "no-memory-cow "; call --no-memory-cow -- "$1" "$2" '[1]'
done

echo "== Python driver on wray (sdk/python/bench/trivial_tasks.py, N=$n)"
"$wray" run "$out/trivial_py.wasm" --quiet --num-cpus 2 --with "$out/microbench.wasm" -- "$n" microbench
echo "== Ray $("$venv/bin/python" -c 'import ray; print(ray.__version__)'), Python tasks (N=$n)"
"$venv/bin/python" "$root/bench/python/ray_trivial_tasks.py" "$n" 2>/dev/null

echo "== Python word count over $corpus (whole process, compile cache warm)"
"$wray" run "$wasm/wordcount_py.wasm" --quiet --num-cpus 2 --dir "$corpus::/data" -- /data >/dev/null
t0=$(now); "$wray" run "$wasm/wordcount_py.wasm" --quiet --num-cpus 2 --dir "$corpus::/data" -- /data >"$out/wray.txt"; t1=$(now)
echo "wordcount wray_python wall_s $(secs "$t0" "$t1")"
if [ -n "${BASELINE:-}" ]; then
  "$BASELINE" run "$wasm/wordcount_py.wasm" --quiet --num-cpus 2 --dir "$corpus::/data" -- /data >/dev/null
  t0=$(now); "$BASELINE" run "$wasm/wordcount_py.wasm" --quiet --num-cpus 2 --dir "$corpus::/data" -- /data >/dev/null; t1=$(now)
  echo "wordcount wray_python baseline wall_s $(secs "$t0" "$t1")"
fi
t0=$(now); NUM_CPUS=2 "$venv/bin/python" "$root/bench/python/ray_wordcount.py" "$corpus" >"$out/ray.txt" 2>"$out/ray.err"; t1=$(now)
echo "wordcount ray_python wall_s $(secs "$t0" "$t1") ($(grep wall_s "$out/ray.err"), after ray.init)"
if cmp -s "$out/wray.txt" "$out/ray.txt"; then echo "wordcount outputs identical"; else echo "wordcount outputs DIFFER"; diff "$out/wray.txt" "$out/ray.txt" | head; fi
