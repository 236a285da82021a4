"""The versioned resume cursor envelope."""

from __future__ import annotations

import msgspec

from ._errors import ValidationError

__all__ = ["ResumeCursor"]


class ResumeCursor(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """What a driver needs to resume a thread in a fresh process.

    ``payload`` is opaque JSON text that only the owning ``driver`` decodes, at a ``version`` that
    driver understands; everyone else stores and passes it on unchanged.
    """

    driver: str
    version: int
    payload: str

    def encode(self) -> bytes:
        """Return the cursor as JSON bytes, for storage."""
        return msgspec.json.encode(self)

    @classmethod
    def decode(cls, data: bytes | str) -> ResumeCursor:
        """Decode a stored cursor; raises :class:`ValidationError` when it is malformed."""
        try:
            return msgspec.json.decode(data, type=cls)
        except msgspec.DecodeError as exc:
            raise ValidationError("ResumeCursor.decode", str(exc)) from None
