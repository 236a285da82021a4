"""The app-server side of an instance: how the shared router (``paddock.actors.Router``) finds
the thread of each app-server message, decoding it once (typed msgspec decoders per method), and
the link type of one app-server incarnation (:data:`ServerLink`).

Thread: :meth:`Router.route` runs on the connection's stdout reader thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, ClassVar

import msgspec

from paddock.actors import Incoming, JsonRpcNotification, JsonRpcRequest, Req, SharedLink
from paddock.actors import Router as SharedRouter

from . import _wire as w
from ._translate import DELTA_STREAMS

__all__ = ["Incoming", "Note", "Req", "Router", "ServerLink"]

log = logging.getLogger(__name__)

Note = tuple[str, Any]
"""A decoded notification: ``(method, typed params)`` (a plain tuple: one per delta on the hot
path, where a dataclass's ``__init__`` costs more than the decode)."""


_delta = msgspec.json.Decoder(w.Delta)
_DECODERS: dict[str, msgspec.json.Decoder[Any]] = {m: _delta for m in DELTA_STREAMS}
_DECODERS.update({
    "item/started": msgspec.json.Decoder(w.ItemNotification),
    "item/completed": msgspec.json.Decoder(w.ItemNotification),
    "turn/started": msgspec.json.Decoder(w.TurnNotification),
    "turn/completed": msgspec.json.Decoder(w.TurnNotification),
    "turn/diff/updated": msgspec.json.Decoder(w.TurnDiffUpdated),
    "turn/plan/updated": msgspec.json.Decoder(w.PlanUpdated),
    "thread/tokenUsage/updated": msgspec.json.Decoder(w.TokenUsageNotification),
    "error": msgspec.json.Decoder(w.ErrorNotification),
    "warning": msgspec.json.Decoder(w.WarningNotification),
    "model/rerouted": msgspec.json.Decoder(w.ModelReroutedNotification),
    "thread/status/changed": msgspec.json.Decoder(w.ThreadStatusChanged),
    "serverRequest/resolved": msgspec.json.Decoder(w.ResolvedNotification),
    "mcpServer/startupStatus/updated": msgspec.json.Decoder(w.McpStartupStatus),
    "account/rateLimits/updated": msgspec.json.Decoder(w.RateLimitsNotification),
})
_RATE_LIMITS = "account/rateLimits/updated"
_TOKEN_USAGE = "thread/tokenUsage/updated"
_thread_of = msgspec.json.Decoder(w.ThreadIdOnly)


class Router(SharedRouter[Note | Req]):
    """Routes one app-server's inbound traffic to session actors by native thread id.

    Notifications without a thread (``configWarning``, ``deprecationNotice``) are kept in
    :attr:`instance_notes` for the sessions to report; requests without a thread are rejected.
    ``account/rateLimits/updated`` names no thread either: Codex sends it right after the
    ``thread/tokenUsage/updated`` of the model response whose headers it read, so it goes to the
    thread of the last token usage (nowhere before the first).
    """

    max_held_items: ClassVar[int] = 1024

    def __init__(self, reject: Callable[[JsonRpcRequest], None]) -> None:
        super().__init__(reject)
        self.instance_notes: list[tuple[str, str]] = []
        self._usage_thread: str | None = None

    def route(self, msg: JsonRpcRequest | JsonRpcNotification) -> tuple[str, Note | Req] | None:
        method = msg.method
        if type(msg) is JsonRpcRequest:
            try:
                ids = _thread_of.decode(msg.params)
            except msgspec.DecodeError:
                ids = w.ThreadIdOnly()
            tid = ids.threadId or ids.conversationId
            if tid is None:
                log.debug("app-server request %r without a thread answered -32601", method)
                return None
            return tid, Req(msg.id, method, msg.params)
        decoder = _DECODERS.get(method)
        if decoder is None:
            self._instance_note(method, msg.params)
            return None
        try:
            params = decoder.decode(msg.params)
        except msgspec.DecodeError as exc:
            log.debug("app-server notification %r not understood: %s", method, exc)
            return None
        tid = params.threadId
        if tid is None:
            if method == _RATE_LIMITS and self._usage_thread is not None:
                return self._usage_thread, (method, params)
            return None  # an MCP server of no thread (the instance's own config.toml)
        if method == _TOKEN_USAGE:
            self._usage_thread = tid
        return tid, (method, params)

    def _instance_note(self, method: str, raw: msgspec.Raw) -> None:
        if method not in ("configWarning", "deprecationNotice"):
            log.debug("app-server notification %r ignored", method)
            return
        try:
            note = msgspec.json.decode(raw)
            text = (note.get("summary") or "") if isinstance(note, dict) else ""
        except msgspec.DecodeError:
            text = ""
        if len(self.instance_notes) < 32:
            self.instance_notes.append((method, text))


ServerLink = SharedLink[w.InitializeResult, Note | Req]
"""One running incarnation of the app-server (its ``initialize`` answer as ``init``)."""
