"""The SDK end to end against a fake host (tests/fakehost.py): submission,
the exports' dispatch, errors, actors, describe, the driver. No wasm."""

from __future__ import annotations

import io
import json
import sys
import unittest
from typing import List

from tests import fakehost

HOST = fakehost.install()

import wray  # noqa: E402
from wray import _api, _exports, _refs  # noqa: E402
from wray._refs import ObjectRef  # noqa: E402

F = fakehost


@wray.remote
def add(a: int, b: int) -> int:
    return a + b


@wray.remote(num_returns=2, num_cpus=0.5, resources={"accel": 1}, timeout_ms=1500)
def split(xs: list[int]) -> tuple[list[int], list[int]]:
    h = len(xs) // 2
    return xs[:h], xs[h:]


@wray.remote
def fail(x: int) -> int:
    raise ValueError(f"bad input {x}")


@wray.remote
def count(xs: list) -> int:
    return len(xs)


@wray.remote
def blob(n: int) -> bytes:
    return bytes(range(n))


@wray.remote
def length(data: bytes) -> int:
    assert isinstance(data, bytes), type(data)
    return len(data)


@wray.remote
def tagged(data: bytes, tag: "Tag") -> int:
    # `Tag` is defined below: its hint resolves only once the module is
    # imported, as in an app whose functions name classes defined later.
    assert isinstance(data, bytes), type(data)
    return len(data) + (tag.n if isinstance(tag, Tag) else 0)


class Tag:
    def __init__(self, n: int = 0):
        self.n = n


@wray.actor
class Sink:
    def take(self, data: bytes) -> int:
        assert isinstance(data, bytes), type(data)
        return len(data)


@wray.remote
def wrap(x: int) -> list:
    return [wray.put(x)]


@wray.remote
def nested_get(r: list) -> int:
    return wray.get(r[0]) + 1


@wray.remote
def wraps_error(r: list) -> int:
    try:
        return wray.get(r[0])
    except wray.TaskError as e:
        raise RuntimeError("wrapped") from e


@wray.remote
def kw(a: int, b: int = 10, *, c: int = 100) -> int:
    return a + b + c


@wray.remote
def exits() -> None:
    sys.exit(3)


@wray.actor(num_gpus=1)
class Counter:
    def __init__(self, start: int = 0):
        self.n = start

    def increment(self, by: int = 1) -> int:
        self.n += by
        return self.n

    @wray.method(num_returns=2)
    def both(self) -> tuple[int, int]:
        return self.n, -self.n

    def crash(self) -> None:
        raise RuntimeError("actor crashed")

    def _private(self) -> None:
        pass


@wray.actor(detached=True)
class Detached:
    pass


@wray.actor
class Plain:
    def ping(self) -> str:
        return "pong"


@wray.actor(max_restarts=2, lifetime="detached")
class Resilient:
    def ping(self) -> str:
        return "pong"


@wray.actor
class Mirror:
    def __init__(self):
        self.born_as = wray.current_actor_id()
        self.total = 0

    def me(self) -> list:
        return [wray.current_actor_id(), self.born_as]

    def add(self, k: int) -> int:
        self.total += k
        return self.total

    def call_me_back(self, k: int) -> wray.ObjectRef:
        return add_back.remote(wray.current_actor(), k)


@wray.remote
def add_back(mirror: wray.ActorHandle, k: int) -> int:
    return wray.get(mirror.add.remote(k))


@wray.remote
def actor_of_task() -> str:
    return str(wray.current_actor_id())


@wray.remote
def bump_named(name: str) -> int:
    return wray.get(wray.get_actor(name).increment.remote(by=2))


driver_ran: List[List[str]] = []


@wray.main
def main(args: list[str]) -> None:
    driver_ran.append(args)
    if args == ["fail"]:
        raise RuntimeError("driver failed")
    if args == ["exit"]:
        sys.exit("usage: demo <dir>")
    print("driver says hi")


class Sdk(unittest.TestCase):
    def setUp(self):
        HOST.reset()

    def test_remote_and_get(self):
        x = add.remote(1, 2)
        self.assertIsInstance(x, ObjectRef)
        y = add.remote(x, 10)
        self.assertEqual(wray.get(y), 13)
        self.assertEqual(wray.get([x, y]), [3, 13])
        self.assertEqual(x.get(), 3)
        # The dependency went as an object argument, the int as JSON, and
        # results were asked for in json.
        _, name, args, opts = HOST.submitted[1]
        self.assertEqual(name, "add")
        self.assertIsInstance(args[0], F.Arg_Object)
        self.assertEqual(args[1].value.codec, F.Codec.JSON)
        self.assertEqual(args[1].value.data, b"10")
        self.assertEqual(opts.result_codec, F.Codec.JSON)
        self.assertEqual(opts.num_returns, 1)
        self.assertIsNone(opts.resources.num_cpus)  # the declared ones apply

    def test_local_call_still_works(self):
        self.assertEqual(add(2, 3), 5)
        self.assertEqual(Counter(5).increment(), 6)

    def test_num_returns_gives_a_list(self):
        a, b = split.remote([1, 2, 3, 4])
        self.assertEqual(wray.get([a, b]), [[1, 2], [3, 4]])

    def test_kwargs_and_defaults_bind_positionally(self):
        self.assertEqual(wray.get(kw.remote(1)), 111)
        self.assertEqual(wray.get(kw.remote(1, c=5, b=2)), 8)
        with self.assertRaises(TypeError):
            kw.remote()

    def test_options_per_call(self):
        wray.get(add.options(num_cpus=2, num_gpus=0.5, resources={"x": 2}, max_memory=1 << 20).remote(1, 1))
        opts = HOST.submitted[-1][3]
        self.assertEqual(opts.resources.num_cpus, 2.0)
        self.assertEqual(opts.resources.num_gpus, 0.5)
        self.assertEqual(opts.resources.custom, [("x", 2.0)])
        self.assertEqual(opts.limits.max_memory, 1 << 20)
        with self.assertRaises(TypeError):
            add.options(bogus=1)
        with self.assertRaises(ValueError):
            add.options(num_returns=2)

    def test_exception_becomes_application_error_with_traceback(self):
        r = fail.remote(7)
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(r)
        e = cm.exception
        self.assertEqual(e.kind, "application")
        self.assertEqual(e.function, "fail")
        self.assertTrue(e.message.startswith("ValueError: bad input 7\n"), e.message)
        self.assertIn("Traceback (most recent call last):", e.message)
        self.assertIn('in fail\n    raise ValueError(f"bad input {x}")', e.message)
        # The traceback starts at the user's function, not in the SDK.
        self.assertNotIn("_exports.py", e.message)
        self.assertNotIn("_api.py", e.message)
        self.assertEqual(len(e.task), 32)

    def test_errors_travel_through_dependencies_unchanged(self):
        r = fail.remote(1)
        s = add.remote(r, 1)
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(s)
        self.assertEqual(cm.exception.function, "fail")
        # A task whose get raised it, uncaught, fails naming it as its cause.
        t = nested_get.remote([r])
        with self.assertRaises(wray.TaskError) as cm2:
            wray.get(t)
        outer = cm2.exception
        self.assertEqual((outer.kind, outer.function), ("application", "nested_get"))
        self.assertIn("TaskError: task ", outer.message)
        self.assertEqual(outer.causes, [cm.exception])
        self.assertEqual(outer.root, cm.exception)
        self.assertEqual(cm.exception.root, cm.exception)

    def test_an_exception_raised_from_a_task_error_names_it_as_its_cause(self):
        r = fail.remote(2)
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(wraps_error.remote([r]))
        e = cm.exception
        self.assertTrue(e.message.startswith("RuntimeError: wrapped"), e.message)
        self.assertEqual([c.function for c in e.causes], ["fail"])

    def test_sys_exit_in_a_task_is_an_error_not_a_trap(self):
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(exits.remote())
        self.assertTrue(cm.exception.message.startswith("SystemExit: 3"))

    def test_rkyv_argument_is_invalid_argument_naming_both_codecs(self):
        with self.assertRaises(F.Err) as cm:
            _exports.Functions().invoke("count", [F.Arg_Value(F.Payload(F.Codec.RKYV, b"wry\x01", []))], None)
        e = cm.exception.value
        self.assertEqual(e.kind, F.ErrorKind.INVALID_ARGUMENT)
        self.assertEqual(e.function, "count")
        self.assertEqual(e.message, "`count` reads json arguments, argument 0 is rkyv")

    def test_bad_json_and_wrong_arity(self):
        with self.assertRaises(F.Err) as cm:
            _exports.Functions().invoke("count", [F.Arg_Value(F.Payload(F.Codec.JSON, b"[1,", []))], None)
        self.assertEqual(cm.exception.value.kind, F.ErrorKind.INVALID_ARGUMENT)
        with self.assertRaises(F.Err) as cm:
            _exports.Functions().invoke("count", [], None)
        self.assertEqual(cm.exception.value.message, "count takes 1 argument(s), got 0")

    def test_unknown_function_class_and_method_are_not_found(self):
        with self.assertRaises(F.Err) as cm:
            _exports.Functions().invoke("nope", [], None)
        self.assertEqual(cm.exception.value.kind, F.ErrorKind.NOT_FOUND)
        with self.assertRaises(F.Err) as cm:
            _exports.ActorInstance.create("Nope", [])
        self.assertEqual(cm.exception.value.kind, F.ErrorKind.NOT_FOUND)
        inst = _exports.ActorInstance.create("Counter", [F.Arg_Value(F.Payload(F.Codec.JSON, b"1", []))])
        with self.assertRaises(F.Err) as cm:
            inst.call("nope", [], None)
        self.assertEqual(cm.exception.value.kind, F.ErrorKind.NOT_FOUND)
        self.assertEqual(cm.exception.value.function, "Counter.nope")
        with self.assertRaises(F.Err):
            inst.call("_private", [], None)

    def test_refs_inside_values(self):
        r = wray.put(41)
        n = count.remote([r, r])
        self.assertEqual(wray.get(n), 2)
        args = HOST.submitted[-1][2]
        self.assertEqual(json.loads(args[0].value.data), [{"$object": r.hex()}] * 2)
        self.assertEqual([F.key(o) for o in args[0].value.refs], [r._key])
        # A returned ref comes back live.
        inner = wray.get(wrap.remote(5))[0]
        self.assertIsInstance(inner, ObjectRef)
        self.assertEqual(wray.get(inner), 5)

    def test_returned_refs_live_until_the_next_export(self):
        w = wrap.remote(9)
        payload = HOST.store[w._key]
        inner_key = F.key(payload.refs[0])
        self.assertNotIn(inner_key, HOST.released)
        self.assertEqual(_refs.count(inner_key), 1)  # deferred
        _exports.Lifecycle().init()  # any export flushes
        self.assertIn(inner_key, HOST.released)

    def test_bytes(self):
        # A local Python caller sends bytes raw; results come back as JSON
        # arrays unless raw was asked for.
        self.assertEqual(wray.get(length.remote(b"abc")), 3)
        self.assertEqual(HOST.submitted[-1][2][0].value.codec, F.Codec.RAW)
        self.assertEqual(wray.get(blob.remote(3)), [0, 1, 2])
        raw = _exports.Functions().invoke("blob", [F.Arg_Value(F.Payload(F.Codec.JSON, b"3", []))], F.Codec.RAW)
        self.assertEqual((raw[0].codec, raw[0].data), (F.Codec.RAW, b"\x00\x01\x02"))
        # A JSON array reaching a bytes parameter becomes bytes.
        out = _exports.Functions().invoke("length", [F.Arg_Value(F.Payload(F.Codec.JSON, b"[1,2]", []))], None)
        self.assertEqual(out[0].data, b"2")
        r = wray.put(b"\x00\x01")
        self.assertEqual(wray.get(r), b"\x00\x01")

    def test_prepare_answers_before_the_first_call_what_a_fresh_instance_would_redo(self):
        # The build's entry calls prepare() after importing the app, so the
        # snapshot every fresh instance starts from holds which parameters
        # are bytes; a call after it must not read type hints again.
        import typing

        sigs = [_api.functions["tagged"]._sig, _api.actor_classes["Sink"]._methods["take"].sig]
        for sig in sigs:
            sig._bytes_idx = None
        _api.prepare()
        self.assertEqual([sig._bytes_idx for sig in sigs], [(0,), (0,)])
        saved = typing.get_type_hints

        def refuse(*a, **k):
            raise AssertionError("type hints read after prepare()")

        typing.get_type_hints = refuse
        try:
            out = _exports.Functions().invoke(
                "tagged",
                [F.Arg_Value(F.Payload(F.Codec.JSON, b"[1,2,3]", [])), F.Arg_Value(F.Payload(F.Codec.JSON, b"{}", []))],
                None,
            )
            sink = _exports.ActorInstance(_api.actor_classes["Sink"], Sink())
            took = sink.call("take", [F.Arg_Value(F.Payload(F.Codec.JSON, b"[7,8]", []))], None)
        finally:
            typing.get_type_hints = saved
        # The JSON arrays reached the functions as bytes.
        self.assertEqual((out[0].data, took[0].data), (b"3", b"2"))

    def test_put_get_large_uses_put_bytes(self):
        big = "x" * (200 << 10)
        r = wray.put(big)
        self.assertEqual(HOST.put_bytes_calls, 1)
        self.assertEqual(wray.get(r), big)

    def test_objects_release_when_collected(self):
        r = wray.put(1)
        key = r._key
        del r
        self.assertNotIn(key, HOST.released)
        wray.put(2)  # the next host call tells the host
        self.assertIn(key, HOST.released)
        s = wray.put(3)
        skey = s._key
        del s
        _exports.Lifecycle().init()  # so does every export
        self.assertIn(skey, HOST.released)

    def test_wait(self):
        a = add.remote(1, 1)
        missing = ObjectRef((7, 7, 7))
        ready, not_ready = wray.wait([missing, a], num_returns=1, timeout=0)
        self.assertEqual(ready, [a])
        self.assertEqual(not_ready, [missing])
        self.assertEqual(wray.wait([]), ([], []))

    def test_get_timeout_and_rkyv_objects(self):
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(ObjectRef((7, 7, 8)), timeout=0.01)
        self.assertEqual(cm.exception.kind, "timeout")
        self.assertEqual(HOST.current, F.TaskId(0, 0xD))
        o = F.put(F.Payload(F.Codec.RKYV, b"wry\x01", []))
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(ObjectRef(F.key(o)))
        self.assertEqual(cm.exception.kind, "invalid-argument")
        self.assertIn("is rkyv", cm.exception.message)

    def test_actors(self):
        c = Counter.remote(10)
        self.assertIsInstance(c, wray.ActorHandle)
        r1 = c.increment.remote()
        r2 = c.increment.remote(by=5)
        self.assertEqual(wray.get([r1, r2]), [11, 16])
        a, b = c.both.remote()
        self.assertEqual(wray.get([a, b]), [16, -16])
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(c.crash.remote())
        self.assertEqual(cm.exception.function, "Counter.crash")
        self.assertIn("RuntimeError: actor crashed", cm.exception.message)
        with self.assertRaises(AttributeError):
            c.nope
        with self.assertRaises(AttributeError):
            c._private
        p = Plain.remote()
        self.assertEqual(wray.get(p.ping.remote()), "pong")
        self.assertTrue(wray.kill(p))
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(p.ping.remote())
        self.assertEqual(cm.exception.kind, "actor-died")

    def test_an_actor_reads_its_own_id_and_calls_itself_back(self):
        m = Mirror.remote()
        self.assertEqual(wray.get(m.me.remote()), [m.hex(), m.hex()])
        self.assertEqual(wray.get(actor_of_task.remote()), "None")
        self.assertIsNone(wray.current_actor_id())
        self.assertIsNone(wray.current_actor())
        back = wray.get(m.call_me_back.remote(5))
        self.assertEqual(wray.get(back), 5)
        self.assertEqual(wray.get(m.add.remote(1)), 6)

    def test_actor_options_and_handles_in_values(self):
        c = Counter.options(num_cpus=1, detached=True).remote()
        opts = HOST.submitted[-1][3]
        self.assertTrue(opts.detached)
        self.assertEqual(opts.resources.num_cpus, 1.0)
        Detached.remote()
        self.assertTrue(HOST.submitted[-1][3].detached)
        n = count.remote([c])
        self.assertEqual(wray.get(n), 1)
        args = HOST.submitted[-1][2]
        self.assertEqual(json.loads(args[0].value.data), [{"$actor": c.hex()}])
        self.assertEqual([F.key(o) for o in args[0].value.refs], [(c._actor[0], c._actor[1], 1)])

    def test_actor_name_lifetime_and_restarts_reach_the_host(self):
        c = Counter.options(
            name="keeper", lifetime="detached", max_restarts=1, max_task_retries=3, num_cpus=0.5
        ).remote(5)
        opts, actor = HOST.submitted[-1][3], HOST.actor_options[-1]
        self.assertTrue(opts.detached)
        self.assertEqual(opts.resources.num_cpus, 0.5)
        self.assertEqual((actor.name, actor.max_restarts, actor.max_task_retries), ("keeper", 1, 3))
        # The name was read back once given out: this actor holds it.
        self.assertEqual(HOST.lookups, [("keeper", "Counter")])
        self.assertEqual(wray.get(c.increment.remote()), 6)
        # -1 is Ray's "no limit": the WIT's largest u32.
        Plain.options(max_restarts=-1).remote()
        self.assertEqual(HOST.actor_options[-1].max_restarts, (1 << 32) - 1)
        self.assertIsNone(HOST.actor_options[-1].name)
        # Declared on the class: every creation says it.
        Resilient.remote()
        self.assertEqual(HOST.actor_options[-1].max_restarts, 2)
        self.assertTrue(HOST.submitted[-1][3].detached)
        # Without a name or restarts, the plain create-actor.
        before = len(HOST.actor_options)
        Plain.remote()
        self.assertEqual(len(HOST.actor_options), before)

    def test_get_actor_finds_a_named_actor_with_its_class(self):
        c = Counter.options(name="keeper").remote(10)
        found = wray.get_actor("keeper")
        self.assertEqual(found, c)
        # Typed: keyword arguments and defaults bind as on the creator's.
        self.assertEqual(wray.get(found.increment.remote(by=5)), 15)
        self.assertEqual(wray.get(found.increment.remote()), 16)
        with self.assertRaises(AttributeError):
            found.nope
        # From a task, by name.
        self.assertEqual(wray.get(bump_named.remote("keeper")), 18)
        # An actor of a class this component does not define: any method,
        # positional arguments; the lookup tries this component's classes
        # first, then any class.
        other = wray.actor_class("counter/Tally").options(name="tally").remote(0)
        HOST.lookups.clear()
        t = wray.get_actor("tally")
        self.assertEqual(t, other)
        self.assertEqual(HOST.lookups[-1], ("tally", ""))
        self.assertIn(("tally", "Counter"), HOST.lookups)
        self.assertIsNone(t._class)

    def test_get_actor_of_an_unknown_name_raises_naming_it(self):
        with self.assertRaises(ValueError) as cm:
            wray.get_actor("nobody")
        self.assertIn("nobody", str(cm.exception))
        self.assertIn("no live actor is named `nobody`", str(cm.exception))
        c = Counter.options(name="gone").remote()
        self.assertTrue(wray.kill(c))
        with self.assertRaises(ValueError):
            wray.get_actor("gone")
        for bad in ("", "a/b", "x@1", "tab\there", ".", "..", "n" * 129, 7):
            with self.assertRaises(ValueError, msg=repr(bad)):
                wray.get_actor(bad)
            with self.assertRaises(ValueError, msg=repr(bad)):
                Counter.options(name=bad)

    def test_a_taken_name_is_refused_at_creation_naming_the_holder(self):
        first = Counter.options(name="keeper").remote(1)
        with self.assertRaises(ValueError) as cm:
            Counter.options(name="keeper").remote(2)
        message = str(cm.exception)
        self.assertIn("keeper", message)
        self.assertIn("taken", message)
        self.assertIn(first.hex(), message)
        # The holder is untouched; the refused actor was not kept.
        self.assertEqual(wray.get(first.increment.remote()), 2)
        # Held by an actor of another class: refused too, saying which.
        with self.assertRaises(ValueError) as cm:
            Plain.options(name="keeper").remote()
        self.assertIn("Counter", str(cm.exception))
        self.assertEqual(wray.get(wray.get_actor("keeper").increment.remote()), 3)

    def test_get_if_exists_returns_the_holder_or_creates_one(self):
        a = Counter.options(name="once", get_if_exists=True).remote(100)
        b = Counter.options(name="once", get_if_exists=True).remote(0)
        self.assertEqual(a, b)
        self.assertEqual(wray.get(b.increment.remote()), 101)
        # Only one actor was created.
        self.assertEqual(len(HOST.actor_options), 1)
        with self.assertRaises(ValueError):
            Plain.options(name="once", get_if_exists=True).remote()

    def test_actor_options_are_checked(self):
        for bad in (
            {"lifetime": "forever"},
            {"max_restarts": -2},
            {"max_restarts": 1 << 32},
            {"max_task_retries": 1.5},
            {"max_restarts": True},
            {"lifetime": "detached", "detached": False},
            {"num_returns": 2},
        ):
            with self.assertRaises((ValueError, TypeError), msg=repr(bad)):
                Counter.options(**bad)
        with self.assertRaises(TypeError):
            wray.actor(name="x")(type("Named", (), {}))

    def test_qualified_functions_and_classes(self):
        calls = []

        def tree_reduce(function, args, result_codec):
            calls.append((function, [json.loads(a.value.data) for a in args], result_codec))
            return [F.Payload(F.Codec.JSON, json.dumps([1, 2]).encode(), [])]

        HOST.components["tree_reduce"] = tree_reduce
        make_array = wray.function("tree_reduce/make_array")
        self.assertEqual(wray.get(make_array.remote(3)), [1, 2])
        self.assertEqual(calls, [("make_array", [3], F.Codec.JSON)])
        self.assertEqual(HOST.submitted[-1][0], "tree_reduce")
        with self.assertRaises(TypeError):
            make_array.remote(i=3)
        missing = wray.function("nowhere/f").remote()
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(missing)
        self.assertEqual(cm.exception.kind, "not-found")
        h = wray.actor_class("counter/Counter").remote(0)
        self.assertEqual(HOST.submitted[-1][:2], ("counter", "Counter"))
        with self.assertRaises(wray.TaskError) as cm:
            wray.get(h.add.remote(1))
        self.assertEqual(cm.exception.kind, "actor-died")
        with self.assertRaises(ValueError):
            wray.function("/x")

    def test_describe(self):
        info = _exports.Metadata().describe()
        self.assertEqual(info.sdk, "wray-python 0.1.0")
        by = {(f.kind, f.class_, f.name): f for f in info.functions}
        f = by[(F.FunctionKind.FUNCTION, None, "split")]
        self.assertEqual(f.num_returns, 2)
        self.assertEqual([(p.name, json.loads(p.schema)) for p in f.params], [("xs", {"type": "array", "items": {"type": "integer"}})])
        self.assertEqual(len(f.returns), 2)
        self.assertEqual(f.resources.num_cpus, 0.5)
        self.assertEqual(f.resources.custom, [("accel", 1.0)])
        self.assertEqual(f.limits.timeout_ms, 1500)
        self.assertFalse(f.reuse)
        kwf = by[(F.FunctionKind.FUNCTION, None, "kw")]
        self.assertEqual([p.name for p in kwf.params], ["a", "b", "c"])
        ctor = by[(F.FunctionKind.ACTOR_CONSTRUCTOR, "Counter", "Counter")]
        self.assertEqual([p.name for p in ctor.params], ["start"])
        self.assertEqual(ctor.resources.num_gpus, 1.0)
        self.assertEqual((ctor.num_returns, ctor.returns), (1, []))
        both = by[(F.FunctionKind.ACTOR_METHOD, "Counter", "both")]
        self.assertEqual(both.num_returns, 2)
        self.assertEqual(json.loads(both.returns[1]), {"type": "integer"})
        inc = by[(F.FunctionKind.ACTOR_METHOD, "Counter", "increment")]
        self.assertEqual([p.name for p in inc.params], ["by"])
        self.assertNotIn((F.FunctionKind.ACTOR_METHOD, "Counter", "_private"), by)
        self.assertEqual(by[(F.FunctionKind.ACTOR_CONSTRUCTOR, "Plain", "Plain")].params, [])

    def test_driver(self):
        out, saved = io.StringIO(), sys.stdout
        sys.stdout = out
        try:
            _exports.Driver().main(["a", "b"])
        finally:
            sys.stdout = saved
        self.assertEqual(driver_ran[-1], ["a", "b"])
        self.assertIn("driver says hi", out.getvalue())
        with self.assertRaises(F.Err) as cm:
            _exports.Driver().main(["fail"])
        self.assertTrue(cm.exception.value.startswith("RuntimeError: driver failed\n"))
        self.assertIn("Traceback", cm.exception.value)
        with self.assertRaises(F.Err) as cm:
            _exports.Driver().main(["exit"])
        self.assertEqual(cm.exception.value, "usage: demo <dir>")

    def test_no_main(self):
        saved = _api.main_function
        _api.main_function = None
        try:
            with self.assertRaises(F.Err) as cm:
                _exports.Driver().main([])
            self.assertTrue(cm.exception.value.startswith("no main"))
        finally:
            _api.main_function = saved

    def test_log_gpu_ids_and_lifecycle(self):
        wray.log("hello", 3, level="warn")
        self.assertEqual(HOST.logs, [(F.LogLevel.WARN, "hello 3")])
        HOST.gpu_ids = [0, 2]
        self.assertEqual(wray.get_gpu_ids(), [0, 2])
        _exports.Lifecycle().init()
        _exports.Lifecycle().reinit()
        self.assertFalse(wray.cancel(add.remote(1, 1)))
        with wray.profile("span"):
            pass

    def test_duplicate_names_are_refused(self):
        def add(a, b):  # noqa: F811
            return a

        with self.assertRaises(ValueError):
            wray.remote(add)

    def test_varargs_are_refused(self):
        def va(*xs):
            return xs

        with self.assertRaises(TypeError):
            wray.remote(va)
        self.assertNotIn("va", _api.functions)


if __name__ == "__main__":
    unittest.main()
