"""The build's choice of world (``wray.build``): what an app defines, read by
importing it in a child CPython, decides which parts of ``wray:runtime`` its
component exports. componentize-py itself is replaced by a stand-in that
records its command line (one test runs the real one's ``bindings`` command
on the generated world when it is installed). No wasm."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path
from typing import Dict, List

from wray import build

SDK_DIR = Path(__file__).resolve().parent.parent
REPO_WIT = SDK_DIR.parent.parent / "wit"


class Parts(unittest.TestCase):
    def test_each_kind_of_definition_picks_its_parts(self):
        D = build.Defined
        self.assertEqual(build.parts_for(D(functions=["f"])), ["metadata", "functions"])
        self.assertEqual(build.parts_for(D(actors=["A"])), ["metadata", "actors"])
        self.assertEqual(build.parts_for(D(main=True)), ["driver"])
        self.assertEqual(
            build.parts_for(D(["f"], ["A"], True)), ["metadata", "functions", "actors", "driver"]
        )
        self.assertEqual(build.parts_for(D(["f"], [], True)), ["metadata", "functions", "driver"])

    def test_lifecycle_is_never_chosen(self):
        self.assertNotIn("lifecycle", build.parts_for(build.Defined(["f"], ["A"], True)))

    def test_nothing_defined_is_refused_naming_what_is_missing(self):
        with self.assertRaises(SystemExit) as cm:
            build.parts_for(build.Defined(), "empty.py")
        message = str(cm.exception.code)
        for what in ("empty.py", "@wray.remote", "@wray.actor", "@wray.main"):
            self.assertIn(what, message)


class World(unittest.TestCase):
    def test_world_includes_the_part_worlds_in_order(self):
        text = build.world_wit(["driver", "functions", "metadata"], "wray:runtime@0.1.0", "app.py")
        lines = text.splitlines()
        # The package comes first: a comment before it would be a second
        # doc comment of the package, which wit-parser refuses.
        self.assertEqual(lines[0], "package wray:runtime@0.1.0;")
        self.assertIn("world app-exports {", lines)
        includes = [l.strip() for l in lines if l.strip().startswith("include")]
        self.assertEqual(
            includes, ["include part-metadata;", "include part-functions;", "include part-driver;"]
        )

    def test_package_of_the_repository_wit(self):
        self.assertEqual(build.wit_package(REPO_WIT), "wray:runtime@0.1.0")
        self.assertEqual(build.wit_package(REPO_WIT / "runtime.wit"), "wray:runtime@0.1.0")

    def test_stage_wit_copies_and_adds_the_world(self):
        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp) / "wit"
            wit_dir, world = build.stage_wit(REPO_WIT, dest, ["metadata", "actors"], "a.py")
            self.assertEqual(world, "wray:runtime/app-exports")
            self.assertEqual(wit_dir, dest)
            self.assertTrue((dest / "runtime.wit").is_file())
            generated = (dest / build.APP_WORLD_FILE).read_text()
            self.assertIn("include part-actors;", generated)
            self.assertNotIn("include part-functions;", generated)
            # The original directory is untouched.
            self.assertFalse((REPO_WIT / build.APP_WORLD_FILE).exists())

    @unittest.skipUnless(shutil.which("componentize-py"), "componentize-py is not installed")
    def test_componentize_py_accepts_the_generated_world(self):
        with tempfile.TemporaryDirectory() as tmp:
            for parts, want in (
                (["metadata", "functions"], {"metadata.py", "functions.py"}),
                (["driver"], {"driver.py"}),
                (["metadata", "actors", "driver"], {"metadata.py", "actors.py", "driver.py"}),
            ):
                dest = Path(tmp) / "-".join(parts)
                wit_dir, world = build.stage_wit(REPO_WIT, dest / "wit", parts)
                out = dest / "bindings"
                subprocess.run(
                    ["componentize-py", "-d", str(wit_dir), "-w", world, "bindings", str(out)],
                    check=True,
                    capture_output=True,
                )
                got = {p.name for p in (out / "wit_world" / "exports").iterdir()} - {"__init__.py", "__pycache__"}
                self.assertEqual(got, want, parts)


def write_app(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


class Probe(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def probe(self, module: str, files: Dict[str, str], **kw):
        write_app(self.root, files)
        return build.probe(module, self.root, **kw)

    def test_decorators(self):
        d = self.probe(
            "app",
            {
                "app.py": """
                import wray

                @wray.remote
                def add(a: int, b: int) -> int:
                    return a + b

                @wray.remote(num_returns=2)
                def split(xs: list) -> tuple:
                    return xs, xs

                @wray.actor
                class Counter:
                    def incr(self) -> int:
                        return 1

                @wray.main
                def main(args):
                    pass
                """
            },
        )
        self.assertEqual(d, build.Defined(["add", "split"], ["Counter"], True))

    def test_calls_aliases_and_other_modules_of_the_app(self):
        # What the decorators record counts, however the app reaches them:
        # a call instead of a decorator, another name, a module it imports.
        d = self.probe(
            "app",
            {
                "app.py": """
                from wray import remote as r
                import helpers  # noqa: F401  (defines a remote function)

                def _double(x):
                    return 2 * x

                double = r(_double)
                """,
                "helpers.py": """
                import wray

                @wray.remote
                def helper(x):
                    return x
                """,
            },
        )
        self.assertEqual(d, build.Defined(["_double", "helper"], [], False))

    def test_actor_only_package(self):
        d = self.probe(
            "pkg",
            {
                "pkg/__init__.py": "from .model import Model  # noqa: F401\n",
                "pkg/model.py": """
                import wray

                @wray.actor
                class Model:
                    pass
                """,
            },
        )
        self.assertEqual(d, build.Defined([], ["Model"], False))

    def test_other_components_references_are_not_definitions(self):
        d = self.probe(
            "app",
            {
                "app.py": """
                import wray

                make_array = wray.function("tree_reduce/make_array")
                Counter = wray.actor_class("counter/Counter")

                @wray.main
                def main(args):
                    pass
                """
            },
        )
        self.assertEqual(d, build.Defined([], [], True))

    def test_nothing_defined(self):
        d = self.probe("app", {"app.py": "import wray\n\ndef plain(x):\n    return x\n"})
        self.assertEqual(d, build.Defined())

    def test_python_path_directories(self):
        extra = self.root / "extra"
        write_app(extra, {"lib.py": "import wray\n\n@wray.remote\ndef f():\n    return 1\n"})
        d = self.probe("app", {"app.py": "import lib  # noqa: F401\n"}, python_path=[extra])
        self.assertEqual(d.functions, ["f"])

    def test_only_the_apps_directories_and_the_stdlib_are_on_the_path(self):
        # As in the component: the app's directory, the SDK and -p; no
        # site-packages, no current directory, no PYTHONPATH.
        d = self.probe(
            "app",
            {
                "app.py": """
                import sys
                import wray

                extra = [p for p in sys.path if "site-packages" in p or p in ("", ".")]
                assert not extra, extra

                @wray.main
                def main():
                    pass
                """
            },
        )
        self.assertTrue(d.main)

    def test_a_failed_import_is_a_probe_error_with_its_message(self):
        with self.assertRaises(build.ProbeError) as cm:
            self.probe("app", {"app.py": "raise ImportError('only inside the component')\n"})
        self.assertIn("only inside the component", str(cm.exception))

    def test_an_exit_at_import_is_a_probe_error(self):
        with self.assertRaises(build.ProbeError):
            self.probe("app", {"app.py": "import sys\nsys.exit(0)\n"})

    def test_no_bytecode_is_left_beside_the_app(self):
        self.probe("app", {"app.py": "import helpers\n", "helpers.py": "X = 1\n"})
        self.assertFalse((self.root / "__pycache__").exists())


def run_python(code: str) -> subprocess.CompletedProcess:
    """Runs ``code`` in a child CPython in the SDK's directory (so
    ``tests.fakehost`` imports), writing no bytecode."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=SDK_DIR,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"),
    )


class FakeComponentizePy:
    """Stands in for componentize-py: records the command line and writes
    the output file."""

    def __init__(self, tmp: Path):
        self.log = tmp / "argv.txt"
        self.script = tmp / "fake_componentize_py.py"
        self.script.write_text(
            "import sys\n"
            f"open({str(self.log)!r}, 'w').write('\\n'.join(sys.argv[1:]))\n"
            "out = sys.argv[sys.argv.index('-o') + 1]\n"
            "open(out, 'wb').write(b'\\0asm')\n"
            # The WIT directory is the staging's; check it while it exists.
            "d = sys.argv[sys.argv.index('-d') + 1]\n"
            "import os\n"
            f"open({str(self.log)!r} + '.wit', 'w').write('\\n'.join(sorted(os.listdir(d))) if os.path.isdir(d) else d)\n"
            # So is the entry module, in the first directory of the path.
            "entry = os.path.join(sys.argv[sys.argv.index('-p') + 1], '_wray_entry.py')\n"
            f"open({str(self.log)!r} + '.entry.py', 'w').write(open(entry).read() if os.path.exists(entry) else '')\n"
        )

    def command(self) -> List[str]:
        return [sys.executable, str(self.script)]

    def argv(self) -> List[str]:
        return self.log.read_text().split("\n")

    def wit_files(self) -> List[str]:
        return Path(str(self.log) + ".wit").read_text().split("\n")

    def entry(self) -> str:
        return Path(str(self.log) + ".entry.py").read_text()


class Build(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)
        self.fake = FakeComponentizePy(self.root)
        self._saved = build.componentize_py_command
        build.componentize_py_command = self.fake.command

    def tearDown(self):
        build.componentize_py_command = self._saved
        self._tmp.cleanup()

    def run_build(self, text: str, **kw) -> str:
        app = self.root / "app" / "app.py"
        write_app(app.parent, {"app.py": text})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            build.build(app, self.root / "out" / "app.wasm", wit=REPO_WIT, **kw)
        return err.getvalue()

    def world(self) -> str:
        argv = self.fake.argv()
        return argv[argv.index("-w") + 1]

    def test_the_generated_world_is_targeted(self):
        log = self.run_build("import wray\n\n@wray.remote\ndef f():\n    return 1\n")
        self.assertEqual(self.world(), "wray:runtime/app-exports")
        self.assertIn(build.APP_WORLD_FILE, self.fake.wit_files())
        self.assertIn("runtime.wit", self.fake.wit_files())
        self.assertIn("exporting metadata, functions", log)

    def test_an_explicit_world_wins(self):
        self.run_build("import wray\n\n@wray.remote\ndef f():\n    return 1\n", world="wray:runtime/guest")
        self.assertEqual(self.world(), "wray:runtime/guest")
        argv = self.fake.argv()
        self.assertEqual(argv[argv.index("-d") + 1], str(REPO_WIT))

    def test_an_explicit_world_skips_the_probe(self):
        # Even an app that defines nothing (or cannot be imported here).
        self.run_build("raise ImportError('not here')\n", world="library")
        self.assertEqual(self.world(), "library")

    def test_nothing_defined_fails_the_build(self):
        with self.assertRaises(SystemExit) as cm:
            self.run_build("import wray\n")
        self.assertIn("defines no remote function", str(cm.exception.code))
        self.assertFalse(self.fake.log.exists())

    def test_an_app_that_cannot_be_imported_falls_back_to_every_part(self):
        log = self.run_build("raise ImportError('only inside the component')\n")
        self.assertEqual(self.world(), build.WORLD)
        self.assertIn("warning: cannot tell what app.py defines", log)
        self.assertIn("only inside the component", log)

    def test_the_entry_does_the_first_calls_work_before_the_snapshot(self):
        # componentize-py snapshots the interpreter after importing the
        # entry module; what the entry leaves undone, every fresh instance
        # redoes. Here: which parameters are bytes, with a hint naming a
        # class defined after the function.
        self.run_build(
            "import wray\n\n@wray.remote\ndef f(data: bytes, later: 'Later') -> int:\n"
            "    return len(data)\n\nclass Later:\n    pass\n"
        )
        code = (
            "from tests import fakehost\n"
            "fakehost.install()\n"
            "import sys\n"
            f"sys.path.insert(0, {str(self.root / 'app')!r})\n"
            + self.fake.entry()
            + "\nfrom wray import _api\nprint(_api.functions['f']._sig._bytes_idx)\n"
        )
        done = run_python(code)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.strip(), "(0,)")

    def test_command_line_world_option(self):
        app = self.root / "app" / "app.py"
        write_app(app.parent, {"app.py": "import wray\n\n@wray.main\ndef main():\n    pass\n"})
        with contextlib.redirect_stderr(io.StringIO()):
            build.main([str(app), "-o", str(self.root / "a.wasm"), "--wit", str(REPO_WIT), "-q"])
        self.assertEqual(self.world(), "wray:runtime/app-exports")
        with contextlib.redirect_stderr(io.StringIO()):
            build.main([str(app), "-o", str(self.root / "a.wasm"), "--wit", str(REPO_WIT), "-q", "--world", "guest"])
        self.assertEqual(self.world(), "guest")


class ExportsOfAPartialWorld(unittest.TestCase):
    def test_exports_import_without_the_parts_the_world_leaves_out(self):
        # componentize-py generates protocols only for the world's parts:
        # the SDK's classes of the others derive from object.
        code = (
            "from tests import fakehost\n"
            "fakehost.install(exports=('Driver',))\n"
            "import wray._exports as x\n"
            "print(x.Metadata.__mro__[1].__name__, x.Functions.__mro__[1].__name__,"
            " x.ActorInstance.__mro__[1].__name__, x.Driver.__mro__[1].__name__)\n"
        )
        done = run_python(code)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.split(), ["object", "object", "object", "Driver"])


if __name__ == "__main__":
    unittest.main()
