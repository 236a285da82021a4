"""A minimal TOML writer for the generated ``config.toml`` (tables of strings, numbers, booleans
and lists; the standard library reads TOML but cannot write it)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["deep_merge", "dumps"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string literal is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dumps(data: Mapping[str, Any]) -> str:
    """``data`` as TOML text: plain keys first, then each nested mapping as a ``[table]``."""
    lines: list[str] = []

    def table(prefix: tuple[str, ...], body: Mapping[str, Any]) -> None:
        plain = [(k, v) for k, v in body.items() if not isinstance(v, Mapping)]
        nested = [(k, v) for k, v in body.items() if isinstance(v, Mapping)]
        if prefix and (plain or not nested):
            lines.append("")
            lines.append("[" + ".".join(_key(p) for p in prefix) + "]")
        for k, v in plain:
            if v is not None:
                lines.append(f"{_key(str(k))} = {_value(v)}")
        for k, v in nested:
            table((*prefix, str(k)), v)

    table((), data)
    return "\n".join(lines).lstrip("\n") + "\n"


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``over`` merged in: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out
