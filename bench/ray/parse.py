#!/usr/bin/env python3
"""Turn `ray microbenchmark` output (Ray 2.60) into JSON lines or a TSV table.

Ray prints one line per case from `timeit` in
ray/_private/ray_microbenchmark_helpers.py:

    print(name, "per second", round(mean, 2), "+-", round(sd, 2))

e.g. ``single client get calls (Plasma Store) per second 16942.9 +- 479.62``.
Everything else on the stream (the "Tip:" line, Ray's log lines, gRPC noise)
is ignored.

run.sh --per-case runs one `ray microbenchmark` per case (TESTS_TO_RUN is a
substring match, so a run may print other cases too) and writes a marker line
``=== run.sh case: NAME`` before each run's output; after such a marker only
results for exactly NAME are kept, so each case's result comes from its own run.

Ray always prints the unit "per second"; for the cases whose name contains
"gigabytes" the rate is multiplied by the GB moved per call (0.8 or 8), so we
report their unit as "GB per second".

Usage:
    parse.py [--json] [--no-header] [--cases FILE [--missing]] [INPUT]...
    parse.py --list-cases SOURCE.py...

stdlib only.
"""

import argparse
import json
import math
import re
import sys

_NUM = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)"
# Tolerate numpy reprs like np.float64(1.5) in case a numpy version prints them.
_VAL = r"(?:np\.float64\((?P<{g}a>" + _NUM + r")\)|(?P<{g}b>" + _NUM + r"))"
_LINE_RE = re.compile(
    r"^(?P<case>\S.*?)\s+(?P<unit>per second)\s+"
    + _VAL.format(g="rate")
    + r"\s+\+-\s+"
    + _VAL.format(g="sd")
    + r"\s*$"
)
_MARKER_RE = re.compile(r"^=== run\.sh case: (?P<name>.*?)\s*$")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A timeit(...) / asyncio_timeit(...) call whose first argument is a literal.
_TIMEIT_RE = re.compile(r"""\b(?:asyncio_)?timeit\(\s*(?P<q>["'])(?P<name>.+?)(?P=q)""")


def unit_for(case, printed_unit="per second"):
    """The unit of a case's rate (Ray prints "per second" for all)."""
    if "gigabytes" in case:
        return "GB " + printed_unit
    return printed_unit


def parse_line(line):
    """Return {"case", "rate", "sd", "unit"} for a result line, else None."""
    line = _ANSI_RE.sub("", line).strip("\r\n").strip()
    m = _LINE_RE.match(line)
    if not m:
        return None
    case = m.group("case").strip()
    rate = float(m.group("ratea") or m.group("rateb"))
    sd = float(m.group("sda") or m.group("sdb"))
    return {"case": case, "rate": rate, "sd": sd, "unit": unit_for(case, m.group("unit"))}


def parse_lines(lines):
    """All result records in `lines`, in order (see the marker rule above)."""
    out = []
    section = None
    for line in lines:
        m = _MARKER_RE.match(line.rstrip("\r\n"))
        if m:
            section = m.group("name")
            continue
        rec = parse_line(line)
        if rec is None:
            continue
        if section is not None and rec["case"] != section:
            continue
        out.append(rec)
    return out


def case_names_in_source(text):
    """Case names passed as literals to timeit()/asyncio_timeit() in `text`."""
    return [m.group("name") for m in _TIMEIT_RE.finditer(text)]


def _fmt_num(x):
    if math.isnan(x) or math.isinf(x):
        return repr(x)
    return repr(float(x))


def to_json_line(rec):
    return json.dumps(
        {"case": rec["case"], "rate": rec["rate"], "sd": rec["sd"], "unit": rec["unit"]}
    )


def to_tsv_line(rec):
    return "\t".join([rec["case"], _fmt_num(rec["rate"]), _fmt_num(rec["sd"]), rec["unit"]])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", nargs="*", help="raw output file(s) (default: stdin)")
    ap.add_argument("--json", action="store_true", help="one JSON object per line")
    ap.add_argument("--no-header", action="store_true", help="TSV without header")
    ap.add_argument(
        "--cases", metavar="FILE",
        help="file of case names, one a line: keep only those, report the ones "
        "with no result on stderr and exit 3 if any",
    )
    ap.add_argument(
        "--missing", action="store_true",
        help="with --cases: print only the names of the cases with no result",
    )
    ap.add_argument(
        "--list-cases", action="store_true",
        help="treat inputs as Python sources, print the case names in them",
    )
    args = ap.parse_args(argv)

    if args.list_cases:
        for path in args.input:
            with open(path, encoding="utf-8") as f:
                for name in case_names_in_source(f.read()):
                    print(name)
        return 0

    if args.input:
        lines = []
        for path in args.input:
            with open(path, encoding="utf-8", errors="replace") as f:
                lines.extend(f.readlines())
    else:
        lines = sys.stdin.readlines()

    recs = parse_lines(lines)
    expected = None
    if args.cases:
        with open(args.cases, encoding="utf-8") as f:
            expected = [ln.rstrip("\r\n") for ln in f if ln.strip()]
        wanted = set(expected)
        recs = [r for r in recs if r["case"] in wanted]

    if args.missing:
        if expected is None:
            ap.error("--missing needs --cases")
        got = {r["case"] for r in recs}
        for n in expected:
            if n not in got:
                print(n)
        return 0

    if args.json:
        for r in recs:
            print(to_json_line(r))
    else:
        if not args.no_header:
            print("case\trate\tsd\tunit")
        for r in recs:
            print(to_tsv_line(r))

    if expected is not None:
        got = {r["case"] for r in recs}
        missing = [n for n in expected if n not in got]
        for n in missing:
            print("parse.py: no result for case: %s" % n, file=sys.stderr)
        if missing:
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
