#!/usr/bin/env bash
# Run Ray 2.60's own microbenchmark (`ray microbenchmark`, i.e.
# ray._private.ray_perf.main) and print its results as a table or JSON lines.
#
#   run.sh [--json] [--filter PATTERN] [--skip PATTERN] [--per-case]
#          [--timeout SECS] [--case-timeout SECS] [--raw FILE]
#
#   --json            one {"case","rate","sd","unit"} object per line
#                     (default: TSV table case<TAB>rate<TAB>sd<TAB>unit)
#   --filter PATTERN  only cases whose name contains PATTERN (Ray's TESTS_TO_RUN,
#                     a plain substring match)
#   --skip PATTERN    skip cases whose name contains PATTERN (TESTS_TO_SKIP)
#   --per-case        one `ray microbenchmark` process per case, each under
#                     --case-timeout, so one hanging case cannot sink the rest
#                     (slower: ~65 s of Ray start-up per case on 2 cores)
#   --timeout SECS    limit for the single whole run (default 3600)
#   --case-timeout S  limit per one-case process (default 600)
#   --raw FILE        also keep Ray's raw stdout+stderr in FILE
#
# Without --per-case, all selected cases run in one `ray microbenchmark`
# process (as Ray intends); any selected case that printed no result (the run
# crashed or hit --timeout) is then retried once on its own, as with --per-case.
#
# Results go to stdout; progress and Ray's own logging go to stderr / the raw
# log. Exit status: 0 if every selected case produced a result, 3 if some did
# not (the ones that did are still printed).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="${WRAY_RAY_VENV:-$HOME/.cache/wray/ray-venv}"

json=0
filter=""
skip=""
per_case=0
total_timeout=3600
case_timeout=600
raw=""
while [ $# -gt 0 ]; do
    case "$1" in
        --json) json=1 ;;
        --filter) filter="$2"; shift ;;
        --skip) skip="$2"; shift ;;
        --per-case) per_case=1 ;;
        --timeout) total_timeout="$2"; shift ;;
        --case-timeout) case_timeout="$2"; shift ;;
        --raw) raw="$2"; shift ;;
        -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
        *) echo "run.sh: unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

"$HERE/setup.sh" >&2

# No usage-stats upload, no Docker CPU warning; nothing here needs the network.
export RAY_USAGE_STATS_ENABLED=0
export RAY_DISABLE_DOCKER_CPU_WARNING=1
export PYTHONUNBUFFERED=1
unset RAY_ADDRESS TESTS_TO_RUN TESTS_TO_SKIP

RAY="$VENV/bin/ray"
work="$(mktemp -d "${TMPDIR:-/tmp}/wray-ray-bench.XXXXXX")"
cleanup() {
    "$RAY" stop --force >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The case names this Ray version runs, from its own source, in source order,
# narrowed the way ray_perf's timeit() narrows them (substring match).
pkg="$("$VENV/bin/python" -c 'import os, ray; print(os.path.dirname(ray.__file__))')"
python3 "$HERE/parse.py" --list-cases \
    "$pkg/_private/ray_perf.py" "$pkg/_private/ray_client_microbenchmark.py" \
    >"$work/all-cases.txt"
: >"$work/cases.txt"
while IFS= read -r name; do
    if [ -n "$filter" ] && [[ "$name" != *"$filter"* ]]; then continue; fi
    if [ -n "$skip" ] && [[ "$name" == *"$skip"* ]]; then continue; fi
    printf '%s\n' "$name" >>"$work/cases.txt"
done <"$work/all-cases.txt"
ncases="$(wc -l <"$work/cases.txt")"
if [ "$ncases" -eq 0 ]; then
    echo "run.sh: no case matches --filter '$filter' --skip '$skip'" >&2
    exit 2
fi

"$RAY" stop --force >/dev/null 2>&1 || true
cd "$work"
# One `ray microbenchmark` process for exactly one case (TESTS_TO_RUN is a
# substring match; the marker tells parse.py to keep only NAME's result).
run_one_case() {
    local name="$1" rc=0
    echo "=== run.sh case: $name" >>"$work/raw.log"
    TESTS_TO_RUN="$name" timeout -k 30 "$case_timeout" \
        "$RAY" microbenchmark >>"$work/raw.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "run.sh: case '$name': ray microbenchmark exited with status $rc" >&2
    fi
    "$RAY" stop --force >/dev/null 2>&1 || true
}

start=$(date +%s)
: >"$work/raw.log"
if [ "$per_case" -eq 0 ]; then
    echo "run.sh: running ray microbenchmark ($ncases cases, limit ${total_timeout}s)" >&2
    rc=0
    TESTS_TO_RUN="$filter" TESTS_TO_SKIP="$skip" \
        timeout -k 30 "$total_timeout" "$RAY" microbenchmark >>"$work/raw.log" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "run.sh: ray microbenchmark exited with status $rc" >&2
    fi
    "$RAY" stop --force >/dev/null 2>&1 || true
    # A case can be lost to a crash of the whole run (on 2 cores the Ray-client
    # section's extra ray.init sometimes times out): retry what is missing, one
    # process per case.
    python3 "$HERE/parse.py" --cases "$work/cases.txt" --missing "$work/raw.log" \
        >"$work/retry.txt"
    while IFS= read -r name; do
        echo "run.sh: no result for '$name' in the whole run; retrying it alone" \
            "(limit ${case_timeout}s)" >&2
        run_one_case "$name"
    done <"$work/retry.txt"
else
    i=0
    while IFS= read -r name; do
        i=$((i + 1))
        echo "run.sh: [$i/$ncases] $name (limit ${case_timeout}s)" >&2
        run_one_case "$name"
    done <"$work/cases.txt"
fi
echo "run.sh: took $(( $(date +%s) - start ))s" >&2
cd "$OLDPWD"
if [ -n "$raw" ]; then
    cp "$work/raw.log" "$raw"
fi

fmt=""
if [ "$json" -eq 1 ]; then fmt="--json"; fi
status=0
python3 "$HERE/parse.py" $fmt --cases "$work/cases.txt" "$work/raw.log" || status=$?
exit "$status"
