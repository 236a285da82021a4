"""A minimal TOML writer (tables of strings, numbers, booleans and lists; the standard library
reads TOML but cannot write it): Codex's generated ``config.toml`` and ``paddock init``'s
templates."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from paddock.contract import JsonValue

__all__ = ["dumps", "toml_value"]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def toml_value(value: JsonValue) -> str:
    """``value`` as a TOML value (inline tables for mappings); :class:`TypeError` for what TOML
    cannot hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string literal is a valid TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(str(k))} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


def dumps(data: Mapping[str, JsonValue]) -> str:
    """``data`` as TOML text: plain keys first, then each nested mapping as a ``[table]``."""
    lines: list[str] = []

    def table(prefix: tuple[str, ...], body: Mapping[str, JsonValue]) -> None:
        plain = [(k, v) for k, v in body.items() if not isinstance(v, Mapping)]
        nested = [(k, v) for k, v in body.items() if isinstance(v, Mapping)]
        if prefix and (plain or not nested):
            lines.append("")
            lines.append("[" + ".".join(_key(p) for p in prefix) + "]")
        for k, v in plain:
            if v is not None:
                lines.append(f"{_key(str(k))} = {toml_value(v)}")
        for k, table_body in nested:
            table((*prefix, str(k)), table_body)

    table((), data)
    return "\n".join(lines).lstrip("\n") + "\n"
