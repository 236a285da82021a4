"""The ``claude`` driver: the Claude Code CLI (pinned 2.1.197) in stream-json mode with the stdio
permission prompt tool, one CLI process per session.

An instance is a :class:`ClaudeAdapter` built by the registry (``claude_driver_spec()``); its
``[instances.<id>]`` table is :class:`ClaudeConfig`.

Conventions (what hosts and other layers can rely on):

- Process: ``<binary> <args> --output-format stream-json --verbose --input-format stream-json
  --include-partial-messages --permission-prompt-tool stdio --permission-mode <mode>
  [--model=<m>] (--session-id=<uuid> | --resume=<id>) [--max-turns N]`` in the session's cwd,
  environment = the instance's env minus ``CLAUDECODE``, plus ``CLAUDE_CONFIG_DIR=<home>/claude``
  unless the env sets one. The session is ready once the CLI answered ``initialize``.
- Session ids: the driver picks the session id (``--session-id``), so the cursor exists before
  the first turn. Resume cursor: ``ResumeCursor(driver="claude", version=1,
  payload='{"session_id": ..., "usage": {...}}')`` (the cumulative usage keeps
  ``thread.token-usage.updated`` monotonic across processes). A failed ``--resume`` (the CLI exits
  with "No conversation found") starts a fresh session and emits
  ``session.started(resume_failed=True)`` plus ``runtime.warning`` claude.resume_failed.
- Ids: turns are ours (``turn-<hex>`` unless ``SendTurnInput.turn_id``); text and reasoning items
  are ``<turn>:<message id>:<block index>``; tool items use the CLI's ``tool_use`` id; requests
  are ``<turn>:req<n>`` (the CLI's UUID in ``provider_refs.request``).
- Items: Bash -> command, Write/Edit/MultiEdit/NotebookEdit -> file_change, Read -> file_read,
  Glob/Grep -> search, WebSearch/WebFetch -> web_search, ``mcp__*`` -> mcp_tool_call, others ->
  tool_call. A tool item completes with its ``tool_result`` text (``failed`` on ``is_error``,
  ``declined`` after a host decline).
- Turns: ``result`` is the only end: ``is_error`` false -> ``completed`` (``stop_reason``), true ->
  ``failed`` (``error``; model API errors name the HTTP status). ``interrupt_turn`` sends
  control_request ``interrupt``, emits ``turn.aborted`` at once and the turn ends
  ``interrupted``; if the CLI never ends it, the driver does after ``interrupt_timeout``.
  Sending a turn while one runs raises ``ValidationError``.
- Stdout: each line is decoded once, on the reader thread, into the Structs of ``_wire.py``. A
  non-JSON line is skipped with ``runtime.warning`` transport.malformed_line; a line of a type
  the driver does not know is ignored (as the CLI ignores ours); a known type whose fields have
  another shape is skipped with ``runtime.warning`` claude.message_failed.
- Process death: the running turn fails, open requests expire, ``session.exited`` carries the
  exit code or signal and the stderr tail (``recoverable`` once a turn was saved). Not restarted:
  start the thread again (from its cursor) to continue.

Mode mapping (``--permission-mode``, overridable with ``permission_modes``):

| runtime / interaction mode | native mode | who answers ``can_use_tool`` |
|---|---|---|
| approval-required | ``default`` | the host (``request.opened``) |
| auto-accept-edits | ``acceptEdits`` | the host, for what the CLI still asks |
| full-access | ``bypassPermissions`` (+ ``--allow-dangerously-skip-permissions``) | the driver: allow at once, still ``request.opened`` + ``request.resolved`` |
| plan (interaction) | ``plan`` | the host |

The CLI refuses ``bypassPermissions`` as root unless ``IS_SANDBOX=1``: there full-access runs in
``default`` mode and the driver allows every ask itself.
"""

from ._adapter import ClaudeAdapter as ClaudeAdapter
from ._command import build_argv as build_argv
from ._capabilities import CLAUDE_CAPABILITIES as CLAUDE_CAPABILITIES
from ._config import DEFAULT_PERMISSION_MODES as DEFAULT_PERMISSION_MODES
from ._config import ClaudeConfig as ClaudeConfig
from ._tools import item_kind_of_tool as item_kind_of_tool
from ._spec import claude_driver_spec as claude_driver_spec

__all__ = [
    "CLAUDE_CAPABILITIES",
    "DEFAULT_PERMISSION_MODES",
    "ClaudeAdapter",
    "ClaudeConfig",
    "build_argv",
    "claude_driver_spec",
    "item_kind_of_tool",
]
