"""Free-form JSON as it crosses a wire or lands in a settings file: the one alias every layer
uses, its narrowing helpers and a deep merge."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Union

__all__ = ["JsonObject", "JsonValue", "deep_merge", "json_object", "json_str"]

if TYPE_CHECKING:
    JsonValue = Union[None, bool, int, float, str, list["JsonValue"], dict[str, "JsonValue"]]
else:
    # Trap: msgspec cannot resolve a recursive forward reference on Python 3.11 ("Type
    # ForwardRef('JsonValue') is not supported"), so at run time the alias is ``object``, which
    # msgspec decodes as exactly these JSON values; type checkers see the recursive union.
    JsonValue = object
"""Any JSON value: what ``msgspec.json.decode`` yields without a type."""

JsonObject = dict[str, JsonValue]
"""A JSON object with free-form values; read a value by narrowing it (:func:`json_object`,
:func:`json_str`)."""


def json_object(value: JsonValue) -> JsonObject:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def json_str(value: JsonValue) -> str | None:
    """``value`` when it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def deep_merge(base: Mapping[str, JsonValue], over: Mapping[str, JsonValue]) -> JsonObject:
    """``base`` with ``over`` merged in: objects merge key by key, anything else replaces.
    Neither argument is changed."""
    out = dict(base)
    for key, value in over.items():
        current = out.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            out[key] = deep_merge(current, value)
        else:
            out[key] = value
    return out
