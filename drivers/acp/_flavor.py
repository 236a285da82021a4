"""Flavors: the few hooks that differ between ACP agents, as one plain record each.

A flavor names how to spawn its agent (a pinned peer plus its ACP flags, or a command hook), how
the common model keys (``endpoint``, ``api_key``, ``model``) reach the agent (its own variables
and settings files), its telemetry/update/relaunch switches, which ``authenticate`` method to
call, which capability flags differ from what ``initialize`` negotiates (each with a comment
naming the protocol fact), what each runtime mode answers without asking the host, which native
mode implements each runtime mode, how long to wait for evidence that a turn started before
cancelling it, and how to recognise a failure the agent reports as ordinary text.

:func:`flavor_env` is the whole mapping from a :class:`~paddock.drivers.ModelAccess` to the
agent's environment and settings files; the runtime uses it for every spawn and
``paddock.testing``'s offline builders reuse it, so there is one copy of each CLI's variables.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from paddock.contract import Capabilities, JsonObject, JsonValue, deep_merge
from paddock.drivers._access import ModelAccess
from paddock.drivers._binary import BinaryLocation, find_binary
from paddock.drivers._registry import InstanceContext

from ._config import AcpConfig
from ._permissions import DEFAULT_AUTO_ALLOW

__all__ = [
    "AcpFlavor",
    "GENERIC_FLAVOR",
    "MANAGED_MARKER",
    "SettingsFiles",
    "flavor_env",
    "is_root",
    "merge_json_file",
    "on_path",
    "write_managed_file",
]

SettingsFiles = dict[str, JsonObject | str]
"""Settings files relative to the agent's ``HOME``: a JSON object is merged into the agent's
JSON file (:func:`merge_json_file`), a string is a whole managed file (:func:`write_managed_file`)."""


def is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def merge_json_file(path: Path, overlay: Mapping[str, JsonValue]) -> None:
    """Merge ``overlay`` into the JSON object in ``path`` (created, 0600, with its folders): the
    agent's own settings survive, ours win where both name a key. An unreadable file is replaced."""
    current: JsonObject = {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            current = loaded
    except (OSError, ValueError):
        pass
    merged = deep_merge(current, overlay)
    if merged == current and path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".paddock-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(merged, fh, indent=2)
    os.replace(tmp, path)


class AcpFlavor(msgspec.Struct, frozen=True, kw_only=True):
    """One kind of ACP agent. Hooks taking ``ctx`` get the instance's
    :class:`~paddock.drivers.InstanceContext` and run on the caller's thread (``command``/``env``
    on the instance's root supervisor thread); hooks taking ``access`` get its
    :class:`~paddock.drivers.ModelAccess` only (pure, also used by ``paddock.testing``).

    - ``kind``: the driver kind (also the ``driver`` of its resume cursors);
    - ``peer`` / ``protocol_args``: the pin (``paddock/drivers/peers.toml``) found when no
      ``binary`` is configured (peers dir, then ``PATH``), and the flags that start ACP mode;
    - ``command(ctx) -> argv``: a spawn hook replacing ``peer`` resolution (``local``, generic);
    - ``locator(ctx) -> BinaryLocation | reason``: where the agent is, for a flavor without a pin
      (``doctor`` shows it; with no ``command`` hook the argv is built from it);
    - ``env(ctx) -> dict``: extra keys on top of the runtime-built child environment;
    - ``access_env(access) -> dict``: the agent's own variables for the common model keys;
    - ``quiet_env``: telemetry, update-check and relaunch switches, always set;
    - ``root_env``: keys added when Paddock runs as root (``IS_SANDBOX``);
    - ``settings(access, home) -> {path: overlay}``: settings files relative to ``HOME``: a
      mapping is merged into the agent's JSON file, a string is a whole managed file
      (:func:`write_managed_file`);
    - ``home_env(home) -> dict``: variables naming folders under the agent's ``HOME``;
    - ``probe(ctx) -> reason | None``: why an instance cannot run (default: binary resolution);
    - ``auth_method`` / ``auth(ctx)``: the ``authenticate`` method id, or ``None`` (no call);
    - ``capability_overrides(caps) -> caps``: applied after negotiation;
    - ``auto_allow``: runtime mode -> ACP ToolKinds answered "allow" without asking the host;
    - ``native_modes``: runtime mode or ``plan`` -> the agent's mode id (``session/set_mode``);
    - ``cancel_guard``: seconds to wait (at most) for the first update of a turn before sending
      ``session/cancel``; within that bound the cancel is re-sent until the agent ends the turn
      (``cancel_retry``), for agents that drop a cancel arriving right after the prompt;
    - ``failed_text(text) -> error | None``: a turn the agent ended ``end_turn`` whose assistant
      text is really a model failure (the turn then ends ``failed`` with that error);
    - ``cancel_meta``: ``_meta`` sent with every ``session/cancel``;
    - ``set_model``: a session's or turn's model goes through ``session/set_model`` (an unstable
      method some agents implement) when the agent offers no model config option;
    - ``resume_hint(error, age) -> sentence | None``: why a resume failed, for an agent with a
      known limit (``age``: seconds since the session was created, when the cursor says);
    - ``version_args``: arguments before ``--version`` that make the agent print its version
      (``doctor``, for a binary found on ``PATH`` or configured);
    - ``client_fs`` / ``client_terminal``: whether to advertise them by default;
    - ``mcp_stdio``: the agent takes stdio MCP servers from the client (the base protocol says
      every agent must); when off, each server reaches it as an HTTP-serving MCP relay the
      session starts (the agent's ``mcpCapabilities.http`` must be on).
    - ``title_is_command``: an ``execute`` permission carries no ``rawInput`` and its title is
      the exact command (the request's subject then takes the title).
    - ``unlisted_modes``: mode ids ``session/set_mode`` accepts when the session lists no modes
      (codex-acp lists none while its configured policy matches none of its presets); such a
      session is taken to be in its configured default, in no listed mode.
    """

    kind: str
    command: Callable[[InstanceContext], list[str]] | None = None
    locator: Callable[[InstanceContext], BinaryLocation | str] | None = None
    peer: str | None = None
    protocol_args: tuple[str, ...] = ()
    env: Callable[[InstanceContext], dict[str, str]] | None = None
    access_env: Callable[[ModelAccess], dict[str, str]] | None = None
    quiet_env: Mapping[str, str] = {}
    root_env: Mapping[str, str] = {}
    settings: Callable[[ModelAccess, Path], SettingsFiles] | None = None
    home_env: Callable[[Path], dict[str, str]] | None = None
    probe: Callable[[InstanceContext], str | None] | None = None
    auth_method: str | None = None
    auth: Callable[[InstanceContext], str | None] | None = None
    capability_overrides: Callable[[Capabilities], Capabilities] | None = None
    auto_allow: Mapping[str, frozenset[str]] = msgspec.field(default_factory=lambda: dict(DEFAULT_AUTO_ALLOW))
    native_modes: Mapping[str, str] = {}
    cancel_guard: float = 1.0
    cancel_retry: float = 0.25
    failed_text: Callable[[str], str | None] | None = None
    resume_hint: Callable[[str, float | None], str | None] | None = None
    cancel_meta: Mapping[str, JsonValue] = {}
    set_model: bool = False
    version_args: tuple[str, ...] = ()
    client_fs: bool = False
    client_terminal: bool = False
    mcp_stdio: bool = True
    title_is_command: bool = False
    unlisted_modes: tuple[str, ...] = ()
    config_type: type[AcpConfig] = AcpConfig

    # spawn ---------------------------------------------------------------------------------------

    def locate(self, ctx: InstanceContext) -> BinaryLocation | str:
        """Where the agent comes from (configured ``binary``, the pinned peer, ``PATH``), or why
        it cannot be found. Spawns nothing."""
        if self.locator is not None:
            return self.locator(ctx)
        return find_binary(ctx.config.binary, peer=self.peer, env=ctx.env)

    def argv(self, ctx: InstanceContext) -> list[str]:
        """The spawn command: the ``command`` hook, else the located binary + ``args`` + the
        flavor's ACP flags. Raises ``LookupError`` naming why the binary is missing."""
        if self.command is not None:
            return self.command(ctx)
        where = self.locate(ctx)
        if isinstance(where, str):
            raise LookupError(where)
        return [*where.argv, *ctx.config.args, *self.protocol_args]

    def child_env(self, ctx: InstanceContext) -> dict[str, str]:
        """The complete child environment: the runtime's (whose configured ``env`` wins), plus
        this flavor's model mapping, switches and ``env`` hook; writes its settings files."""
        env = dict(ctx.env)
        mapped = flavor_env(self, ctx.access, Path(env.get("HOME") or ctx.home))
        for key, value in mapped.items():
            env.setdefault(key, value)
        if self.env is not None:
            env.update(self.env(ctx))
        return env

    def auth_for(self, ctx: InstanceContext) -> str | None:
        configured = getattr(ctx.config, "auth_method", None)
        if configured:
            return configured
        if self.auth is not None:
            return self.auth(ctx)
        return self.auth_method

    # registry hooks ------------------------------------------------------------------------------

    def check(self, ctx: InstanceContext) -> str | None:
        """The registry probe: the flavor's own, else binary resolution. Never raises."""
        try:
            if self.probe is not None:
                return self.probe(ctx)
            if self.command is not None and self.locator is None:
                return None
            where = self.locate(ctx)
            return where if isinstance(where, str) else None
        except Exception as exc:  # a probe never raises
            return f"cannot resolve the agent binary: {exc!r}"

    def diagnose(self, ctx: InstanceContext) -> dict[str, str | None]:
        """For ``paddock doctor``: the agent's own executable or script, where it was found, its
        own version (the peer's manifest, else ``<argv> --version``; never node's) and auth."""
        from paddock.drivers._registry import binary_version

        report: dict[str, str | None] = {}
        if self.command is not None and self.locator is None:
            argv = self.command(ctx)
            report["binary"] = argv[0]
            report["version"] = binary_version(argv[:1], ctx.env)
        else:
            where = self.locate(ctx)
            if isinstance(where, str):
                report["binary"] = None
                report["reason"] = where
            else:
                report["binary"] = where.path
                report["source"] = where.source
                # A pinned peer's version is its own manifest's (for a node-run agent,
                # `--version` of argv[0] would be node's).
                report["version"] = where.pinned or binary_version([*where.argv, *self.version_args], ctx.env)
        method = self.auth_for(ctx)
        access = ctx.access
        if method:
            report["auth"] = f"authenticate with method {method!r} at session start"
        elif access.api_key:
            report["auth"] = "model key from the config (passed to the agent's own variable)"
        else:
            report["auth"] = "no authenticate call (the agent's own login, or its advertised methods)"
        if access.endpoint:
            report["endpoint"] = access.endpoint
        if access.api_key:
            report["api_key"] = "***"
        if access.model:
            report["model"] = access.model
        return report


def flavor_env(flavor: AcpFlavor, access: ModelAccess, home: Path, written: list[str] | None = None) -> dict[str, str]:
    """The variables ``flavor`` adds for ``access`` (model mapping, switches, root keys), after
    merging its settings files under ``home`` (their paths are appended to ``written``). Pure
    apart from those files; never reads ``os.environ``."""
    env: dict[str, str] = dict(flavor.quiet_env)
    if flavor.access_env is not None:
        env.update(flavor.access_env(access))
    if flavor.root_env and is_root():
        env.update(flavor.root_env)
    if flavor.home_env is not None:
        env.update(flavor.home_env(home))
    if flavor.settings is not None:
        for relative, overlay in flavor.settings(access, home).items():
            if isinstance(overlay, str):
                write_managed_file(home / relative, overlay)
            else:
                merge_json_file(home / relative, overlay)
            if written is not None:
                written.append(str(home / relative))
    return env


MANAGED_MARKER = "# Written by Paddock from the instance's endpoint/api_key/model keys; edit those instead."


def write_managed_file(path: Path, text: str) -> bool:
    """Write a whole settings file (non-JSON formats) that starts with :data:`MANAGED_MARKER`,
    unless the file exists without that marker (the user's own file is left alone). True when
    the file holds ``text`` afterwards."""
    try:
        current = path.read_text(encoding="utf-8")
    except OSError:
        current = None
    if current is not None and not current.startswith(MANAGED_MARKER):
        return False
    body = MANAGED_MARKER + "\n" + text
    if current != body:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_name(path.name + ".paddock-tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body)
        os.replace(tmp, path)
    return True


def on_path(command: str, hint: str) -> Callable[[InstanceContext], BinaryLocation | str]:
    """A ``locator`` for an agent without a pin: the configured ``binary``, else ``command`` on
    the child's ``PATH``; when neither is found the reason ends with ``hint`` (how to get it)."""

    def locate(ctx: InstanceContext) -> BinaryLocation | str:
        where = find_binary(ctx.config.binary, peer=None, command=command, env=ctx.env)
        return f"{where}; {hint}" if isinstance(where, str) else where

    return locate


def _generic_command(ctx: InstanceContext) -> list[str]:
    config = ctx.config
    return [config.binary or "", *config.args]


def _generic_probe(ctx: InstanceContext) -> str | None:
    where = find_binary(ctx.config.binary, peer=None, env=ctx.env)
    return where if isinstance(where, str) else None


GENERIC_FLAVOR = AcpFlavor(
    kind="acp",
    command=_generic_command,
    probe=_generic_probe,
    # Runtime modes map to no native mode by default (configure `native_modes`); the runtime
    # enforces them at the client boundary through `auto_allow`:
    #   approval-required: asks for everything but read/search/think;
    #   auto-accept-edits: also allows edit/delete/move;
    #   full-access: allows everything, choosing allow_always when offered.
    # Like T3 Code, fs and terminal are not advertised unless configured.
)
"""An ACP agent from a command line: ``binary`` + ``args``."""
