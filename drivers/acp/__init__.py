"""The shared ACP (Agent Client Protocol v1) adapter and its small per-agent flavors.

An instance is an :class:`AcpAdapter` built by the registry from a flavor
(``paddock.drivers.acp.acp_driver_spec(flavor)``); a flavor (:class:`AcpFlavor`) holds only what differs
between agents. ``GENERIC_FLAVOR`` runs any ACP agent from ``binary`` + ``args``.

Conventions (what hosts and other drivers can rely on):

- Flow: ``initialize`` (protocol 1; ``fs``/``terminal`` advertised only when configured) ->
  ``authenticate`` when the flavor or config names a method -> ``session/new``, or
  ``session/load`` (else ``session/resume``) from a resume cursor; a failed resume starts a new
  session and emits ``session.started(resume_failed=True)`` plus ``runtime.warning``
  (``acp.resume_failed``).
- Resume cursor: ``ResumeCursor(driver=<flavor kind>, version=1, payload='{"sessionId": ...}')``,
  in ``Session.resume_cursor`` and every ``TurnStartResult``.
- Ids: turns are ours (``turn-<hex>`` unless ``SendTurnInput.turn_id``); tool items use the
  agent's ``toolCallId``; message and reasoning items are ``<turn>:m<n>`` / ``<turn>:r<n>``;
  requests are ``<turn>:req<n>``. Native ids are in ``provider_refs``.
- Turns: ``send_turn`` returns once the prompt is written; ``turn.started`` comes first and the
  prompt result ends the turn: ``end_turn``/``max_tokens``/``max_turn_requests``/``refusal`` ->
  ``completed`` (``stop_reason`` says which), ``cancelled`` -> ``turn.aborted`` then
  ``interrupted`` (host interrupt) or ``cancelled`` (the agent's own), an error -> ``failed``.
- Permissions: ``request.opened`` for every ``session/request_permission``, also when the runtime
  mode answers by itself (then ``request.resolved`` follows at once). Decisions pick options by
  kind. Disposition: full-access allows all (allow_always when offered); auto-accept-edits
  allows edit/delete/move/read/search/think; approval-required allows read/search/think only.
  An interrupt answers pending requests ``cancelled`` (ACP requires it).
- Agent death: the running turn fails, open requests expire, ``session.exited(recoverable=<agent
  can session/load or session/resume>)``; the agent restarts (at most 3 times in 60 s, with
  backoff) and the next ``send_turn`` reloads the session transparently
  (``session.started(resumed=True)``), or raises ``SessionClosedError`` when it cannot.
- Transport warnings (malformed or over-long lines) become ``runtime.warning`` on every session
  of the process (``transport.malformed_line``, ``transport.line_too_long``).
"""

from ._adapter import AcpAdapter as AcpAdapter
from ._catalog import RegistryAgent as RegistryAgent
from ._catalog import RegistryDocument as RegistryDocument
from ._catalog import RegistryLaunch as RegistryLaunch
from ._catalog import load_registry as load_registry
from ._catalog import registry_command as registry_command
from ._catalog import registry_launch as registry_launch
from ._catalog import registry_peer as registry_peer
from ._capabilities import base_capabilities as base_capabilities
from ._config import AcpConfig as AcpConfig
from ._flavor import GENERIC_FLAVOR as GENERIC_FLAVOR
from ._flavor import AcpFlavor as AcpFlavor
from ._flavor import flavor_env as flavor_env
from ._permissions import DEFAULT_AUTO_ALLOW as DEFAULT_AUTO_ALLOW
from ._spec import acp_driver_spec as acp_driver_spec

__all__ = [
    "DEFAULT_AUTO_ALLOW",
    "GENERIC_FLAVOR",
    "AcpAdapter",
    "AcpConfig",
    "AcpFlavor",
    "RegistryAgent",
    "RegistryDocument",
    "RegistryLaunch",
    "acp_driver_spec",
    "base_capabilities",
    "flavor_env",
    "load_registry",
    "registry_command",
    "registry_launch",
    "registry_peer",
]
