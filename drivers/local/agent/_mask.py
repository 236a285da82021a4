"""What the agent never writes to its own files in clear.

A stand-in for a real CLI, the agent keeps its session files the way a careful one would: the
values of its own credential variables (names ending in ``KEY``, ``TOKEN``, ``SECRET``,
``PASSWORD``, ``CREDENTIALS`` or ``AUTH``, such as ``PADDOCK_MODEL_API_KEY``) and the common
credential shapes the runtime's event hub masks (``paddock.actors.events.Redactor``) become
``[redacted]``. The agent imports nothing of the runtime (it starts in a bare interpreter), so
the shapes are spelled here too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

__all__ = ["REDACTED", "secret_mask"]

REDACTED = "[redacted]"
_MIN_SECRET_CHARS = 6
_CREDENTIAL_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)$", re.IGNORECASE)
_SHAPES = (
    r"(?P<bearer>Bearer)\s+[A-Za-z0-9._~+/=\-]{8,}",
    r"\bsk-[A-Za-z0-9_\-]{8,}",
    r"\bgh[pousr]_[A-Za-z0-9]{16,}",
    r"\bgithub_pat_[A-Za-z0-9_]{16,}",
    r"\bAIza[0-9A-Za-z_\-]{20,}",
)
_STARTS = ("Bearer", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AIza")


def secret_mask(environ: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """A function masking the credential values of ``environ`` (default: this process's) and
    the common shapes in a text. Safe from any thread."""
    environ = os.environ if environ is None else environ
    values = sorted({v for k, v in environ.items() if _CREDENTIAL_NAME.search(k) and len(v) >= _MIN_SECRET_CHARS},
                    key=len, reverse=True)
    pattern = re.compile("|".join([*map(re.escape, values), *_SHAPES]))
    starts = (*values, *_STARTS)

    def sub(match: re.Match[str]) -> str:
        return "Bearer " + REDACTED if match.group("bearer") else REDACTED

    def mask(text: str) -> str:
        # Substring scans first: the full pattern is an order of magnitude slower on long texts.
        return pattern.sub(sub, text) if any(start in text for start in starts) else text

    return mask
