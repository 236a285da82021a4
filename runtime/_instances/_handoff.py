"""What a host hands its sessions: MCP servers and the first-turn preamble, per instance (from
the config) and per thread (from ``start_session``), and where a thread's hand-off is kept so
that every resume starts with the same servers (docs/architecture.md, "MCP servers: where they
travel" and "Preamble").

An instance table may hold, besides its driver's keys (the runtime takes these out before the
driver decodes the table):

- ``mcp_servers``: an array of tables (each with ``name``) or a table of name -> server; an
  entry with ``command`` is stdio, one with ``url`` is HTTP (``type = "sse"`` for SSE);
- ``preamble`` or ``preamble_file`` (relative to the config file), ``preamble_max_chars``
  (default 70,000), ``preamble_reminder`` (one line);
- ``approval_rules``: an array of tables ``{ match = {...}, decision = "accept" | "decline" }``
  (``paddock.contract.ApprovalRule``), before the runtime's own.

A thread's hand-off (its merged servers and its own preamble) is written to a 0600 file in the
instance's home, ``<home>/paddock-threads/<sha256 of the thread id>.json``: the servers' ``env``
and ``headers`` values are secrets, so they live there only, never in the binding store or the
event log.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from paddock._state._dir import FILE_MODE, private_dir
from paddock.contract import (
    DEFAULT_PREAMBLE_MAX_CHARS,
    ApprovalRule,
    ConfigError,
    McpServer,
    ValidationError,
    check_preamble,
    check_preamble_reminder,
    mcp_servers_from_json,
)

__all__ = ["HANDOFF_KEYS", "InstanceHandoff", "ThreadHandoff", "ThreadHandoffFiles", "rules_from_config", "take_handoff"]

HANDOFF_KEYS = ("mcp_servers", "preamble", "preamble_file", "preamble_max_chars", "preamble_reminder", "approval_rules")
"""The instance-table keys the runtime reads itself (never passed to the driver's schema)."""


class InstanceHandoff(msgspec.Struct, frozen=True, kw_only=True):
    """An instance's own hand-off, read from its config table: every session of the instance
    gets these servers (a session's entry of the same name wins) and, unless the session gives
    its own, this preamble and reminder."""

    mcp_servers: tuple[McpServer, ...] = ()
    preamble: str | None = None
    preamble_max_chars: int = DEFAULT_PREAMBLE_MAX_CHARS
    preamble_reminder: str | None = None
    approval_rules: tuple[ApprovalRule, ...] = ()


class ThreadHandoff(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What one thread was started with, as persisted: the merged servers, and the preamble and
    reminder the session gave (``None``: the instance's), and a hand-off's transcript still to
    be delivered (``fork_thread``; dropped once a turn carried it)."""

    mcp_servers: tuple[McpServer, ...] = ()
    preamble: str | None = None
    preamble_reminder: str | None = None
    transcript: str | None = None
    approval_rules: tuple[ApprovalRule, ...] = ()
    """The thread's own rules (``start_session(approval_rules=...)``), not the merged ones."""


def take_handoff(table: Mapping[str, Any], *, path: str | None, instance_id: str,
                 ) -> tuple[dict[str, Any], InstanceHandoff]:
    """Split an ``[instances.<id>]`` table into the driver's keys and the instance's
    :class:`InstanceHandoff`. Reads ``preamble_file`` (relative to the config file's folder).
    Raises :class:`ConfigError` naming the table and the key."""
    where = f"[instances.{instance_id}]"
    rest = {k: v for k, v in table.items() if k not in HANDOFF_KEYS}
    if not any(k in table for k in HANDOFF_KEYS):
        return rest, InstanceHandoff()
    servers: tuple[McpServer, ...] = ()
    raw = table.get("mcp_servers")
    if raw is not None:
        servers = _servers(raw, path, where)
    preamble = table.get("preamble")
    preamble_file = table.get("preamble_file")
    if preamble is not None and preamble_file is not None:
        raise ConfigError(path, f"{where} keys 'preamble' and 'preamble_file': set one, not both")
    if preamble_file is not None:
        preamble = _read_preamble(preamble_file, path, where)
    if preamble is not None:
        if not isinstance(preamble, str):
            raise ConfigError(path, f"{where} key 'preamble': expected a string")
        _config_check(check_preamble, preamble, path, f"{where} key 'preamble'")
    reminder = table.get("preamble_reminder")
    if reminder is not None:
        if not isinstance(reminder, str):
            raise ConfigError(path, f"{where} key 'preamble_reminder': expected a string")
        _config_check(check_preamble_reminder, reminder, path, f"{where} key 'preamble_reminder'")
    limit = table.get("preamble_max_chars", DEFAULT_PREAMBLE_MAX_CHARS)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ConfigError(path, f"{where} key 'preamble_max_chars': expected an integer >= 1")
    rules = rules_from_config(table.get("approval_rules", ()), path, where)
    return rest, InstanceHandoff(mcp_servers=servers, preamble=preamble, preamble_max_chars=limit,
                                 preamble_reminder=reminder, approval_rules=rules)


_Rules = tuple[ApprovalRule, ...]


def rules_from_config(raw: object, path: str | None, where: str) -> tuple[ApprovalRule, ...]:
    """An ``approval_rules`` array, checked rule by rule; raises :class:`ConfigError` naming the
    file, the table and the rule's index (``[instances.x] key 'approval_rules[2].match': ...``)."""
    try:
        return msgspec.convert(raw, _Rules)
    except msgspec.ValidationError as exc:
        text = str(exc)
        at = re.search(r" - at `\$(.*)`$", text)
        where_in = at.group(1) if at else ""
        raise ConfigError(path, f"{where} key 'approval_rules{where_in}': {text[: at.start()] if at else text}") from None


def _servers(raw: object, path: str | None, where: str) -> tuple[McpServer, ...]:
    entries: dict[str, object]
    if isinstance(raw, list):
        entries = {}
        for i, entry in enumerate(raw):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise ConfigError(path, f"{where} key 'mcp_servers[{i}]': a table with a 'name'")
            name = entry["name"]
            if name in entries:
                raise ConfigError(path, f"{where} key 'mcp_servers': server {name!r} is given twice")
            entries[name] = {k: v for k, v in entry.items() if k != "name"}
    elif isinstance(raw, Mapping):
        entries = dict(raw)
    else:
        raise ConfigError(path, f"{where} key 'mcp_servers': an array of tables or a table of name -> server")
    try:
        return mcp_servers_from_json(entries, operation="config")
    except ValidationError as exc:
        raise ConfigError(path, f"{where} key 'mcp_servers': {exc.issue}") from None


def _read_preamble(value: object, path: str | None, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(path, f"{where} key 'preamble_file': expected a file path")
    file = Path(value).expanduser()
    if not file.is_absolute() and path is not None:
        file = Path(path).resolve().parent / file
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(path, f"{where} key 'preamble_file': {str(file)!r} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"{where} key 'preamble_file': not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise ConfigError(path, f"{where} key 'preamble_file': cannot be read: {exc.strerror or exc}") from None


def _config_check(check: Any, value: str, path: str | None, where: str) -> None:
    try:
        check(value, "config")
    except ValidationError as exc:
        raise ConfigError(path, f"{where}: {exc.issue}") from None


_decode = msgspec.json.Decoder(ThreadHandoff).decode
_encode = msgspec.json.Encoder().encode


class ThreadHandoffFiles:
    """The persisted hand-offs of one instance's threads, in ``<home>/paddock-threads/`` (0700;
    each file 0600, written whole and renamed into place). Thread-safe (one file per thread;
    the thread directory serialises the starts of a thread)."""

    def __init__(self, home: Path) -> None:
        self.folder = home / "paddock-threads"

    def path(self, thread_id: str) -> Path:
        return self.folder / (hashlib.sha256(thread_id.encode("utf-8")).hexdigest()[:40] + ".json")

    def load(self, thread_id: str) -> ThreadHandoff | str:
        """The thread's hand-off, or why it cannot be read (``"missing"``, or the error)."""
        try:
            data = self.path(thread_id).read_bytes()
        except FileNotFoundError:
            return "missing"
        except OSError as exc:
            return f"unreadable: {exc.strerror or exc}"
        try:
            return _decode(data)
        except msgspec.DecodeError as exc:  # the message names the field, never a value
            return f"unreadable: {exc}"

    def save(self, thread_id: str, handoff: ThreadHandoff) -> None:
        """Write the thread's hand-off (0600). Raises ``OSError``."""
        private_dir(self.folder)
        target = self.path(thread_id)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            os.write(fd, _encode(handoff))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
