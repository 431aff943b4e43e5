"""Tests for parse.py. Run: python3 -m unittest bench/ray/test_parse.py
(or `python3 -m unittest test_parse` from inside bench/ray)."""

import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parse  # noqa: E402

# Lines as `ray microbenchmark` (Ray 2.60.0) printed them on this machine,
# interleaved with the noise that shares the stream when stdout and stderr go
# to one file.
SAMPLE = """\
Tip: set TESTS_TO_RUN='pattern' to run a subset of benchmarks
2026-11-21 05:31:39,404\tWARNING authentication_token_setup.py:85 -- Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to opt out.
2026-11-21 05:31:43,881\tINFO worker.py:2029 -- Started a local Ray instance. View the dashboard at \x1b[1m\x1b[32mhttp://127.0.0.1:8265 \x1b[39m\x1b[22m
single client get calls (Plasma Store) per second 16942.9 +- 479.62
single client put gigabytes per second 2.71 +- 0.35
1:1 actor calls sync per second 1433.5 +- 26.01
n:n actor calls with arg async per second 2873.12 +- 95.0
[2026-11-21 05:32:03,669 E 28704 29114] core_worker.cc:2488: Failed to register actor. Error message: SchedulingCancelled: Actor creation cancelled. actor_id=c9ff53e33869f6bf43235d1e01000000
placement group create/removal per second 512.27 +- 9.7
I1121 05:32:11.497329   29984 fork_posix.cc:71] Other threads are currently calling into gRPC, skipping fork() handlers
SIGTERM handler is not set because current thread is not the main thread.
client: put gigabytes per second 0.05 +- 0.0
client: 1:1 actor calls concurrent per second 610.41 +- 12.33
"""


class ParseLineTest(unittest.TestCase):
    def test_plain_case(self):
        self.assertEqual(
            parse.parse_line("single client get calls (Plasma Store) per second 16942.9 +- 479.62\n"),
            {
                "case": "single client get calls (Plasma Store)",
                "rate": 16942.9,
                "sd": 479.62,
                "unit": "per second",
            },
        )

    def test_gigabytes_unit(self):
        rec = parse.parse_line("multi client put gigabytes per second 3.4 +- 0.12")
        self.assertEqual(rec["case"], "multi client put gigabytes")
        self.assertEqual(rec["unit"], "GB per second")
        self.assertEqual(rec["rate"], 3.4)
        rec = parse.parse_line("client: put gigabytes per second 0.05 +- 0.0")
        self.assertEqual(rec["unit"], "GB per second")

    def test_names_with_colons_slashes_parens(self):
        for name in [
            "1:n async-actor calls async",
            "placement group create/removal",
            "client: tasks and put batch",
            "single client get object containing 10k refs",
        ]:
            rec = parse.parse_line(name + " per second 12.0 +- 1.5")
            self.assertEqual(rec["case"], name)

    def test_number_forms(self):
        self.assertEqual(parse.parse_line("x per second 1e-05 +- 0")["rate"], 1e-05)
        self.assertEqual(parse.parse_line("x per second 12 +- 3")["sd"], 3.0)
        rec = parse.parse_line("x per second np.float64(2.5) +- np.float64(0.25)")
        self.assertEqual((rec["rate"], rec["sd"]), (2.5, 0.25))
        self.assertIsNotNone(parse.parse_line("x per second 3.0 +- 0.1\r\n"))

    def test_noise_is_ignored(self):
        for line in [
            "Tip: set TESTS_TO_RUN='pattern' to run a subset of benchmarks",
            "SIGTERM handler is not set because current thread is not the main thread.",
            "per second 1.0 +- 2.0",
            "something per second 1.0",
            "",
        ]:
            self.assertIsNone(parse.parse_line(line), line)


class ParseLinesTest(unittest.TestCase):
    def test_sample(self):
        recs = parse.parse_lines(io.StringIO(SAMPLE))
        self.assertEqual(
            [r["case"] for r in recs],
            [
                "single client get calls (Plasma Store)",
                "single client put gigabytes",
                "1:1 actor calls sync",
                "n:n actor calls with arg async",
                "placement group create/removal",
                "client: put gigabytes",
                "client: 1:1 actor calls concurrent",
            ],
        )

    def test_markers_keep_only_the_named_case(self):
        text = (
            "single client get calls (Plasma Store) per second 100.0 +- 1.0\n"
            "=== run.sh case: 1:1 actor calls sync\n"
            "1:1 actor calls sync per second 1400.0 +- 20.0\n"
            "client: 1:1 actor calls sync per second 300.0 +- 5.0\n"
            "=== run.sh case: client: 1:1 actor calls sync\n"
            "client: 1:1 actor calls sync per second 310.0 +- 6.0\n"
        )
        recs = parse.parse_lines(io.StringIO(text))
        self.assertEqual(
            [(r["case"], r["rate"]) for r in recs],
            [
                ("single client get calls (Plasma Store)", 100.0),
                ("1:1 actor calls sync", 1400.0),
                ("client: 1:1 actor calls sync", 310.0),
            ],
        )


class SourceTest(unittest.TestCase):
    def test_case_names_in_source(self):
        src = '''
    results += timeit("single client get calls (Plasma Store)", get_small)
    results += timeit(
        "single client get object containing 10k refs", get_containing_object_ref
    )
    results += timeit("1:n actor calls async", actor_async_direct, n * len(actors))
    results += await asyncio_timeit('async case', f)
def timeit(name, fn, multiplier=1):
'''
        self.assertEqual(
            parse.case_names_in_source(src),
            [
                "single client get calls (Plasma Store)",
                "single client get object containing 10k refs",
                "1:n actor calls async",
                "async case",
            ],
        )


class CliTest(unittest.TestCase):
    def _run(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            rc = parse.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.raw = os.path.join(self.dir.name, "raw.log")
        with open(self.raw, "w") as f:
            f.write(SAMPLE)
        self.cases = os.path.join(self.dir.name, "cases.txt")
        with open(self.cases, "w") as f:
            f.write("single client put gigabytes\n1:1 actor calls sync\nmulti client tasks async\n")

    def tearDown(self):
        self.dir.cleanup()

    def test_json(self):
        rc, out, _ = self._run("--json", self.raw)
        self.assertEqual(rc, 0)
        objs = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(len(objs), 7)
        self.assertEqual(set(objs[0]), {"case", "rate", "sd", "unit"})
        self.assertEqual(objs[1], {
            "case": "single client put gigabytes", "rate": 2.71, "sd": 0.35,
            "unit": "GB per second",
        })

    def test_tsv(self):
        rc, out, _ = self._run(self.raw)
        lines = out.splitlines()
        self.assertEqual(lines[0], "case\trate\tsd\tunit")
        self.assertEqual(lines[1], "single client get calls (Plasma Store)\t16942.9\t479.62\tper second")
        rc, out, _ = self._run("--no-header", self.raw)
        self.assertEqual(len(out.splitlines()), 7)

    def test_cases_filter_and_missing(self):
        rc, out, err = self._run("--json", "--cases", self.cases, self.raw)
        self.assertEqual(rc, 3)
        self.assertEqual(
            [json.loads(line)["case"] for line in out.splitlines()],
            ["single client put gigabytes", "1:1 actor calls sync"],
        )
        self.assertIn("multi client tasks async", err)
        rc, out, _ = self._run("--cases", self.cases, "--missing", self.raw)
        self.assertEqual((rc, out), (0, "multi client tasks async\n"))


if __name__ == "__main__":
    unittest.main()
