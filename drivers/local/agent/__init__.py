"""The built-in local agent program: a deterministic ACP v1 agent on stdio.

Run it as ``python -m paddock.drivers.local [--buffered] [--state-dir DIR]``. One JSON-RPC object per
line; stdout carries protocol lines only, diagnostics go to stderr.

Directives are prompt lines starting with ``@`` (name up to the first space, argument = rest of
the line); all other lines, joined and stripped, are the prompt. Text blocks of a prompt are
joined with newlines; other block types are ignored. Unknown directives are dropped; a malformed
argument fails the prompt with -32602. The last occurrence of a directive wins, except
``@run``/``@write``/``@mcp``, which run in prompt order.

- ``@reply TEXT``: the answer. Precedence: ``@reply`` > ``@reply-history`` (``history: N``,
  N = earlier prompts of the session, cancelled/replayed ones included) > ``@env NAME`` (value or
  ``<unset>``) > ``@spawn`` (``spawned PID``) > ``@alloc``/``@fork``/``@burn`` (``allocated N MB;
  forked N; burned S s``) > ``You said: <prompt>``.
- ``@chunks N`` (>= 1): exactly N non-empty ``agent_message_chunk`` updates; an answer
  shorter than N characters is repeated until it has at least N (the concatenation is that
  repeated text); an empty answer sends no chunk. Without ``@chunks`` the answer goes out in
  min(3, its length) chunks and is never repeated. ``@delay S`` pauses S seconds between chunks.
- ``@plan A; B``: one ``plan`` update (priority medium, status pending) before tools and answer.
- ``@usage IN OUT``: after the answer a ``usage_update {used, size: 200000}`` where ``used`` is
  the session's cumulative IN+OUT, and ``usage {inputTokens, outputTokens, totalTokens}`` in
  the PromptResponse (the v1 schema has no PromptResponse usage; the shape is the one
  claude-agent-acp and copilot send).
- ``@cost USD``: before the answer a ``usage_update`` whose ``cost {amount, currency: "USD"}`` is
  the session's cumulative cost with USD added (a cost report in the middle of the turn).
- ``@limit-until T [ACCOUNT]``: until Unix time T the prompt fails with error 429 ``usage limit
  reached; resets at T`` (a model's usage limit); from T on the directive is ignored. With
  ACCOUNT, only an agent whose ``ACCOUNT`` environment variable is ACCOUNT is limited (two
  instances standing for two accounts of one provider).
- ``@run CMD``: ``tool_call`` (execute, pending) → ``session/request_permission`` (allow_once,
  allow_always, reject_once; every directive asks, allow_always is not remembered) → on allow
  ``in_progress``, output deltas as ``tool_call_update`` content, then ``completed`` with
  ``rawOutput {exitCode, output}`` (also for non-zero exits); on reject ``failed`` with
  ``rawOutput {message: "declined: …", code: "declined"}``. ``/bin/sh -c`` in the session cwd,
  own process group; a cancel kills it.
- ``@write PATH TEXT``: TEXT is verbatim (no escapes, no newline added); ``tool_call`` (edit,
  with a ``diff`` block, absolute path), permission, then ``fs/write_text_file`` when the client
  advertised ``fs.writeTextFile`` (an error answer fails the call with its message), else a
  direct write.
- ``@mcp SERVER TOOL [JSON]``: call TOOL of the session's MCP server SERVER (a stdio entry of
  ``mcpServers`` on ``session/new``/``session/load``; the agent connects them before answering,
  ``initialize`` + ``tools/list``, and advertises ``mcpCapabilities {http: false, sse: false}``)
  with the JSON object as arguments (default ``{}``): ``tool_call`` (other, title
  ``SERVER: TOOL``, ``rawInput`` the arguments) → permission → ``completed`` with the result's
  text as content and ``rawOutput`` the MCP result, or ``failed`` (unknown server, an error
  answer, an ``isError`` result, a server that went away).
- ``@crash CODE`` (default 1): exit right after the first chunk, output flushed.
- ``@spawn S``: a grandchild ``sleep S`` ignoring SIGTERM, in the agent's process group.
- ``@alloc MB`` (>= 1): allocate and touch MB MiB in 8 MiB steps 20 ms apart, held until the
  agent exits (the answer counts every MiB held so far); exercises a ``memory_mb`` limit.
- ``@fork N`` (>= 1): fork N children that sleep up to 10 minutes, as fast as possible (each
  leaves within 250 ms of the agent's exit; reaped by a thread of the agent); exercises a
  ``processes`` limit.
- ``@burn S``: keep one CPU busy for S seconds of wall time in the agent itself; exercises a
  ``cpu_percent`` limit.
- ``@ignore-sigterm``: the agent ignores SIGTERM from then on (children inherit it).
- ``@garbage``: a non-JSON line and a ``local/unknown`` request (not awaited) first.

An outcome ``cancelled`` or a ``session/cancel`` cancels the turn (stopReason ``cancelled``);
a cancel also cancels queued prompts of the session. Agent request ids start at 0.
"""

from ._main import main as main

__all__ = ["main"]
