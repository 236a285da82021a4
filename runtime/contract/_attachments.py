"""What a turn carries besides its text: images and files (docs/architecture.md, "Models and
attachments"), and the model-name check every surface shares.

A host names an attachment by ``path`` (confined by the runtime to the session's workspace roots)
or by value (``data`` for an image, ``text`` for a file). Before a driver sees one, the runtime
has read the path and filled the value in (:func:`resolve_attachments`), so a driver maps the
value natively and may also pass the path where its agent reads files itself.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from typing import Literal

import msgspec

from ._capabilities import TurnsCaps
from ._errors import CapabilityUnsupportedError, ValidationError

__all__ = [
    "ATTACHMENT_KINDS",
    "IMAGE_MIME_TYPES",
    "MAX_ATTACHMENTS",
    "MAX_ATTACHMENT_BYTES",
    "MAX_ATTACHMENTS_TOTAL_BYTES",
    "Attachment",
    "attachment_kinds",
    "AttachmentKind",
    "FileAttachment",
    "ImageAttachment",
    "ImageMimeType",
    "check_attachments_allowed",
    "model_advice",
    "resolve_attachments",
]

AttachmentKind = Literal["image", "file"]
ATTACHMENT_KINDS: tuple[AttachmentKind, ...] = ("image", "file")
ImageMimeType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
IMAGE_MIME_TYPES: tuple[ImageMimeType, ...] = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types every agent that takes images accepts (Anthropic's and OpenAI's common set)."""

MAX_ATTACHMENTS = 8
"""Attachments one turn may carry."""
MAX_ATTACHMENT_BYTES = 5 * 1024 * 1024
"""Bytes of one attachment (an image's bytes, a file's UTF-8 text): Anthropic's per-image limit."""
MAX_ATTACHMENTS_TOTAL_BYTES = 20 * 1024 * 1024
"""Bytes of every attachment of one turn together."""


class _Attachment(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="kind"):
    pass


class ImageAttachment(_Attachment, frozen=True, tag="image"):
    """An image: ``path`` (a file in the workspace) or ``data`` (its bytes; base64 in JSON), and
    its MIME type. Exactly one of ``path`` and ``data`` is given by the host."""

    mime_type: ImageMimeType
    path: str | None = None
    data: bytes | None = None

    def __post_init__(self) -> None:
        # Decoding checks the Literal; the constructor does not, so a host's own instance is checked here.
        if self.mime_type not in IMAGE_MIME_TYPES:
            raise ValidationError("ImageAttachment", f"mime_type {self.mime_type!r} is not one of "
                                                     f"{', '.join(IMAGE_MIME_TYPES)}")

    def __repr__(self) -> str:
        size = "?" if self.data is None else str(len(self.data))
        return f"ImageAttachment(mime_type={self.mime_type!r}, path={self.path!r}, data=<{size} bytes>)"


class FileAttachment(_Attachment, frozen=True, tag="file"):
    """A text file: ``path`` (a file in the workspace, read as UTF-8) or ``text`` embedded with a
    ``name`` (how the agent sees it: a URI or a file name). Exactly one of ``path`` and ``text`` is
    given by the host."""

    path: str | None = None
    text: str | None = None
    name: str | None = None
    mime_type: str = "text/plain"

    @property
    def uri(self) -> str:
        """``file://`` + the absolute path, else the name as given (``untitled`` without one)."""
        if self.path is not None:
            return "file://" + self.path
        return self.name or "untitled"


Attachment = ImageAttachment | FileAttachment


def _kind(a: Attachment) -> AttachmentKind:
    return "image" if isinstance(a, ImageAttachment) else "file"


def _confined(path: str, cwd: str, roots: Sequence[str], operation: str) -> str:
    full = os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))
    for root in roots:
        real_root = os.path.realpath(root)
        if full == real_root or full.startswith(real_root.rstrip(os.sep) + os.sep):
            return full
    raise ValidationError(operation, f"attachment {path!r} is outside the session's workspace roots")


def _read(path: str, operation: str) -> bytes:
    try:
        size = os.stat(path).st_size
        if size > MAX_ATTACHMENT_BYTES:
            raise ValidationError(operation, f"attachment {path!r} has {size} bytes; the limit is {MAX_ATTACHMENT_BYTES}")
        with open(path, "rb") as f:
            return f.read(MAX_ATTACHMENT_BYTES + 1)
    except OSError as exc:
        raise ValidationError(operation, f"attachment {path!r} cannot be read: {exc.strerror}") from None


def resolve_attachments(attachments: Sequence[Attachment], *, cwd: str, roots: Sequence[str],
                        operation: str = "send_turn") -> tuple[Attachment, ...]:
    """Check ``attachments`` and fill in each value from its path: every path (relative to
    ``cwd``) must resolve inside one of ``roots``; at most :data:`MAX_ATTACHMENTS`, each at most
    :data:`MAX_ATTACHMENT_BYTES` and together at most :data:`MAX_ATTACHMENTS_TOTAL_BYTES`; a file
    must be UTF-8 text. The results carry the value and the absolute path (when one was given).
    Raises :class:`ValidationError` naming the attachment. Thread: the caller's (reads files)."""
    if len(attachments) > MAX_ATTACHMENTS:
        raise ValidationError(operation, f"{len(attachments)} attachments; the limit is {MAX_ATTACHMENTS}")
    out: list[Attachment] = []
    total = 0
    for a in attachments:
        if isinstance(a, ImageAttachment):
            if (a.path is None) == (a.data is None):
                raise ValidationError(operation, "an image attachment needs exactly one of path and data")
            path = None if a.path is None else _confined(a.path, cwd, roots, operation)
            data = a.data if path is None else _read(path, operation)
            assert data is not None
            size = len(data)
            resolved: Attachment = ImageAttachment(mime_type=a.mime_type, path=path, data=data)
        else:
            if (a.path is None) == (a.text is None):
                raise ValidationError(operation, "a file attachment needs exactly one of path and text")
            path = None if a.path is None else _confined(a.path, cwd, roots, operation)
            if path is None:
                text = a.text or ""
            else:
                try:
                    text = _read(path, operation).decode("utf-8")
                except UnicodeDecodeError:
                    raise ValidationError(operation, f"attachment {a.path!r} is not UTF-8 text") from None
            size = len(text.encode("utf-8", "surrogatepass"))
            resolved = FileAttachment(path=path, text=text, name=a.name or (os.path.basename(path) if path else None),
                                      mime_type=a.mime_type)
        if size > MAX_ATTACHMENT_BYTES:
            raise ValidationError(operation, f"an attachment has {size} bytes; the limit is {MAX_ATTACHMENT_BYTES}")
        total += size
        if total > MAX_ATTACHMENTS_TOTAL_BYTES:
            raise ValidationError(operation, f"the attachments exceed {MAX_ATTACHMENTS_TOTAL_BYTES} bytes together")
        out.append(resolved)
    return tuple(out)


def attachment_kinds(attachments: Sequence[Attachment]) -> tuple[AttachmentKind, ...]:
    """The distinct kinds of ``attachments``, in :data:`ATTACHMENT_KINDS` order."""
    kinds = {_kind(a) for a in attachments}
    return tuple(k for k in ATTACHMENT_KINDS if k in kinds)


def check_attachments_allowed(turns: TurnsCaps, attachments: Sequence[Attachment], *, steering: bool, driver: str,
                              **where: str | None) -> None:
    """Refuse attachments of a kind ``turns.attachments`` lacks, and any attachment on an input
    steered into a running turn without ``turns.steer_attachments``
    (:class:`CapabilityUnsupportedError`). Runs before anything reaches a process."""
    if not attachments:
        return
    for kind in attachment_kinds(attachments):
        if kind not in turns.attachments:
            raise CapabilityUnsupportedError(
                "turns.attachments",
                f"the {driver} driver takes no {kind} attachments (it takes: {', '.join(turns.attachments) or 'none'})",
                **where)
    if steering and not turns.steer_attachments:
        raise CapabilityUnsupportedError(
            "turns.steer_attachments", f"the {driver} driver takes no attachments on input steered into a running turn",
            **where)


def model_advice(model: str | None, ids: Sequence[str]) -> str | None:
    """Advice on a ``model`` that a known catalog (``ids``, non-empty) does not list: a sentence
    naming up to three close matches (``difflib``), else ``None``. Advice only: the catalog is
    what the agent reported, and a model gateway may serve names it never lists, so the name is
    still passed to the agent, which alone may refuse it."""
    if model is None or not ids or model in ids or any(i.endswith("/" + model) for i in ids):
        return None  # a bare name matches a provider's ``provider/model`` (OpenCode)
    close = difflib.get_close_matches(model, list(ids), n=3, cutoff=0.4)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else f"; known: {', '.join(sorted(ids)[:10])}"
    return f"model {model!r} is not in the instance's catalog{hint} (passed to the agent as asked)"
