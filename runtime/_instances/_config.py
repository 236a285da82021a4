"""Runtime configuration: a TOML file, a dict, or nothing (the built-in ``local`` instance).

The file has an optional ``[runtime]`` table and one ``[instances.<id>]`` table per instance.
Each instance table is decoded by its driver's own msgspec schema; the runtime only reads
``driver`` to find that schema. Errors name the file, the table and the key.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from paddock._instances._handoff import InstanceHandoff, rules_from_config, take_handoff
from paddock._state._usage import Pricing
from paddock.contract import ApprovalRule, Budget, ConfigError
from paddock.drivers.ray import RayPlacement
from paddock.supervisors import ResourceLimits

__all__ = ["ADMISSION_KEYS", "Admission", "InstanceEntry", "REMOVED_RUNTIME_KEYS", "RuntimeConfig", "RuntimeSettings", "config_warnings", "load_config"]

_INSTANCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class RuntimeSettings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The ``[runtime]`` table.

    ``idle_timeout``: seconds a session may sit idle before it is stopped (it resumes on the next
    turn). ``resume``: ``"auto"`` starts fresh when a resume fails (with a ``runtime.warning``),
    ``"require"`` raises instead. ``event_log``: keep the durable event log (on by default; off only
    for benchmarks). ``event_log_max_bytes``: size-based retention of the log (``None`` keeps
    everything). There is no ``raw_events``: native payloads are never attached to events (the
    key is refused with a :class:`ConfigError` saying so). ``stall_warning``: seconds a running
    turn may go without any event before a ``runtime.warning`` (``turn.stalled``) says so
    (``false``: never). ``approval_rules`` (``[[runtime.approval_rules]]``): the rules every
    instance's sessions apply after their thread's and their instance's own.
    """

    idle_timeout: float = 1800.0
    resume: Literal["auto", "require"] = "auto"
    event_log: bool = True
    event_log_max_bytes: int | None = None
    start_timeout: float = 60.0
    stall_warning: float | Literal[False] = 120.0
    checkpoints_kept: Annotated[int, msgspec.Meta(ge=1)] = 100
    """Per-turn checkpoints kept per worktree thread; older ones are pruned (their hidden refs
    deleted) as new ones are taken."""
    approval_rules: tuple[ApprovalRule, ...] = ()
    on_usage_limit: Literal["fail", "wait", "failover"] = "fail"
    """A turn that hits a model's usage limit: ``"fail"`` ends it failed (with a ``runtime.error``
    of ``error_class = "usage_limit"``); ``"wait"`` also parks the thread and sends the turn again
    when the limit resets; ``"failover"`` hands the thread over to the first instance of
    ``failover`` that is available and not limited itself (else it waits). An instance's own
    ``on_usage_limit`` wins."""
    failover: tuple[str, ...] = ()
    """The instances ``"failover"`` tries, in order (configured instance ids; an instance's own
    ``failover`` wins)."""
    budgets: Budget | None = None
    """The runtime's budget (``paddock.contract.Budget``'s keys); ``set_budget`` overrides it."""
    max_live_sessions: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Admission (``paddock._threads._admission``): live sessions of all instances together."""
    max_running_turns: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """Running turns of all instances together; more are queued (or refused: ``queue``)."""
    queue: bool = True
    """A turn beyond ``max_running_turns`` waits in its instance's queue; ``false``: ``CapacityError``."""
    memory_mb: Annotated[int, msgspec.Meta(ge=1)] | None = None
    """New sessions are refused (``CapacityError``) while the agents' RSS sums over this many MiB."""
    ray: dict[str, Any] = {}
    """The default of every ``placement = { ray = {...} }`` (``paddock.drivers.ray.RayPlacement``'s
    keys); an instance's own keys win."""


class Admission(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An instance's admission keys (``max_live_sessions``, ``max_running_turns``, ``queue``);
    ``None``: no bound of its own (``queue``: the runtime's)."""

    max_live_sessions: Annotated[int, msgspec.Meta(ge=1)] | None = None
    max_running_turns: Annotated[int, msgspec.Meta(ge=1)] | None = None
    queue: bool | None = None


ADMISSION_KEYS = tuple(Admission.__struct_fields__)


class InstanceEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One ``[instances.<id>]`` table before its driver decoded it."""

    instance_id: str
    driver: str
    table: dict[str, Any]
    """The table without ``placement`` and the hand-off keys."""
    handoff: InstanceHandoff = InstanceHandoff()
    """The MCP servers and preamble keys, taken out of ``table`` (``paddock._instances._handoff``)."""
    placement: RayPlacement | None = None
    """``None``: ``placement = "local"`` (the default), in this process."""
    workspace: Literal["shared", "worktree"] = "shared"
    """``"shared"``: a session runs in the ``cwd`` it is given; ``"worktree"``: each thread runs in
    a git worktree of its own (``paddock._workspaces``)."""
    budget: Budget | None = None
    """The instance's ``budgets = {...}``; ``set_budget(instance=...)`` overrides it."""
    on_usage_limit: Literal["fail", "wait", "failover"] | None = None
    """The instance's own ``on_usage_limit``; ``None``: the runtime's."""
    failover: tuple[str, ...] | None = None
    """The instance's own ``failover`` list; ``None``: the runtime's."""
    admission: Admission = Admission()
    limits: ResourceLimits | None = None
    """The instance's ``limits = {...}``: each agent tree's memory, CPU and process bounds."""


class RuntimeConfig(msgspec.Struct, frozen=True, kw_only=True):
    path: str | None
    settings: RuntimeSettings
    instances: tuple[InstanceEntry, ...]
    pricing: dict[str, Pricing] = {}
    """The ``[pricing."<model>"]`` tables: USD per million tokens, for agents that report no cost."""


DEFAULT_CONFIG: dict[str, Any] = {"instances": {"local": {"driver": "local"}}}


def _issue(exc: msgspec.ValidationError, table: str) -> str:
    text = str(exc)
    match = re.search(r" - at `\$(.*)`$", text)
    if match:
        key = match.group(1).lstrip(".")
        text = text[: match.start()]
        return f"{table} key {key!r}: {text}"
    return f"{table}: {text}"


def load_config(config: str | Path | Mapping[str, Any] | None) -> RuntimeConfig:
    """Read and check the configuration.

    ``config`` is a path to a TOML file, an already parsed mapping, or ``None`` for the built-in
    ``local`` instance. Raises :class:`ConfigError` naming the file, the table and the key. It does
    not check drivers: an unknown driver makes its instance unavailable, not the config invalid.
    """
    path: str | None = None
    if config is None:
        data: Mapping[str, Any] = DEFAULT_CONFIG
    elif isinstance(config, (str, Path)):
        path = str(config)
        try:
            with open(config, "rb") as fh:
                data = tomllib.load(fh)
        except FileNotFoundError:
            raise ConfigError(path, "the file does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(path, f"not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(path, f"not valid TOML: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
        except OSError as exc:
            raise ConfigError(path, f"cannot be read: {exc.strerror or exc}") from None
    elif isinstance(config, Mapping):
        data = config
    else:
        raise ConfigError(None, f"expected a path, a mapping or None, got {type(config).__name__}")

    unknown = set(data) - {"runtime", "instances", "pricing"}
    if unknown:
        raise ConfigError(path, f"unknown top-level table(s): {', '.join(sorted(unknown))}")
    runtime_table = data.get("runtime", {})
    if isinstance(runtime_table, Mapping):
        _refuse_removed(path, runtime_table)
        _check_durations(path, "[runtime]", runtime_table)
        rules_from_config(runtime_table.get("approval_rules", ()), path, "[runtime]")
    try:
        settings = msgspec.convert(runtime_table, RuntimeSettings)
    except msgspec.ValidationError as exc:
        raise ConfigError(path, _issue(exc, "[runtime]")) from None

    raw_instances = data.get("instances", {})
    if not isinstance(raw_instances, Mapping):
        raise ConfigError(path, "[instances] must be a table of [instances.<id>] tables")
    entries = []
    for instance_id, table in raw_instances.items():
        where = f"[instances.{instance_id}]"
        if not _INSTANCE_ID.match(str(instance_id)):
            raise ConfigError(
                path, f"{where}: an instance id is 1-64 letters, digits, '.', '_' or '-'"
            )
        if not isinstance(table, Mapping):
            raise ConfigError(path, f"{where} must be a table")
        driver = table.get("driver")
        if not isinstance(driver, str) or not driver:
            raise ConfigError(path, f"{where} key 'driver': required, a driver name such as 'local'")
        _check_durations(path, where, table)
        table = dict(table)
        placement = _placement(path, where, table.pop("placement", "local"), settings.ray)
        workspace = table.pop("workspace", "shared")
        if workspace not in ("shared", "worktree"):
            raise ConfigError(path, f"{where} key 'workspace': \"shared\" (the default) or \"worktree\", got {workspace!r}")
        table, handoff = take_handoff(table, path=path, instance_id=str(instance_id))
        try:
            budget = msgspec.convert(table.pop("budgets"), Budget) if "budgets" in table else None
        except msgspec.ValidationError as exc:
            raise ConfigError(path, _issue(exc, f"{where} budgets")) from None
        on_limit = table.pop("on_usage_limit", None)
        if on_limit not in (None, "fail", "wait", "failover"):
            raise ConfigError(path, f"{where} key 'on_usage_limit': expected \"fail\", \"wait\" or \"failover\", "
                                    f"got {on_limit!r}")
        failover = table.pop("failover", None)
        if failover is not None:
            if not isinstance(failover, (list, tuple)) or not all(isinstance(f, str) for f in failover):
                raise ConfigError(path, f"{where} key 'failover': expected an array of instance ids")
            failover = tuple(failover)
        try:  # admission keys (paddock._threads._admission)
            admission = msgspec.convert({k: table.pop(k) for k in ADMISSION_KEYS if k in table}, Admission)
        except msgspec.ValidationError as exc:
            raise ConfigError(path, _issue(exc, where)) from None
        # issue 35, resource limits: held by each agent's orphan-guard shim
        try:
            limits = msgspec.convert(table.pop("limits"), ResourceLimits) if "limits" in table else None
        except msgspec.ValidationError as exc:
            raise ConfigError(path, _issue(exc, f"{where} limits")) from None
        entries.append(InstanceEntry(instance_id=str(instance_id), driver=driver, table=table, handoff=handoff,
                                     placement=placement, workspace=workspace, budget=budget,
                                     on_usage_limit=on_limit, failover=failover, admission=admission,
                                     limits=limits or None))
    _check_failover(path, settings, entries)
    try:
        pricing = msgspec.convert(data.get("pricing", {}), dict[str, Pricing])
    except msgspec.ValidationError as exc:
        raise ConfigError(path, _issue(exc, "[pricing]")) from None
    return RuntimeConfig(path=path, settings=settings, instances=tuple(entries), pricing=pricing)


def _check_failover(path: str | None, settings: RuntimeSettings, entries: list[InstanceEntry]) -> None:
    """Every ``failover`` list names configured instances (an instance's own list not itself),
    and a ``"failover"`` policy has a list to try. An instance that is its own only target at run
    time (the runtime's list) finds none and waits."""
    known = [e.instance_id for e in entries]
    lists = [("[runtime]", None, settings.failover)] + [
        (f"[instances.{e.instance_id}]", e.instance_id, e.failover) for e in entries if e.failover is not None]
    for where, own, names in lists:
        for name in names:
            if name not in known:
                raise ConfigError(path, f"{where} key 'failover': {name!r} is not a configured instance; configured: "
                                        f"{', '.join(known) or 'none'}")
            if name == own:
                raise ConfigError(path, f"{where} key 'failover': an instance cannot fail over to itself")
    if settings.on_usage_limit == "failover" and not settings.failover:
        raise ConfigError(path, "[runtime] on_usage_limit = \"failover\" needs a 'failover' list of instances")
    for e in entries:
        if e.on_usage_limit == "failover" and not (e.failover if e.failover is not None else settings.failover):
            raise ConfigError(path, f"[instances.{e.instance_id}] on_usage_limit = \"failover\" needs a 'failover' "
                                    f"list of other instances (in its table or in [runtime])")


REMOVED_RUNTIME_KEYS: dict[str, str] = {
    "raw_events": "removed; native payloads are not attached to events (they can carry credentials), so the "
                  "key has no effect to offer",
}
"""``[runtime]`` keys Paddock once had, and why each is gone (a clear refusal, not 'unknown key')."""


def _refuse_removed(path: str | None, table: Mapping[str, Any]) -> None:
    for key, why in REMOVED_RUNTIME_KEYS.items():
        if key in table:
            raise ConfigError(path, f"[runtime] key {key!r}: {why}; delete the line")


def _check_durations(path: str | None, where: str, table: Mapping[str, Any]) -> None:
    """Refuse a timeout (a key ending in ``_timeout``, and ``stall_warning``) that is zero or
    negative: such a bound would end every wait at once. ``stall_warning = false`` stays allowed."""
    for key, value in table.items():
        if not (str(key).endswith("_timeout") or key == "stall_warning"):
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
            raise ConfigError(path, f"{where} key {key!r}: must be a positive number of seconds, got {value!r}")


def config_warnings(config: RuntimeConfig) -> list[str]:
    """What is legal but likely not meant: a config file with no instance (every command then
    has nothing to run)."""
    if config.path is not None and not config.instances:
        return [f"{config.path} configures no instance: add an [instances.<id>] table (paddock init writes one)"]
    return []


def _placement(path: str | None, where: str, value: Any, default: Mapping[str, Any]) -> RayPlacement | None:
    """``placement``: ``"local"`` -> ``None``; ``"ray"`` or ``{ ray = {...} }`` -> the
    :class:`RayPlacement` of ``[runtime] ray`` with the instance's keys on top."""
    if value == "local":
        return None
    if value == "ray":
        value = {"ray": {}}
    if not isinstance(value, Mapping) or set(value) != {"ray"} or not isinstance(value["ray"], Mapping):
        raise ConfigError(path, f"{where} key 'placement': \"local\" (the default), \"ray\" or {{ ray = {{...}} }}")
    try:
        return msgspec.convert({**default, **value["ray"]}, RayPlacement)
    except msgspec.ValidationError as exc:
        raise ConfigError(path, _issue(exc, f"{where} placement.ray")) from None


def issue_from(exc: msgspec.ValidationError, instance_id: str) -> str:
    """Describe a driver schema's validation error as ``[instances.<id>] key 'k': ...``."""
    return _issue(exc, f"[instances.{instance_id}]")
