"""JSON Schemas (draft 2020-12) of parameters and returns, derived from type
hints, for ``describe``.

Pure Python (no host). What cannot be said precisely is ``{}`` (anything):
the host checks JSON arguments against these schemas, so a schema must never
refuse a value the function accepts.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import json
import types as _pytypes
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple

Schema = Dict[str, Any]

_NONE_TYPE = type(None)

#: The JSON form of an ``ObjectRef`` inside a value.
OBJECT_REF_SCHEMA: Schema = {
    "type": "object",
    "properties": {"$object": {"type": "string", "pattern": "^[0-9a-f]{40}$"}},
    "required": ["$object"],
}

#: The JSON form of an ``ActorHandle`` inside a value.
ACTOR_HANDLE_SCHEMA: Schema = {
    "type": "object",
    "properties": {"$actor": {"type": "string", "pattern": "^[0-9a-f]{32}$"}},
    "required": ["$actor"],
}

_SEQUENCES = (
    list,
    collections.abc.Sequence,
    collections.abc.MutableSequence,
    collections.abc.Iterable,
    collections.abc.Collection,
    set,
    frozenset,
    collections.abc.Set,
    collections.abc.MutableSet,
)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)

# Filled in by wray/__init__.py so this module needs nothing from the host.
_special: Dict[type, Schema] = {}


def register_special(cls: type, schema: Schema) -> None:
    """Declares the schema of values of ``cls`` (ObjectRef, ActorHandle)."""
    _special[cls] = schema


def schema_of(hint: Any, _seen: Optional[Tuple[type, ...]] = None) -> Schema:
    """The JSON Schema of the JSON form of a value of type ``hint``."""
    seen = _seen or ()
    if hint is inspect.Parameter.empty or hint is Any or hint is object:
        return {}
    if hint is None or hint is _NONE_TYPE:
        return {"type": "null"}
    if isinstance(hint, str) or isinstance(hint, typing.ForwardRef):
        # An annotation that did not resolve: say nothing.
        return {}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if hint in (bytes, bytearray):
        # JSON has no bytes: they travel as an array of byte values.
        return {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}}
    if isinstance(hint, type) and hint in _special:
        return dict(_special[hint])
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Annotated:
        return schema_of(args[0], seen)
    if origin is typing.Union or (
        hasattr(_pytypes, "UnionType") and isinstance(hint, getattr(_pytypes, "UnionType"))
    ):
        members = [schema_of(a, seen) for a in args]
        if any(m == {} for m in members):
            return {}
        return {"anyOf": members}
    if origin is typing.Literal:
        return {"enum": list(args)} if _all_json(args) else {}
    if origin is tuple or hint is tuple:
        if not args:
            return {"type": "array"}
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": schema_of(args[0], seen)}
        if args == ((),):  # Tuple[()]
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": [schema_of(a, seen) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if origin in _SEQUENCES or hint in _SEQUENCES:
        if args:
            return {"type": "array", "items": schema_of(args[0], seen)}
        return {"type": "array"}
    if origin in _MAPPINGS or hint in _MAPPINGS:
        if len(args) == 2:
            # JSON keys are strings (an int key is written as its digits).
            return {"type": "object", "additionalProperties": schema_of(args[1], seen)}
        return {"type": "object"}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if hint in seen:
            return {"type": "object"}
        return _dataclass_schema(hint, seen + (hint,))
    if isinstance(hint, type) and _is_typeddict(hint):
        if hint in seen:
            return {"type": "object"}
        return _typeddict_schema(hint, seen + (hint,))
    if isinstance(hint, type):
        import enum

        if issubclass(hint, enum.Enum):
            values = [m.value for m in hint]
            return {"enum": values} if _all_json(values) else {}
    return {}


def _all_json(values: Any) -> bool:
    try:
        json.dumps(list(values))
        return True
    except (TypeError, ValueError):
        return False


def _hints(obj: Any) -> Dict[str, Any]:
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception:  # an annotation that does not resolve
        return dict(getattr(obj, "__annotations__", {}) or {})


def _dataclass_schema(cls: type, seen: Tuple[type, ...]) -> Schema:
    hints = _hints(cls)
    props: Dict[str, Schema] = {}
    required: List[str] = []
    for f in dataclasses.fields(cls):
        props[f.name] = schema_of(hints.get(f.name, inspect.Parameter.empty), seen)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
            required.append(f.name)
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    return out


def _is_typeddict(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, dict) and hasattr(cls, "__required_keys__")


def _typeddict_schema(cls: type, seen: Tuple[type, ...]) -> Schema:
    hints = _hints(cls)
    props = {k: schema_of(v, seen) for k, v in hints.items()}
    out: Schema = {"type": "object", "properties": props}
    required = sorted(getattr(cls, "__required_keys__", ()))
    if required:
        out["required"] = required
    return out


def dumps(schema: Schema) -> str:
    """Schema text as ``describe`` lists it (compact, keys in order)."""
    return json.dumps(schema, separators=(",", ":"))


def signature_schemas(
    fn: Callable[..., Any], num_returns: int, skip_self: bool = False
) -> Tuple[List[Tuple[str, str]], List[str]]:
    """``([(param name, schema text)], [return schema text] * num_returns)``
    of ``fn``. ``*args`` and ``**kwargs`` are not listed (a call passes
    exactly the listed parameters, positionally); ``skip_self`` drops the
    first parameter (a method's ``self``)."""
    sig = inspect.signature(fn)
    hints = _hints(fn)
    params: List[Tuple[str, str]] = []
    items = list(sig.parameters.values())
    if skip_self and items:
        items = items[1:]
    for p in items:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        params.append((p.name, dumps(schema_of(hints.get(p.name, inspect.Parameter.empty)))))
    ret = hints.get("return", inspect.Parameter.empty)
    return params, [dumps(s) for s in return_schemas(ret, num_returns)]


def return_schemas(hint: Any, num_returns: int) -> List[Schema]:
    """One schema per return object: a single return is the whole hint; with
    ``num_returns > 1`` a ``tuple[A, B]`` hint gives one schema per item (any
    other hint: ``{}`` each)."""
    if num_returns == 1:
        return [schema_of(hint)]
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if (origin is tuple) and len(args) == num_returns and Ellipsis not in args:
        return [schema_of(a) for a in args]
    if (origin is tuple) and len(args) == 2 and args[1] is Ellipsis:
        return [schema_of(args[0])] * num_returns
    if origin in (list, collections.abc.Sequence) and args:
        return [schema_of(args[0])] * num_returns
    return [{} for _ in range(num_returns)]
