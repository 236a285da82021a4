"""OpenCode's model catalog (``GET /config/providers``: every enabled provider with its models,
and ``default``: provider -> model) and a prompt's attachment parts (``file`` parts with a
``data:`` URL; OpenCode hands an image to the model as an image part and inlines a text file)."""

from __future__ import annotations

import base64
from typing import Any

from paddock.contract import Attachment, ImageAttachment, JsonObject, ModelInfo

__all__ = ["catalog_of", "file_parts"]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def catalog_of(answer: Any) -> tuple[ModelInfo, ...]:
    """Each provider's models as ``provider/model`` (how a prompt names one), the providers'
    defaults marked; ``capabilities.input.image`` (or ``attachment``) adds the image input kind."""
    answer = _dict(answer)
    defaults = _dict(answer.get("default"))
    out: list[ModelInfo] = []
    for provider in answer.get("providers") or ():
        if not isinstance(provider, dict) or not isinstance(provider.get("id"), str):
            continue
        pid = provider["id"]
        for mid, value in _dict(provider.get("models")).items():
            model = _dict(value)
            caps = _dict(model.get("capabilities"))
            image = _dict(caps.get("input")).get("image") is True or caps.get("attachment") is True
            name = model.get("name")
            out.append(ModelInfo(id=f"{pid}/{mid}", display_name=name if isinstance(name, str) else None,
                                 is_default=defaults.get(pid) == mid, reasoning_efforts=tuple(_dict(model.get("variants"))),
                                 input_kinds=("text", "image") if image else ("text",)))
    return tuple(out)


def file_parts(attachments: tuple[Attachment, ...]) -> list[JsonObject]:
    """One ``file`` part (``mime``, ``url`` as a ``data:`` URL, ``filename``) per attachment."""
    parts: list[JsonObject] = []
    for a in attachments:
        mime: str = a.mime_type
        if isinstance(a, ImageAttachment):
            assert a.data is not None  # resolved by the runtime
            data, name = a.data, (a.path.rsplit("/", 1)[-1] if a.path else "image")
        else:
            assert a.text is not None
            data, name = a.text.encode("utf-8"), a.name or "untitled"
        parts.append({"type": "file", "mime": mime, "filename": name,
                      "url": f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"})
    return parts
