"""The conformance scenario ``19-usage-limit``: the model answers a usage limit that resets 3 s
after its first call, and the case says how the driver handles it: ``runtime.error`` of class
``usage_limit`` (with or without ``resets_at``), or the agent retried by itself and the turn
completed after the reset. A turn that fails without the class fails the case.

Self-contained: :mod:`paddock.testing._conformance` imports it once, where it registers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from paddock.contract import USAGE_LIMIT

from ._conformance import scenario

if TYPE_CHECKING:
    from ._conformance import Probe


@scenario("19-usage-limit", "the model answers a usage limit (3 s)", dialect="usage_limit")
def _usage_limit(p: Probe) -> str:
    prompt = p.dialect.usage_limit()
    assert prompt is not None
    events: list[Any] = p.turn(p.thread(), prompt)
    end = events[-1]
    limits = [e for e in events if e.type == "runtime.error" and getattr(e, "error_class", None) == USAGE_LIMIT]
    if limits:
        assert end.state == "failed", end
        return f"{USAGE_LIMIT} " + ("with resets_at" if limits[0].resets_at is not None else "without resets_at")
    assert end.state == "completed", f"the turn ended {end.state} with no {USAGE_LIMIT} class: {end.error}"
    text = "".join(e.delta for e in events if e.type == "content.delta" and e.stream == "assistant_text")
    assert "Back after the reset" in text, text[-200:]
    return "the agent retried by itself and completed after the reset"
