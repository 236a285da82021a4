"""Secret masking for the EventHub: no secret reaches the log or a subscriber.

The hub runs a :class:`Redactor` on every emitted batch before anything else sees it (grammar
guard, sequencing, the log, subscribers). It masks, in every string of every event (``raw``
payloads, ``stderr_tail``, ``session.exited.reason``, tool output, text deltas):

- each secret value registered for the emitting instance (the runtime registers the instance's
  credential variables, its configured ``env`` and ``pass_env`` values and key-like ``args``);
- common credential shapes: ``sk-…`` (OpenAI, Anthropic), ``Bearer …``, GitHub tokens
  (``ghp_`` ``gho_`` ``ghu_`` ``ghs_`` ``ghr_`` ``github_pat_``) and Google API keys
  (``AIza…``).

Each match becomes ``[redacted]`` (``Bearer [redacted]`` for a bearer token).

Cost: ``content.delta`` events are the hot path. Their texts of one emitter batch are joined
once and searched with one compiled pattern; only a batch with a match pays for rewriting.
A secret split over deltas of one batch is masked across them (the first piece carries
``[redacted]``, the others lose the covered characters); one split over two batches is not seen
whole, and deltas never match a secret shorter than :data:`MIN_SECRET_CHARS`. Other events are
encoded to JSON and searched (they are a few per item); a match rewrites their strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from paddock.contract import ContentDelta, EventBase

__all__ = ["MIN_SECRET_CHARS", "REDACTED", "Redactor"]

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6
"""Shorter values are not treated as secrets: masking them would mask ordinary text."""

_SHAPES = (
    r"(?P<bearer>Bearer)\s+[A-Za-z0-9._~+/=\-]{8,}",
    r"\bsk-[A-Za-z0-9_\-]{8,}",
    r"\bgh[pousr]_[A-Za-z0-9]{16,}",
    r"\bgithub_pat_[A-Za-z0-9_]{16,}",
    r"\bAIza[0-9A-Za-z_\-]{20,}",
)
_encode = msgspec.json.Encoder().encode


_PREFIXES = (r"Bearer", r"sk-", r"gh[pousr]_", r"github_pat_", r"AIza")


class Redactor:
    """Masks one instance's secrets and the common shapes. Immutable once built; the hub's
    thread calls :meth:`redact`.

    Two patterns: ``_pre`` holds only the literal starts (the secrets themselves and the shapes'
    prefixes), which ``re`` scans for quickly; the full ``_pattern`` (with its word boundaries,
    which would defeat that scan) runs only where ``_pre`` found something.
    """

    __slots__ = ("_pattern", "_pre", "_pre_json", "secrets")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept = sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self.secrets = tuple(kept)
        literals = [re.escape(s) for s in kept]
        self._pattern = re.compile("|".join([*literals, *_SHAPES]))
        self._pre = re.compile("|".join([*literals, *_PREFIXES]))
        # Events other than deltas are searched as JSON: a secret with a quote, backslash or
        # control character appears there escaped.
        escaped = [re.escape(json.dumps(s)[1:-1]) for s in kept if json.dumps(s)[1:-1] != s]
        self._pre_json = re.compile("|".join([*escaped, *literals, *_PREFIXES]))

    def _sub(self, match: re.Match[str]) -> str:
        return "Bearer " + REDACTED if match.group("bearer") else REDACTED

    def mask(self, text: str) -> str:
        """``text`` with every secret and shape masked."""
        return self._pattern.sub(self._sub, text) if self._pre.search(text) else text

    def redact(self, events: Sequence[EventBase]) -> Sequence[EventBase]:
        """``events`` with secrets masked; the same sequence object when nothing matched.

        ``raw`` payloads are never attached to deltas (``raw_events`` was removed), so of a
        delta only its text is searched.
        """
        delta = ContentDelta
        texts = [ev.delta for ev in events if ev.__class__ is delta]  # type: ignore[attr-defined]
        out: list[EventBase] | None = None
        if len(texts) != len(events):
            pre = self._pre_json.search
            for i, ev in enumerate(events):
                if ev.__class__ is not delta and pre(_encode(ev).decode()):
                    fixed = self._rewrite(ev)
                    if fixed is not ev:
                        if out is None:
                            out = list(events)
                        out[i] = fixed
        if texts:
            joined = "".join(texts)
            if self._pre.search(joined) and self._pattern.search(joined):
                if out is None:
                    out = list(events)
                where = [i for i, ev in enumerate(events) if ev.__class__ is delta]
                for i, before, text in zip(where, texts, self._mask_pieces(joined, texts)):
                    if text != before:
                        out[i] = msgspec.structs.replace(events[i], delta=text)  # type: ignore[arg-type]
        return events if out is None else out

    def _mask_pieces(self, joined: str, texts: list[str]) -> list[str]:
        """Mask ``joined`` and cut the result back into pieces aligned with ``texts``: a match
        that spans pieces is replaced in the first and removed from the others."""
        spans = [(m.start(), m.end(), self._sub(m)) for m in self._pattern.finditer(joined)]
        pieces = []
        start = 0
        k = 0
        for text in texts:
            end = start + len(text)
            parts = []
            pos = start
            while k < len(spans) and spans[k][0] < end:
                s, e, repl = spans[k]
                if s >= start:
                    parts.append(joined[pos:s])
                    parts.append(repl)
                # else: it began in an earlier piece, which carries the replacement
                pos = min(e, end)
                if e > end:
                    break  # continues into the next piece
                k += 1
            parts.append(joined[pos:end])
            pieces.append("".join(parts))
            start = end
        return pieces

    def _rewrite(self, ev: EventBase) -> EventBase:
        data = msgspec.to_builtins(ev)
        masked = _walk(data, self.mask)
        return ev if masked == data else msgspec.convert(masked, type(ev))


def _walk(value: Any, mask) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {k: _walk(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, mask) for v in value]
    return value
