"""What Claude Code is told and tells about models and prompts: the stream-json user message's
content (text, then each image as a base64 ``image`` block), and the model catalog of its
``initialize`` answer."""

from __future__ import annotations

import base64
from typing import Any

from paddock.contract import Attachment, ImageAttachment, ModelInfo

__all__ = ["catalog_of", "resolved_models", "user_content"]


def user_content(text: str, attachments: tuple[Attachment, ...]) -> str | list[dict[str, Any]]:
    """A ``user`` message's ``content``: the text alone, or a text block followed by one image
    block per image (``source`` ``base64``, as the Messages API takes them). Only images reach
    here (``turns.attachments``)."""
    if not attachments:
        return text
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for a in attachments:
        assert isinstance(a, ImageAttachment) and a.data is not None  # resolved and gated by the runtime
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": a.mime_type,
                                                   "data": base64.b64encode(a.data).decode("ascii")}})
    return blocks


def _entries(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in answer.get("models") or () if isinstance(m, dict) and isinstance(m.get("value"), str)]


def catalog_of(answer: dict[str, Any]) -> tuple[ModelInfo, ...]:
    """The ``initialize`` answer's ``models``: ``value`` is the id ``--model`` and ``set_model``
    take (``default`` is the default), with ``displayName``, ``description`` and
    ``supportedEffortLevels``. Every Claude model reads images."""
    return tuple(
        ModelInfo(id=m["value"], display_name=m.get("displayName") if isinstance(m.get("displayName"), str) else None,
                  description=m.get("description") if isinstance(m.get("description"), str) else None,
                  is_default=m["value"] == "default",
                  reasoning_efforts=tuple(e for e in m.get("supportedEffortLevels") or () if isinstance(e, str)),
                  input_kinds=("text", "image"))
        for m in _entries(answer)
    )


def resolved_models(answer: dict[str, Any]) -> dict[str, str]:
    """Alias -> the model it resolves to (``resolvedModel`` without a ``[1m]`` context suffix)."""
    return {m["value"]: str(m["resolvedModel"]).split("[", 1)[0]
            for m in _entries(answer) if isinstance(m.get("resolvedModel"), str)}
