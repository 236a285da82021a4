"""An ACP session's model catalog: the ``model_config`` config option (``configOptions`` entry of
category ``model``; its options flat or in groups) where the agent has one, else the unstable
``models`` block (``availableModels`` / ``currentModelId``) of ``session/new``. ``session/set_model``
was removed from the spec in June 2026; the config option is how a model is chosen now."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from paddock.contract import JsonValue, ModelInfo

__all__ = ["catalog_of"]


def _options(options: JsonValue) -> Iterator[dict]:
    for o in options if isinstance(options, list) else ():
        if not isinstance(o, dict):
            continue
        if isinstance(o.get("options"), list):  # a group of options
            yield from _options(o["options"])
        elif isinstance(o.get("value"), str):
            yield o


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


def catalog_of(config_options: Sequence[JsonValue] | None, models: dict[str, JsonValue] | None) -> tuple[ModelInfo, ...] | None:
    """The models a session offers, the current one marked default; ``None`` when it offers none."""
    option = next((o for o in config_options or () if isinstance(o, dict) and o.get("category") == "model"), None)
    if option is not None:
        current = option.get("currentValue")
        found = tuple(ModelInfo(id=o["value"], display_name=_text(o.get("name")), description=_text(o.get("description")),
                                is_default=o["value"] == current) for o in _options(option.get("options")))
        if found:
            return found
    available = models.get("availableModels") if models is not None else None
    if models is not None and isinstance(available, list):
        current = models.get("currentModelId")
        found = tuple(ModelInfo(id=str(m["modelId"]), display_name=_text(m.get("name")),
                                description=_text(m.get("description")), is_default=m["modelId"] == current)
                      for m in available if isinstance(m, dict) and isinstance(m.get("modelId"), str))
        return found or None
    return None
