"""``NoPublicConstructor``: for handles that only a factory may build (trio's idea).

``Handle(...)`` raises :class:`TypeError` naming the factory to use (the class's
``_public_factory``); the factory builds it with ``Handle._create(...)``. Private to Paddock:
every layer may use it, hosts never need it.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["NoPublicConstructor"]

T = TypeVar("T")


class NoPublicConstructor(type):
    """Metaclass: calling the class raises ``TypeError``; ``cls._create(...)`` constructs."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        factory = getattr(cls, "_public_factory", None)
        hint = f"; use {factory}" if factory else ""
        raise TypeError(f"{cls.__qualname__} cannot be constructed directly{hint}")

    def _create(cls: type[T], *args: Any, **kwargs: Any) -> T:
        return super().__call__(*args, **kwargs)  # type: ignore[misc]
