"""Snapshots as plain JSON-ready values and back: the one converter the JSON export, the bench protocol and
record files share.

``to_plain`` turns dataclasses into dicts; ``from_plain`` builds them again from those dicts, driven by the
dataclasses' type hints (tuples, unions with None, literals, dicts with int keys, nested dataclasses), so
``from_plain(T, json.loads(json.dumps(to_plain(x)))) == x`` for every model snapshot ``x`` of type ``T``.
``json_schema`` describes the same plain form as a JSON Schema, from the same hints.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, Literal, TypeVar, Union

T = TypeVar("T")


def to_plain(value: Any) -> Any:
    """Dataclasses to dicts, tuples and lists to lists, dict keys to strings; other values as they are."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_plain(item) for key, item in value.items()}
    return value


class PlainFormError(ValueError):
    """A plain value that does not fit the type it should become; the message says where."""


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@typing.overload
def from_plain(kind: type[T], value: Any, where: str = "") -> T: ...
@typing.overload
def from_plain(kind: Any, value: Any, where: str = "") -> Any: ...
def from_plain(kind: Any, value: Any, where: str = "") -> Any:
    """The value of type ``kind`` whose ``to_plain`` is ``value``; PlainFormError when it cannot be one."""
    return _convert(kind, value, where or getattr(kind, "__name__", "value"))


def _convert(kind: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(kind)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return _dataclass(kind, value, where)
    if origin in (Union, types.UnionType):
        return _union(typing.get_args(kind), value, where)
    if origin is Literal:
        if value not in typing.get_args(kind):
            raise PlainFormError(f"{where}: {value!r} is not one of {typing.get_args(kind)}")
        return value
    if origin is tuple:
        return _tuple(typing.get_args(kind), value, where)
    if origin is dict:
        key_kind, item_kind = typing.get_args(kind)
        if not isinstance(value, dict):
            raise PlainFormError(f"{where}: expected an object, got {type(value).__name__}")
        return {
            _key(key_kind, key, where): _convert(item_kind, item, f"{where}[{key}]")
            for key, item in value.items()
        }
    if origin is not None and origin.__module__ == "collections.abc":  # Mapping[str, Any] and the like
        return _convert(dict[typing.get_args(kind)], value, where)  # type: ignore[misc]
    return _scalar(kind, value, where)


def _dataclass(kind: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise PlainFormError(f"{where}: expected an object, got {type(value).__name__}")
    hints = _hints(kind)
    arguments = {}
    for spec in dataclasses.fields(kind):
        if spec.name in value:
            arguments[spec.name] = _convert(hints[spec.name], value[spec.name], f"{where}.{spec.name}")
        elif spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
            raise PlainFormError(f"{where}: the field {spec.name!r} is missing")
    return kind(**arguments)


def _union(options: tuple[Any, ...], value: Any, where: str) -> Any:
    if value is None and type(None) in options:
        return None
    errors = []
    for option in options:
        if option is type(None):
            continue
        try:
            return _convert(option, value, where)
        except PlainFormError as exc:
            errors.append(str(exc))
    raise PlainFormError(errors[0] if len(errors) == 1 else f"{where}: {value!r} fits none of {options}")


def _tuple(items: tuple[Any, ...], value: Any, where: str) -> tuple[Any, ...]:
    if not isinstance(value, list):
        raise PlainFormError(f"{where}: expected a list, got {type(value).__name__}")
    if len(items) == 2 and items[1] is Ellipsis:
        return tuple(_convert(items[0], item, f"{where}[{index}]") for index, item in enumerate(value))
    if len(items) != len(value):
        raise PlainFormError(f"{where}: expected {len(items)} items, got {len(value)}")
    pairs = enumerate(zip(items, value, strict=True))
    return tuple(_convert(kind, item, f"{where}[{index}]") for index, (kind, item) in pairs)


def _key(kind: Any, key: str, where: str) -> Any:
    if kind is int:
        try:
            return int(key)
        except ValueError:
            raise PlainFormError(f"{where}: the key {key!r} is not a whole number") from None
    return key


def _scalar(kind: Any, value: Any, where: str) -> Any:
    if kind is Any:
        return value
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    elif kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif kind in (str, bool):
        if isinstance(value, kind):
            return value
    else:
        raise PlainFormError(f"{where}: the type {kind!r} has no plain form")
    raise PlainFormError(f"{where}: expected {kind.__name__}, got {type(value).__name__} {value!r}")


# -- the same plain form as a JSON Schema ---------------------------------------------------------------
def json_schema(kind: Any, definitions: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of ``to_plain`` of a value of type ``kind``; dataclasses go into ``definitions``
    (by class name) and are referred to as ``#/$defs/<name>``."""
    origin = typing.get_origin(kind)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        _define(kind, definitions)
        return {"$ref": f"#/$defs/{kind.__name__}"}
    if origin in (Union, types.UnionType):
        return {"anyOf": [json_schema(option, definitions) for option in typing.get_args(kind)]}
    if origin is Literal:
        return {"enum": list(typing.get_args(kind))}
    if origin is tuple:
        items = typing.get_args(kind)
        if len(items) == 2 and items[1] is Ellipsis:
            return {"type": "array", "items": json_schema(items[0], definitions)}
        return {
            "type": "array",
            "prefixItems": [json_schema(item, definitions) for item in items],
            "minItems": len(items),
            "maxItems": len(items),
        }
    if origin is dict or (origin is not None and origin.__module__ == "collections.abc"):
        key_kind, item_kind = typing.get_args(kind)
        schema: dict[str, Any] = {
            "type": "object",
            "additionalProperties": json_schema(item_kind, definitions),
        }
        if key_kind is int:
            schema["propertyNames"] = {"pattern": "^-?[0-9]+$"}
        return schema
    return _scalar_schema(kind)


def _scalar_schema(kind: Any) -> dict[str, Any]:
    names = {float: "number", int: "integer", str: "string", bool: "boolean", type(None): "null"}
    if kind is Any:
        return {}
    return {"type": names[kind]}


def _define(kind: type, definitions: dict[str, Any]) -> None:
    if kind.__name__ in definitions:
        return
    definitions[kind.__name__] = {}  # a placeholder first: the class may refer to itself
    hints = _hints(kind)
    fields = dataclasses.fields(kind)
    required = [
        spec.name
        for spec in fields
        if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
    ]
    definitions[kind.__name__] = {
        "type": "object",
        "properties": {spec.name: json_schema(hints[spec.name], definitions) for spec in fields},
        "required": required,
        "additionalProperties": False,
    }
