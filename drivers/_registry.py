"""The driver registry's records: what a driver is, and what an instance of it is given.

A driver is a plain record (:class:`DriverSpec`): its kind, the msgspec Struct that decodes its
``[instances.<id>]`` table, a factory that builds one adapter per instance, and an optional probe.
Adding a driver means one new package and one line in ``BUILT_IN_DRIVERS``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec

from paddock.actors import HubHandle
from paddock.contract import Capabilities, PaddockError, ProviderAdapter
from paddock.supervisors import Confinement, run_command

from ._access import ModelAccess, check_endpoint

__all__ = ["SHARED_IDLE_TIMEOUT", "DriverConfig", "DriverSpec", "TimedDriverConfig", "InstanceContext", "binary_version", "client_version", "resolve_binary"]

SHARED_IDLE_TIMEOUT = 300.0
"""The default ``idle_timeout`` of a driver whose instance runs one shared process (codex, ACP,
spawned opencode): seconds it keeps running with no session before it is stopped (the next
``start_session`` spawns it again)."""


class DriverConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The keys every ``[instances.<id>]`` table may hold. Drivers subclass it to add their own
    keys; unknown keys are errors, so a typo never passes silently.

    ``endpoint``, ``api_key``/``api_key_env`` and ``model`` are the model keys every driver
    understands; the runtime resolves them into :attr:`InstanceContext.access`
    (:class:`~paddock.drivers.ModelAccess`) and each driver maps that onto its CLI's own
    variables or config.

    ``env`` is added to the instance's child environment; ``pass_env`` names ambient variables
    passed through unchanged (everything else from the host's environment is stripped by the
    runtime, except its allow-list). ``home`` is the instance's private home directory, created
    by the runtime (default ``state_dir/instances/<id>/``).
    """

    driver: str
    binary: str | None = None
    home: str | None = None
    env: dict[str, str] = {}
    args: list[str] = []
    pass_env: list[str] = []
    endpoint: str | None = None
    """The model API base URL, with or without its version suffix (``…/v1``)."""
    api_key: str | None = None
    """The model API key (a secret: never logged, never in an event, masked in ``doctor``)."""
    api_key_env: str | None = None
    """The name of a host variable holding the key, passed on to the agent's own variable."""
    model: str | None = None
    """The default model (a session's or turn's own model wins)."""
    endpoint_timeout: float = 30.0
    """Seconds a running turn may wait on an ``endpoint`` that takes no connection: when the agent
    goes quiet or reports only retries, the runtime checks the endpoint itself and fails the
    turn (``runtime.error`` ``endpoint.unreachable``) once it has been dead this long."""
    confinement: Literal["workspace", "none", "required"] = "workspace"
    """Kernel confinement of the instance's agents (Landlock, applied by the orphan-guard shim):
    ``"workspace"`` confines them where the kernel allows and warns at every start where it does
    not; ``"required"`` makes the instance unavailable where the kernel cannot; ``"none"`` opts
    out. See docs/architecture.md, "Confinement"."""
    roots: list[str] | None = None
    """The workspace roots the agents may write (besides their home). Unset: the folder the
    runtime was opened in (unless it is ``/``) and the system temp folder, each without the state
    dir, other instances' homes and the host's dotfiles. A shared-process instance refuses a
    session whose cwd is outside them; a per-session process also gets its session's cwd."""
    network: Literal["any", "endpoints"] = "any"
    """``"endpoints"``: TCP connect only to the instance's ``endpoint``'s port, its HTTP MCP
    servers' ports and ``allow_ports``; no bind (Landlock ABI 4+)."""
    allow_ports: list[int] = []
    hide: list[str] = []
    """Paths a confined agent must not read even beneath a system folder (``/etc/...``)."""

    def __post_init__(self) -> None:
        if self.endpoint is not None:
            check_endpoint(self.endpoint)
        if self.api_key is not None and self.api_key_env is not None:
            raise ValueError("keys 'api_key' and 'api_key_env': set one, not both")

    def __repr__(self) -> str:
        # The key and the configured env values are secrets; a config may be printed in an error.
        shown = {f: getattr(self, f) for f in self.__struct_fields__}
        if shown.get("api_key") is not None:
            shown["api_key"] = "***"
        if shown.get("env"):
            shown["env"] = {k: "***" for k in shown["env"]}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    __str__ = __repr__


class TimedDriverConfig(DriverConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """:class:`DriverConfig` plus the four timeouts of a driver that starts an agent and runs
    turns on it (claude, codex, opencode), in seconds. Each driver's config says what they bound
    for its protocol; a driver may override a default.
    """

    start_timeout: float = 30.0
    request_timeout: float = 30.0
    interrupt_timeout: float = 15.0
    shutdown_timeout: float = 5.0


class InstanceContext(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the runtime hands a driver to build one instance's adapter.

    ``home`` exists already; ``env`` is the complete child environment the runtime built (allow-list
    plus the config's ``env`` and ``pass_env``, ambient credentials stripped); the driver adds its
    own keys on top of a copy, never reads ``os.environ``. ``hub`` is the EventHub handle the
    adapter makes its emitters from. ``state_dir`` is the runtime's state directory.
    """

    instance_id: str
    driver: str
    config: DriverConfig
    home: str
    env: dict[str, str]
    state_dir: str
    hub: HubHandle
    access: ModelAccess = ModelAccess()
    """The resolved model keys (endpoint, key, model)."""
    confinement: Confinement | None = None
    """The Landlock rules every process of the instance runs under (``None``: unconfined). A
    driver passes them on in its ``ProcessSpec``s unchanged, a per-session process widened by
    its session's cwd (``Confinement.widened``), a server by the port it listens on."""


class DriverSpec(msgspec.Struct, frozen=True, kw_only=True):
    """A driver: ``kind``; ``config_type``, the Struct decoding its ``[instances.<id>]`` table;
    ``create(ctx) -> adapter`` (a :class:`paddock.contract.ProviderAdapter`);
    ``probe(ctx) -> reason | None``, ``None`` when the instance can run,
    else a sentence saying why not; and ``capabilities``, what an instance can do before its agent
    says more at start-up.

    ``probe`` is cheap, never starts a session and never raises (an unusable instance is listed,
    not crashed on). Thread: ``create`` and ``probe`` run on the caller's thread; ``create``
    spawns nothing (the agent process starts with the first session).
    """

    kind: str
    config_type: type[DriverConfig]
    create: Callable[[InstanceContext], ProviderAdapter]
    probe: Callable[[InstanceContext], str | None] | None = None
    capabilities: Capabilities | None = None
    diagnose: Callable[[InstanceContext], dict[str, Any]] | None = None
    """For ``paddock doctor``: any of ``binary``, ``version`` and ``auth`` (a sentence). It may
    run ``<binary> --version`` but never starts a session."""
    command: Callable[[InstanceContext], list[str]] | None = None
    """For ``paddock config check``: the command line an instance's agent would start with
    (spawns and writes nothing; raises ``LookupError`` naming a missing binary)."""


def resolve_binary(binary: str | None, env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """Resolve ``binary`` on the child's ``PATH`` (or as a path): ``(path, None)`` or
    ``(None, reason)``. A probe building block."""
    if not binary:
        return None, "no `binary` configured"
    if os.sep in binary:
        path = os.path.abspath(os.path.expanduser(binary))
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, None
        return None, f"binary {binary!r} does not exist or is not executable"
    found = shutil.which(binary, path=env.get("PATH", os.defpath))
    if found is None:
        return None, f"binary {binary!r} not found on PATH"
    return found, None


def binary_version(argv: list[str], env: Mapping[str, str], *, timeout: float = 10.0) -> str | None:
    """The first line ``argv + ["--version"]`` prints, or ``None`` when it fails."""
    try:
        result = run_command([*argv, "--version"], env=env, timeout=timeout)
    except PaddockError:
        return None
    text = (result.stdout or result.stderr).strip()
    return text.splitlines()[0][:200] if result.returncode == 0 and text else None


def client_version() -> str:
    """This package's version, as drivers introduce themselves to agents (``clientInfo``)."""
    from importlib import metadata

    try:
        return metadata.version("agent-paddock")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0"
