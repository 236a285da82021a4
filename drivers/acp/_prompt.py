"""The content blocks of a ``session/prompt``: the text, then each attachment as ACP maps it (an
``image`` block with base64 ``data``; a file as a ``resource`` block embedding its text)."""

from __future__ import annotations

import base64

from paddock.contract import Attachment, FileAttachment, ImageAttachment, JsonObject

__all__ = ["prompt_blocks"]


def _block(a: Attachment) -> JsonObject:
    if isinstance(a, ImageAttachment):
        assert a.data is not None  # resolved by the runtime
        block: JsonObject = {"type": "image", "mimeType": a.mime_type, "data": base64.b64encode(a.data).decode("ascii")}
        if a.path is not None:
            block["uri"] = "file://" + a.path
        return block
    assert isinstance(a, FileAttachment) and a.text is not None
    return {"type": "resource", "resource": {"uri": a.uri, "mimeType": a.mime_type, "text": a.text}}


def prompt_blocks(text: str, attachments: tuple[Attachment, ...]) -> list[JsonObject]:
    """``session/prompt``'s ``prompt``: a text block, then one block per attachment (the kinds the
    agent's ``promptCapabilities`` allow; the runtime refused the rest)."""
    return [{"type": "text", "text": text}, *(_block(a) for a in attachments)]
