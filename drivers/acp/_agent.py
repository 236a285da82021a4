"""The agent side of an instance: how the shared router (``paddock.actors.Router``) finds the
session of each agent message (``sessionId``), decoding ``session/update`` once, and the link
type of one agent process incarnation (:data:`AgentLink`).

Thread: :meth:`Router.route` runs on the connection's stdout reader thread.
"""

from __future__ import annotations

import logging

import msgspec

from paddock.actors import JsonRpcNotification, JsonRpcRequest, Req, SharedLink
from paddock.actors import Router as SharedRouter

from . import _wire as w

__all__ = ["AgentLink", "Item", "Router"]

log = logging.getLogger(__name__)

_SESSION_REQUESTS = frozenset({
    "session/request_permission",
    "fs/read_text_file",
    "fs/write_text_file",
    "terminal/create",
    "terminal/output",
    "terminal/wait_for_exit",
    "terminal/kill",
    "terminal/release",
})
_sid_decoder = msgspec.json.Decoder(w.SessionIdOnly)
_note_decoder = msgspec.json.Decoder(w.SessionNotification)


Item = w.SessionUpdate | str | Req
"""What the router hands a session: a decoded update (a ``str`` for an update kind this
version does not model), or an agent request."""


class Router(SharedRouter[Item]):
    """Routes inbound traffic of one agent process to session actors by ``sessionId``; requests
    outside the session methods are rejected, other notifications ignored."""

    def route(self, msg: JsonRpcRequest | JsonRpcNotification) -> tuple[str, Item] | None:
        update: Item
        if type(msg) is JsonRpcRequest:
            if msg.method not in _SESSION_REQUESTS:
                log.debug("agent request %r answered -32601", msg.method)
                return None
            try:
                sid = _sid_decoder.decode(msg.params).sessionId
            except msgspec.DecodeError:
                sid = ""
            return sid, Req(msg.id, msg.method, msg.params)
        if msg.method != "session/update":
            log.debug("agent notification %r ignored", msg.method)
            return None
        try:
            note = _note_decoder.decode(msg.params)
            sid, update = note.sessionId, note.update
        except msgspec.DecodeError:
            try:
                sid, update = w.decode_update_params(msg.params)
            except msgspec.DecodeError as exc:
                log.debug("malformed session/update skipped: %s", exc)
                return None
        return sid, update


AgentLink = SharedLink[w.InitializeResult, Item]
"""One running incarnation of the agent process (its ``initialize`` answer as ``init``)."""
