"""Attachments and model catalogs on the command line: ``paddock run --attach FILE``, and the
chat's ``/attach FILE`` and ``/models`` (``paddock models`` prints the same lines)."""

from __future__ import annotations

import argparse
import mimetypes
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paddock.contract import Attachment, ModelInfo

__all__ = ["add_attach_option", "attachment_of", "attachments_of", "model_lines"]


def add_attach_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--attach", action="append", default=[], metavar="FILE",
                        help="attach FILE to the prompt (repeatable): a PNG, JPEG, GIF or WebP image, else a text file; "
                             "it must be inside the workspace (--cwd)")


def attachment_of(path: str) -> Attachment:
    """An image attachment for a file whose name says PNG, JPEG, GIF or WebP, else a text file
    attachment; the path made absolute (the runtime confines it to the workspace and reads it)."""
    from paddock.contract import IMAGE_MIME_TYPES, FileAttachment, ImageAttachment

    full = os.path.abspath(os.path.expanduser(path))
    mime, _ = mimetypes.guess_type(full)
    if mime in IMAGE_MIME_TYPES:
        return ImageAttachment(path=full, mime_type=mime)  # type: ignore[arg-type]
    return FileAttachment(path=full, mime_type=mime if mime and mime.startswith("text/") else "text/plain")


def attachments_of(args: argparse.Namespace) -> tuple[Attachment, ...]:
    return tuple(attachment_of(p) for p in args.attach)


def model_lines(models: Sequence[ModelInfo]) -> list[str]:
    """One line per model: id, ``(default)``, display name, what it reads, reasoning efforts."""
    if not models:
        return ["the agent lists no models"]
    lines = []
    for m in models:
        parts = [m.id + (" (default)" if m.is_default else "")]
        if m.display_name and m.display_name != m.id:
            parts.append(m.display_name)
        parts.append("reads " + "+".join(m.input_kinds))
        if m.reasoning_efforts:
            parts.append("effort " + "|".join(m.reasoning_efforts))
        lines.append("  ".join(parts))
    return lines
