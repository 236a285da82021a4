"""What Claude Code is told and tells about models and prompts: the stream-json user message's
content (text, then each image as a base64 ``image`` block), and the model catalog of its
``initialize`` answer."""

from __future__ import annotations

import base64

from paddock.contract import Attachment, ImageAttachment, JsonValue, ModelInfo, json_str

from ._wire import InitAnswer, ModelEntry

__all__ = ["catalog_of", "resolved_models", "user_content"]


def user_content(text: str, attachments: tuple[Attachment, ...]) -> JsonValue:
    """A ``user`` message's ``content``: the text alone, or a text block followed by one image
    block per image (``source`` ``base64``, as the Messages API takes them). Only images reach
    here (``turns.attachments``)."""
    if not attachments:
        return text
    blocks: list[JsonValue] = [{"type": "text", "text": text}]
    for a in attachments:
        assert isinstance(a, ImageAttachment) and a.data is not None  # resolved and gated by the runtime
        blocks.append({"type": "image", "source": {"type": "base64", "media_type": a.mime_type,
                                                   "data": base64.b64encode(a.data).decode("ascii")}})
    return blocks


def _entries(answer: InitAnswer) -> list[ModelEntry]:
    return [m for m in answer.models or () if isinstance(m.value, str)]


def catalog_of(answer: InitAnswer) -> tuple[ModelInfo, ...]:
    """The ``initialize`` answer's ``models``: ``value`` is the id ``--model`` and ``set_model``
    take (``default`` is the default), with ``displayName``, ``description`` and
    ``supportedEffortLevels``. Every Claude model reads images."""
    return tuple(
        ModelInfo(id=str(m.value), display_name=json_str(m.displayName), description=json_str(m.description),
                  is_default=m.value == "default",
                  reasoning_efforts=tuple(e for e in m.supportedEffortLevels or () if isinstance(e, str)),
                  input_kinds=("text", "image"))
        for m in _entries(answer)
    )


def resolved_models(answer: InitAnswer) -> dict[str, str]:
    """Alias -> the model it resolves to (``resolvedModel`` without a ``[1m]`` context suffix)."""
    return {str(m.value): m.resolvedModel.split("[", 1)[0]
            for m in _entries(answer) if isinstance(m.resolvedModel, str)}
