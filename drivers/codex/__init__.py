"""The ``codex`` driver: the Codex app-server (``@openai/codex``, pinned 0.171.0) over stdio JSON
lines, one app-server process per instance, many threads on it.

An instance is a :class:`CodexAdapter` built by the registry (``codex_driver_spec()``); its
``[instances.<id>]`` table is :class:`CodexConfig`.

Conventions (what hosts and other layers can rely on):

- Process: ``<binary> <args> app-server`` with ``CODEX_HOME=<home>/codex`` (or the shadow home),
  the instance's env, ``RUST_LOG=warn`` unless set. ``config.toml`` is generated at every start:
  the offline-safe settings (plugin sync, analytics, feedback, OTEL and the update check off),
  the ``paddock`` model provider when ``endpoint`` is set (Responses API at ``<endpoint>/v1``,
  key from ``PADDOCK_CODEX_API_KEY``), ``model``, then the ``config`` key's overrides.
- Handshake: ``initialize`` (client ``paddock``), ``initialized``, ``model/list`` (the catalog
  in ``CodexAdapter.models()`` and ``InstanceInfo.models``).
- Threads: ``thread/start {cwd, model, approvalPolicy, sandbox}`` from the runtime mode
  (:data:`DEFAULT_APPROVAL_POLICIES`, :data:`DEFAULT_SANDBOX_MODES`); resume cursor
  ``ResumeCursor(driver="codex", version=1, payload='{"thread_id": ...}')`` ->
  ``thread/resume``. A thread Codex never persisted (no turn) cannot be resumed: a new thread
  starts and ``runtime.warning`` says so.
- Ids: turn ids are Codex's (unless ``SendTurnInput.turn_id``), item ids Codex's (the model's
  message and call ids); requests are ``<turn>:req<n>`` (the JSON-RPC id in
  ``provider_refs.request``).
- Requests: command / file change / permissions approvals and the legacy v1 ones ->
  ``request.opened`` (kinds command, file_change, permission); decisions go back verbatim
  (``accept``, ``acceptForSession``, ``decline``, ``cancel``); an unknown request kind ->
  ``request.opened(kind="other")`` with ``data["raw"]``; ``item/tool/requestUserInput`` ->
  ``user-input.requested``. Open requests are cancelled at turn end, interrupt and stop, and
  expire when the process dies.
- Turns: Codex's ``turn/completed`` is the end (``completed | interrupted | failed`` with
  ``turn.error``'s message); ``interrupt_turn`` -> ``turn/interrupt``; ``steer_turn`` ->
  ``turn/steer``; ``rollback_thread`` -> ``thread/revert``.
- Crash: the app-server is restarted by the instance supervisor; see :mod:`._adapter`.

Mode mapping (overridable with ``approval_policies`` / ``sandbox_modes``):

| runtime mode | ``approvalPolicy`` | ``sandbox`` |
|---|---|---|
| approval-required | ``untrusted`` (asks for every command not on Codex's safe list, and every patch) | ``workspace-write`` (T3 Code uses ``read-only``; there an accepted command fails in the sandbox) |
| auto-accept-edits | ``on-request`` | ``workspace-write`` |
| full-access | ``never`` | ``danger-full-access`` |
"""

from ._adapter import CodexAdapter as CodexAdapter
from ._capabilities import CODEX_CAPABILITIES as CODEX_CAPABILITIES
from ._config import DEFAULT_APPROVAL_POLICIES as DEFAULT_APPROVAL_POLICIES
from ._config import DEFAULT_SANDBOX_MODES as DEFAULT_SANDBOX_MODES
from ._config import CodexConfig as CodexConfig
from ._home import OFFLINE_SAFE as OFFLINE_SAFE
from ._home import prepare_home as prepare_home
from ._spec import codex_driver_spec as codex_driver_spec

__all__ = [
    "CODEX_CAPABILITIES",
    "DEFAULT_APPROVAL_POLICIES",
    "DEFAULT_SANDBOX_MODES",
    "OFFLINE_SAFE",
    "CodexAdapter",
    "CodexConfig",
    "codex_driver_spec",
    "prepare_home",
]
