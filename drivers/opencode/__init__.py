"""The ``opencode`` driver: ``opencode serve`` (pinned 1.18.33) over HTTP and its ``/event``
Server-Sent Events stream, one server per instance, many sessions on it.

An instance is an :class:`OpencodeAdapter` built by the registry (``opencode_driver_spec()``);
its ``[instances.<id>]`` table is :class:`OpencodeConfig`. It needs the optional extra
``agent-paddock[opencode]`` (httpx); without it the probe says so.

Conventions (what hosts and other layers can rely on):

- Spawned mode: ``<binary> <args> serve --hostname 127.0.0.1 --port <free port>`` in its own
  process group, environment = the instance's env (HOME and XDG dirs under the instance home)
  plus the network-quieting ``OPENCODE_DISABLE_*`` switches, ``OPENCODE_CONFIG`` (a generated
  config: the common ``endpoint``/``api_key``/``model`` as the OpenAI-compatible provider
  ``paddock`` at ``endpoint/v1``, the only one enabled) and ``OPENCODE_SERVER_PASSWORD`` (a
  fresh one per run unless ``password`` is set). Readiness is the ``opencode server listening on
  URL`` line (the URL is parsed: ``--port 0`` is not random), within ``start_timeout``; an exit
  before it fails with the stderr tail. Teardown: SIGTERM to the group, SIGKILL after
  ``shutdown_timeout``; the spawner's orphan guard kills it when the host dies.
- External mode: ``server_url`` (a bare http(s) origin; redirects are not followed) and an
  optional ``password``; the server is never stopped by us.
- Sessions: ``POST /session`` with an explicit title (no title-generation model call) and the
  runtime mode's permission rules (full-access: allow ``*``; otherwise ask for every tool,
  auto-accept-edits allows ``edit``). Turns: ``prompt_async``; ``session.idle`` after the turn's
  ``busy`` is its only end (the HTTP answer comes before the last events). Interrupt: ``abort``.
- Requests: ``permission.asked`` -> ``request.opened`` (``provider_refs.request`` = ``per_…``),
  answered with ``/permission/{id}/reply``: accept -> once, accept_for_session -> always,
  decline/cancel -> reject. ``question.asked`` -> ``user-input.requested``, answered with
  ``/question/{id}/reply``.
- Ids: items are OpenCode part ids (``prt_…``); turns are ours (``turn-<hex>``); requests are
  ``<turn>:req<n>`` and ``<turn>:input<n>``.
- Resume cursor: ``ResumeCursor(driver="opencode", version=1, payload='{"session_id": "ses_…",
  "cwd": ..., "usage": {...}}')``; a cursor used with another cwd is invalid (a new session
  starts, ``runtime.warning`` opencode.resume_failed).
- Fork and compaction (``Runtime.fork_thread`` / ``compact_thread``): the fork copies the session
  on the server (``/session/{id}/fork``) and the new thread starts on it; compaction summarizes
  it (``/session/{id}/summarize``) as a turn of its own, ended by the server's idle. A
  resumed or forked session gets the permission rules of its own start's runtime mode (``PATCH
  /session/{id}``).
- Server death: running turns fail, open requests expire, sessions report
  ``session.state.changed`` starting, then ready once the supervisor restarted the server (at most
  3 restarts in 60 s).
"""

from ._adapter import OpencodeAdapter as OpencodeAdapter
from ._capabilities import OPENCODE_CAPABILITIES as OPENCODE_CAPABILITIES
from ._config import OpencodeConfig as OpencodeConfig
from ._config import check_server_url as check_server_url
from ._config import permission_rules as permission_rules
from ._config import server_config as server_config
from ._spec import opencode_driver_spec as opencode_driver_spec
from ._translate import item_kind_of_tool as item_kind_of_tool

__all__ = [
    "OPENCODE_CAPABILITIES",
    "OpencodeAdapter",
    "OpencodeConfig",
    "check_server_url",
    "item_kind_of_tool",
    "opencode_driver_spec",
    "permission_rules",
    "server_config",
]
