"""The ``[instances.<id>]`` table of a ``codex`` instance and the runtime-mode mapping."""

from __future__ import annotations

from paddock.contract import JsonObject
from paddock.drivers._registry import SHARED_IDLE_TIMEOUT, TimedDriverConfig

__all__ = ["DEFAULT_APPROVAL_POLICIES", "DEFAULT_SANDBOX_MODES", "CodexConfig"]

# codex-app-server.md section 6 (the T3 Code mapping).
DEFAULT_APPROVAL_POLICIES: dict[str, str] = {
    "approval-required": "untrusted",
    "auto-accept-edits": "on-request",
    "full-access": "never",
}
"""Runtime mode -> ``approvalPolicy`` of ``thread/start`` / ``turn/start``."""

DEFAULT_SANDBOX_MODES: dict[str, str] = {
    # T3 Code maps approval-required to read-only, but with 0.171.0 a command the host accepted
    # then runs inside the read-only sandbox and fails (`touch` -> item `failed`): an accept
    # must let it write the workspace. `untrusted` still asks before every non-safe command.
    "approval-required": "workspace-write",
    "auto-accept-edits": "workspace-write",
    "full-access": "danger-full-access",
}
"""Runtime mode -> ``sandbox`` of ``thread/start``."""


class CodexConfig(TimedDriverConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The common keys (``driver``, ``binary``, ``home``, ``env``, ``args``, ``pass_env``,
    ``endpoint``, ``api_key``/``api_key_env``, ``model``; ``binary`` defaults to the pinned
    ``codex`` in the peers dir, then ``codex`` on ``PATH``; ``args`` go right after the binary,
    before ``app-server``) plus:

    - ``shadow_home``: the instance's own ``CODEX_HOME`` as a shadow of the main home ``home``
      (then required): sessions, archived sessions, skills, plugins, cache and logs are symlinks
      into ``home``, SQLite state lives in ``home`` (``sqlite_home``), ``auth.json`` and
      ``models_cache.json`` stay private files of the shadow. Without it ``CODEX_HOME`` is
      ``<home>/codex``, private to the instance;
    - ``config``: tables and keys merged (deeply) over the generated ``config.toml``: the
      offline-safe defaults and the ``model_providers`` entry of ``endpoint``; any of them can be
      overridden here;
    - ``approval_policies`` / ``sandbox_modes``: runtime mode -> ``approvalPolicy`` / ``sandbox``,
      over :data:`DEFAULT_APPROVAL_POLICIES` / :data:`DEFAULT_SANDBOX_MODES`;
    - ``experimental_api``: ``capabilities.experimentalApi`` at ``initialize``;
    - ``start_timeout``: seconds for the app-server to start and answer ``initialize``;
    - ``request_timeout``: seconds a request to the app-server (and a host operation naming no
      timeout) may take;
    - ``interrupt_timeout``: seconds after ``turn/interrupt`` before a turn the app-server never
      ends is completed ``interrupted`` by the driver;
    - ``read_coalesce``: seconds the reader waits after a short read of the app-server's stdout
      (it writes one line per streamed delta), so lines reach the session in batches: at most
      this much added delay, about a third of the CPU per event (``paddock bench peer-codex``);
      0 reads at once;
    - ``idle_timeout``: seconds the app-server keeps running with no thread loaded before it is
      stopped (the next ``start_session`` spawns it again).
    """

    shadow_home: str | None = None
    config: JsonObject = {}
    approval_policies: dict[str, str] = {}
    sandbox_modes: dict[str, str] = {}
    experimental_api: bool = True
    read_coalesce: float = 0.001
    idle_timeout: float = SHARED_IDLE_TIMEOUT

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.shadow_home is not None and not self.home:
            raise ValueError("key 'shadow_home' needs key 'home': the main Codex home it shadows")
        for key, table in (("approval_policies", self.approval_policies), ("sandbox_modes", self.sandbox_modes)):
            unknown = set(table) - set(DEFAULT_APPROVAL_POLICIES)
            if unknown:
                raise ValueError(f"key {key!r}: unknown runtime modes {sorted(unknown)}")
