"""The ``[instances.<id>]`` table of an ACP driver instance."""

from __future__ import annotations

from paddock.drivers._registry import SHARED_IDLE_TIMEOUT, DriverConfig

__all__ = ["AcpConfig"]


class AcpConfig(DriverConfig, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The common keys of every driver (:class:`paddock.drivers.DriverConfig`: ``driver``, ``binary``,
    ``home``, ``env``, ``args``, ``pass_env``) plus:

    - ``client_fs`` / ``client_terminal``: advertise ``fs/*`` and ``terminal/*`` to the agent
      (``None``: the flavor's default). Served requests stay confined to the workspace roots;
    - ``auth_method``: the ``authenticate`` method id (``None``: the flavor's, or no call);
    - ``native_modes``: runtime mode (``approval-required``, ``auto-accept-edits``,
      ``full-access``) or ``plan`` -> the agent's own mode id, on top of the flavor's mapping;
    - ``cancel_guard``: seconds to wait for evidence that a turn started before sending
      ``session/cancel`` (``None``: the flavor's);
    - ``cancel_timeout``: seconds after ``session/cancel`` before a turn the agent never ends is
      completed ``interrupted`` by the runtime (with ``runtime.warning`` acp.cancel_unacknowledged);
    - ``start_timeout``: seconds the agent gets to start and answer ``initialize`` and
      ``authenticate`` (a ``start_session`` timeout, when shorter, wins for the first start);
    - ``request_timeout``: seconds to wait for the agent's answer to a control request;
    - ``terminal_output_limit``: the most output bytes kept per terminal when the agent names none;
    - ``idle_timeout``: seconds the agent process keeps running with no session before it is
      stopped (the next ``start_session`` spawns it again).
    """

    client_fs: bool | None = None
    client_terminal: bool | None = None
    auth_method: str | None = None
    native_modes: dict[str, str] = {}
    cancel_guard: float | None = None
    cancel_timeout: float = 30.0
    start_timeout: float = 30.0
    request_timeout: float = 60.0
    terminal_output_limit: int = 1_048_576
    idle_timeout: float = SHARED_IDLE_TIMEOUT
