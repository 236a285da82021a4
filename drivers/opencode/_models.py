"""OpenCode's model catalog (``GET /config/providers``: every enabled provider with its models,
and ``default``: provider -> model) and a prompt's attachment parts (``file`` parts with a
``data:`` URL; OpenCode hands an image to the model as an image part and inlines a text file)."""

from __future__ import annotations

import base64
from typing import Any

from paddock.contract import Attachment, ImageAttachment, JsonObject, ModelInfo

__all__ = ["catalog_of", "file_parts"]


def catalog_of(answer: Any) -> tuple[ModelInfo, ...]:
    """Each provider's models as ``provider/model`` (how a prompt names one), the providers'
    defaults marked; ``capabilities.input.image`` (or ``attachment``) adds the image input kind."""
    if not isinstance(answer, dict):
        return ()
    defaults = answer.get("default") if isinstance(answer.get("default"), dict) else {}
    out: list[ModelInfo] = []
    for provider in answer.get("providers") or ():
        if not isinstance(provider, dict) or not isinstance(provider.get("id"), str):
            continue
        pid = provider["id"]
        models = provider.get("models") if isinstance(provider.get("models"), dict) else {}
        for mid, model in models.items():
            model = model if isinstance(model, dict) else {}
            caps = model.get("capabilities") if isinstance(model.get("capabilities"), dict) else {}
            inputs = caps.get("input") if isinstance(caps.get("input"), dict) else {}
            image = inputs.get("image") is True or caps.get("attachment") is True
            variants = model.get("variants") if isinstance(model.get("variants"), dict) else {}
            out.append(ModelInfo(id=f"{pid}/{mid}", display_name=model.get("name") if isinstance(model.get("name"), str) else None,
                                 is_default=defaults.get(pid) == mid, reasoning_efforts=tuple(variants),
                                 input_kinds=("text", "image") if image else ("text",)))
    return tuple(out)


def file_parts(attachments: tuple[Attachment, ...]) -> list[JsonObject]:
    """One ``file`` part (``mime``, ``url`` as a ``data:`` URL, ``filename``) per attachment."""
    parts: list[JsonObject] = []
    for a in attachments:
        if isinstance(a, ImageAttachment):
            assert a.data is not None  # resolved by the runtime
            data, mime, name = a.data, a.mime_type, (a.path.rsplit("/", 1)[-1] if a.path else "image")
        else:
            assert a.text is not None
            data, mime, name = a.text.encode("utf-8"), a.mime_type, a.name or "untitled"
        parts.append({"type": "file", "mime": mime, "filename": name,
                      "url": f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"})
    return parts
