"""Usage limits: a model's rate or usage limit, told apart from other failures by what the agent
reports (an HTTP 429, a quota or rate-limit error, an agent's own "usage limit reached" text), with
the time it resets when the report says.

Pure: the standard library only."""

from __future__ import annotations

import re
import time
from datetime import datetime

__all__ = ["USAGE_LIMIT", "usage_limit_of"]

USAGE_LIMIT = "usage_limit"
"""The ``error_class`` of a ``runtime.error`` for a model's rate or usage limit."""

_LIMIT = re.compile(
    r"usage[ _-]?limit|rate[ _-]?limit|quota|too many requests|\b429\b|resource[ _]exhausted|"
    r"usageLimitExceeded|limit reached|out of (?:credits|usage)", re.IGNORECASE)
_ISO = re.compile(r"resets?\s+(?:at\s+|on\s+)?(\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)",
                  re.IGNORECASE)
_EPOCH = re.compile(r"resets?(?:_at)?[\"']?\s*(?:at\s+|[:=]\s*)?(\d{10}(?:\.\d+)?)\b", re.IGNORECASE)
_AFTER = re.compile(r"(?:try again|retry|resets?)\s+(?:in|after)\s+(\d+(?:\.\d+)?)\s*"
                    r"(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)?\b", re.IGNORECASE)
_RETRY_AFTER = re.compile(r"retry[-_ ]after[\"']?\s*[:=]?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
_UNIT = {"ms": 0.001, "m": 60.0, "h": 3600.0}


def usage_limit_of(text: str | None, *, now: float | None = None) -> tuple[bool, float | None]:
    """Whether ``text`` (an error's message) reports a usage or rate limit, and when it resets
    (Unix time) where it says: an ISO time or a Unix time after "resets", or "try again in N
    seconds/minutes/hours", or a ``retry-after`` of N seconds."""
    if not text or not _LIMIT.search(text):
        return False, None
    now = time.time() if now is None else now
    if (m := _ISO.search(text)) is not None:
        try:
            stamp = datetime.fromisoformat(m.group(1).replace("Z", "+00:00").replace(" ", "T"))
            if stamp.tzinfo is not None:
                return True, stamp.timestamp()
        except ValueError:
            pass
    if (m := _EPOCH.search(text)) is not None:
        return True, float(m.group(1))
    if (m := _AFTER.search(text)) is not None:
        unit = (m.group(2) or "s").lower()
        scale = _UNIT.get("ms" if unit.startswith("ms") or unit.startswith("milli") else unit[0], 1.0)
        return True, now + float(m.group(1)) * scale
    if (m := _RETRY_AFTER.search(text)) is not None:
        return True, now + float(m.group(1))
    return True, None
