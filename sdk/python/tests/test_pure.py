"""Unit tests of the SDK's pure-Python parts: ids, JSON encoding of refs,
schema derivation, error formatting, reference counting. No host, no wasm."""

from __future__ import annotations

import dataclasses
import enum
import gc
import json
import typing
import unittest
from typing import Any, Dict, List, Optional, Tuple

import wray
from wray import _codec, _errors, _ids, _refs, _schema
from wray._refs import ObjectRef

KEY = (0x0123456789ABCDEF, 0x1, 0x80000001)
HEX = "0123456789abcdef000000000000000180000001"


class Ids(unittest.TestCase):
    def test_object_id_is_task_then_index(self):
        self.assertEqual(_ids.object_hex(KEY), HEX)
        self.assertEqual(_ids.parse_object_hex(HEX), KEY)
        self.assertEqual(_ids.object_hex((0, 0xFF, 0x80000001)), "000000000000000000000000000000ff80000001")

    def test_task_id_is_32_hex_digits(self):
        self.assertEqual(_ids.task_hex((0x0123456789ABCDEF, 1)), "0123456789abcdef0000000000000001")
        self.assertEqual(_ids.parse_task_hex("0123456789abcdef0000000000000001"), (0x0123456789ABCDEF, 1))

    def test_bad_hex_is_refused(self):
        for bad in ["", "xyz", HEX[:-1], HEX + "0", "-" + HEX[1:], "g" * 40]:
            with self.assertRaises(ValueError):
                _ids.parse_object_hex(bad)
        with self.assertRaises(ValueError):
            _ids.parse_task_hex(HEX)


class _Nested:
    """A value whose ``tolist()`` encodes another value (``[inner]``, into
    ``seen``) before it gives its own (``[outer]``)."""

    def __init__(self, inner: Any, outer: Any, seen: List[Any]):
        self.inner, self.outer, self.seen = inner, outer, seen

    def tolist(self) -> List[Any]:
        self.seen.append(_codec.encode_json([self.inner]))
        return [self.outer]


class Codec(unittest.TestCase):
    def test_refs_serialize_as_dollar_object_and_are_listed(self):
        a = ObjectRef(KEY)
        b = ObjectRef((1, 2, 3))
        enc = _codec.encode_json({"xs": [a, b, a], "n": 1})
        self.assertEqual(
            json.loads(enc.data),
            {"xs": [{"$object": HEX}, {"$object": _ids.object_hex((1, 2, 3))}, {"$object": HEX}], "n": 1},
        )
        self.assertEqual(enc.refs, [KEY, (1, 2, 3)])  # each once, in order
        self.assertEqual(len(enc.holders), 3)

    def test_actor_handles_serialize_as_dollar_actor_listing_their_handle_object(self):
        h = wray.ActorHandle((5, 6))
        enc = _codec.encode_json([h])
        self.assertEqual(json.loads(enc.data), [{"$actor": _ids.task_hex((5, 6))}])
        self.assertEqual(enc.refs, [(5, 6, 1)])

    def test_decoding_makes_refs_and_handles_live(self):
        data = json.dumps({"r": {"$object": HEX}, "a": {"$actor": "0" * 31 + "7"}, "d": {"$object": HEX, "x": 1}}).encode()
        v = _codec.decode_json(data)
        self.assertIsInstance(v["r"], ObjectRef)
        self.assertEqual(v["r"].hex(), HEX)
        self.assertIsInstance(v["a"], wray.ActorHandle)
        self.assertEqual(v["a"].hex(), "0" * 31 + "7")
        # A dict with more keys than the marker is a plain dict.
        self.assertEqual(v["d"], {"$object": HEX, "x": 1})

    def test_round_trip_of_plain_values(self):
        value = {"a": [1, 2.5, "x", None, True], "b": {"c": []}, "t": (1, 2)}
        self.assertEqual(_codec.decode_json(_codec.encode_json(value).data), {**value, "t": [1, 2]})

    def test_malformed_ids_are_errors(self):
        with self.assertRaises(ValueError):
            _codec.decode_json(b'{"$object": "nope"}')
        with self.assertRaises(ValueError):
            _codec.decode_json(b"{not json")

    def test_extra_types(self):
        @dataclasses.dataclass
        class P:
            x: int
            r: ObjectRef

        class Color(enum.Enum):
            RED = "red"

        r = ObjectRef(KEY)
        enc = _codec.encode_json([P(1, r), Color.RED, b"\x00\xff", {3}])
        self.assertEqual(json.loads(enc.data), [{"x": 1, "r": {"$object": HEX}}, "red", [0, 255], [3]])
        self.assertEqual(enc.refs, [KEY])

    def test_unencodable_values_raise(self):
        with self.assertRaises(TypeError):
            _codec.encode_json(object())
        with self.assertRaises(ValueError):
            _codec.encode_json(float("nan"))

    def test_text_is_utf8_not_escaped(self):
        self.assertEqual(_codec.encode_json("café").data, '"café"'.encode("utf-8"))

    def test_scalars_are_written_as_json_dumps_writes_them(self):
        # Plain scalars skip the encoder: the bytes must not change.
        class Small(enum.IntEnum):
            ONE = 1

        for value in [0, -7, 10**40, True, False, None, "", 'a "q"\n\t\u0001 é 😀', 1.5, Small.ONE]:
            with self.subTest(value=value):
                enc = _codec.encode_json(value)
                want = json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
                self.assertEqual(enc.data, want.encode("utf-8"))
                self.assertEqual((enc.refs, enc.holders), ([], []))
                self.assertEqual(_codec.decode_json(enc.data), json.loads(want))

    def test_a_value_encoded_while_encoding_another_keeps_its_own_refs(self):
        inner = ObjectRef((1, 2, 3))
        outer = ObjectRef(KEY)
        seen: List[Any] = []
        enc = _codec.encode_json([outer, _Nested(inner, outer, seen), inner])
        self.assertEqual(enc.refs, [KEY, (1, 2, 3)])
        self.assertEqual(len(enc.holders), 3)
        self.assertEqual(seen[0].refs, [(1, 2, 3)])
        self.assertEqual(len(seen[0].holders), 1)
        # A failed encoding leaves nothing behind for the next one.
        with self.assertRaises(TypeError):
            _codec.encode_json([outer, object()])
        self.assertEqual(_codec.encode_json({"r": inner}).refs, [(1, 2, 3)])

    def test_decoding_reads_bytes_as_json_loads_does(self):
        for data in [b"[1]", "[1]".encode("utf-16"), b"\xef\xbb\xbf[1]", bytearray(b"[1]"), memoryview(b"[1]"), "[1]"]:
            with self.subTest(data=data):
                self.assertEqual(_codec.decode_json(data), [1])
        with self.assertRaises(ValueError):
            _codec.decode_json(b"\xff")


def s(hint: Any) -> Dict[str, Any]:
    return _schema.schema_of(hint)


class Schemas(unittest.TestCase):
    def test_scalars(self):
        self.assertEqual(s(int), {"type": "integer"})
        self.assertEqual(s(float), {"type": "number"})
        self.assertEqual(s(str), {"type": "string"})
        self.assertEqual(s(bool), {"type": "boolean"})
        self.assertEqual(s(None), {"type": "null"})
        self.assertEqual(s(type(None)), {"type": "null"})
        self.assertEqual(s(Any), {})

    def test_containers(self):
        self.assertEqual(s(list[int]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(s(List[str]), {"type": "array", "items": {"type": "string"}})
        self.assertEqual(s(list), {"type": "array"})
        self.assertEqual(
            s(dict[str, float]), {"type": "object", "additionalProperties": {"type": "number"}}
        )
        self.assertEqual(s(Dict[str, List[int]])["additionalProperties"], {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(s(dict), {"type": "object"})
        self.assertEqual(
            s(tuple[str, int]),
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "minItems": 2, "maxItems": 2},
        )
        self.assertEqual(s(Tuple[int, ...]), {"type": "array", "items": {"type": "integer"}})

    def test_optional_and_unions(self):
        self.assertEqual(s(Optional[int]), {"anyOf": [{"type": "integer"}, {"type": "null"}]})
        self.assertEqual(s(int | None), {"anyOf": [{"type": "integer"}, {"type": "null"}]})
        self.assertEqual(s(typing.Union[int, str]), {"anyOf": [{"type": "integer"}, {"type": "string"}]})
        self.assertEqual(s(Optional[Any]), {})

    def test_refs_handles_dataclasses(self):
        self.assertEqual(s(ObjectRef)["required"], ["$object"])
        self.assertEqual(s(wray.ActorHandle)["required"], ["$actor"])

        @dataclasses.dataclass
        class P:
            x: int
            y: List[float] = dataclasses.field(default_factory=list)

        self.assertEqual(
            s(P),
            {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "array", "items": {"type": "number"}}},
                "required": ["x"],
            },
        )

    def test_unknown_hints_accept_anything(self):
        class Opaque:
            pass

        self.assertEqual(s(Opaque), {})
        self.assertEqual(s("NotResolved"), {})

    def test_signature_schemas(self):
        def f(a: int, b, c: list[tuple[str, int]] = []) -> dict[str, int]:  # noqa: B006
            return {}

        params, returns = _schema.signature_schemas(f, 1)
        self.assertEqual([n for n, _ in params], ["a", "b", "c"])
        self.assertEqual(json.loads(params[0][1]), {"type": "integer"})
        self.assertEqual(json.loads(params[1][1]), {})
        self.assertEqual(json.loads(params[2][1])["items"]["prefixItems"][1], {"type": "integer"})
        self.assertEqual([json.loads(r) for r in returns], [{"type": "object", "additionalProperties": {"type": "integer"}}])

        def g(self, xs: list[int]) -> tuple[list[int], list[int]]:
            return xs, xs

        params, returns = _schema.signature_schemas(g, 2, skip_self=True)
        self.assertEqual([n for n, _ in params], ["xs"])
        self.assertEqual(len(returns), 2)
        self.assertEqual(json.loads(returns[1]), {"type": "array", "items": {"type": "integer"}})

        def h(x):
            return x

        self.assertEqual(_schema.signature_schemas(h, 3)[1], ["{}", "{}", "{}"])

        def none() -> None:
            pass

        self.assertEqual(_schema.signature_schemas(none, 1)[1], ['{"type":"null"}'])

    def test_string_annotations_resolve(self):
        ns: Dict[str, Any] = {}
        exec("from __future__ import annotations\ndef f(a: list[int]) -> Optional[str]: ...", {"Optional": Optional}, ns)
        params, returns = _schema.signature_schemas(ns["f"], 1)
        self.assertEqual(json.loads(params[0][1]), {"type": "array", "items": {"type": "integer"}})
        self.assertEqual(json.loads(returns[0]), {"anyOf": [{"type": "string"}, {"type": "null"}]})


class Errors(unittest.TestCase):
    def test_task_error_reads_as_the_host_writes_it(self):
        e = wray.TaskError("out-of-memory", "Counter.add", "0" * 31 + "2", "limit 64 MiB")
        self.assertEqual(
            str(e),
            "task 00000000000000000000000000000002 (Counter.add) failed: out-of-memory: limit 64 MiB",
        )
        self.assertEqual((e.kind, e.function, e.message), ("out-of-memory", "Counter.add", "limit 64 MiB"))
        self.assertEqual(e, wray.TaskError("out-of-memory", "Counter.add", "0" * 31 + "2", "limit 64 MiB"))

    def test_exception_message_has_type_message_and_traceback(self):
        def inner():
            raise ValueError("bad input 7")

        try:
            try:
                inner()
            except ValueError as e:
                raise KeyError("k") from e
        except KeyError as e:
            text = _errors.format_exception(e)
        first, _, rest = text.partition("\n")
        self.assertEqual(first, "KeyError: 'k'")
        self.assertIn("Traceback (most recent call last):", rest)
        self.assertIn("in inner", rest)
        self.assertIn("ValueError: bad input 7", rest)
        self.assertIn("direct cause", rest)

    def test_exception_type_names(self):
        class Mine(Exception):
            pass

        self.assertEqual(_errors.exception_summary(RuntimeError()), "RuntimeError")
        self.assertTrue(_errors.exception_summary(Mine("x")).endswith("Mine: x"))
        self.assertIn("test_pure", _errors.exception_type_name(Mine()))

    def test_kinds_in_wit_order(self):
        self.assertEqual(_errors.ERROR_KINDS[0], "application")
        self.assertEqual(_errors.ERROR_KINDS[5], "invalid-argument")
        self.assertEqual(len(_errors.ERROR_KINDS), 11)


class RefCounts(unittest.TestCase):
    def setUp(self):
        self.released: List[Any] = []
        self.saved = _refs.release_hook
        _refs.flush_releases()
        _refs.release_hook = self.released.extend

    def tearDown(self):
        _refs.release_hook = self.saved

    def test_last_ref_dying_releases_the_id_once_at_the_next_flush(self):
        key = (9, 9, 1)
        a = ObjectRef(key)
        b = ObjectRef(key)
        self.assertEqual(_refs.count(key), 2)
        del a
        gc.collect()
        _refs.flush_releases()
        self.assertEqual(self.released, [])
        del b
        self.assertEqual(_refs.count(key), 0)
        self.assertEqual(self.released, [])  # queued, not yet told
        _refs.flush_releases()
        self.assertEqual(self.released, [key])
        _refs.flush_releases()
        self.assertEqual(self.released, [key])

    def test_releases_are_batched(self):
        refs = [ObjectRef((9, 8, i)) for i in range(5)]
        calls: List[Any] = []
        _refs.release_hook = calls.append
        del refs
        _refs.flush_releases()
        self.assertEqual(len(calls), 1)
        self.assertEqual(sorted(calls[0]), [(9, 8, i) for i in range(5)])

    def test_an_id_taken_up_again_before_the_flush_is_not_released(self):
        key = (9, 9, 4)
        r = ObjectRef(key)
        del r
        again = ObjectRef(key)
        _refs.flush_releases()
        self.assertEqual(self.released, [])
        del again
        _refs.flush_releases()
        self.assertEqual(self.released, [key])

    def test_deferred_refs_live_until_flushed(self):
        key = (9, 9, 2)
        r = ObjectRef(key)
        enc = _codec.encode_json([r])
        _refs.defer(enc.holders)
        del r, enc
        _refs.flush_releases()
        self.assertEqual(self.released, [])
        _refs.flush_deferred()
        _refs.flush_releases()
        self.assertEqual(self.released, [key])

    def test_actor_handles_hold_their_handle_object(self):
        h = wray.ActorHandle((4, 4))
        self.assertEqual(_refs.count((4, 4, 1)), 1)
        del h
        _refs.flush_releases()
        self.assertEqual(self.released, [(4, 4, 1)])

    def test_copies_are_counted(self):
        import copy

        key = (9, 9, 3)
        r = ObjectRef(key)
        c = copy.deepcopy([r])
        self.assertEqual(_refs.count(key), 2)
        del r
        _refs.flush_releases()
        self.assertEqual(self.released, [])
        del c
        _refs.flush_releases()
        self.assertEqual(self.released, [key])


if __name__ == "__main__":
    unittest.main()
