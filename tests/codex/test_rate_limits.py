"""Unit: Codex's ``account/rateLimits/updated`` (no ``threadId``; sent after each model response)
goes to the thread of the last ``thread/tokenUsage/updated`` and becomes
``account.rate-limits.updated`` when it knows a window; the all-null update of the shared
recording (an API-key account, no rate-limit headers) gives no event. The live counterpart, with
the scripted model server's ``rate_limits`` headers, is ``tests/live/test_rate_limits_live.py``."""

from __future__ import annotations

import json

import msgspec

from paddock.actors import JsonRpcNotification
from paddock.contract import AccountRateLimitsUpdated, EventIdentity
from paddock.drivers.codex._server import Router
from paddock.drivers.codex._translate import TRANSLATED, Translator

from .test_translate import _Ref, _inbound

ID = EventIdentity(driver="codex", instance_id="i", thread_id="t1")
METHOD = "account/rateLimits/updated"
# The shape the pinned 0.171.0 sent against the model server's rate_limits scenario.
WINDOW = {"rateLimits": {"limitId": "codex", "limitName": None, "normalModelSlug": None,
                         "primary": {"usedPercent": 42, "windowDurationMins": 300, "resetsAt": 1796681572},
                         "secondary": None, "credits": None, "individualLimit": None, "spendControlReached": None,
                         "planType": None, "rateLimitReachedType": None}}
USAGE = {"threadId": "th", "turnId": "n1", "tokenUsage": {
    "total": {"totalTokens": 3, "inputTokens": 2, "cachedInputTokens": 0, "outputTokens": 1, "reasoningOutputTokens": 0},
    "last": {"totalTokens": 3, "inputTokens": 2, "cachedInputTokens": 0, "outputTokens": 1, "reasoningOutputTokens": 0},
    "modelContextWindow": None}}


def _note(method: str, params: dict) -> JsonRpcNotification:
    return JsonRpcNotification(method, msgspec.Raw(json.dumps(params).encode()))


def _events(items: list) -> list:
    tr = Translator(ID)
    out: list = []
    for method, params in items:
        if method == METHOD:
            TRANSLATED[method](tr, params, out)
    return out


def test_a_window_goes_to_the_thread_of_the_last_usage_and_becomes_the_event():
    router = Router(reject=lambda _: None)
    ref = _Ref()
    router.register("th", ref)
    router.on_batch([_note(METHOD, WINDOW)])  # before any usage: no thread to give it to
    assert ref.told == []
    router.on_batch([_note("thread/tokenUsage/updated", USAGE), _note(METHOD, WINDOW)])
    items = [i for batch in ref.told for i in batch.items]
    assert [m for m, _ in items] == ["thread/tokenUsage/updated", METHOD]
    [event] = _events(items)
    assert isinstance(event, AccountRateLimitsUpdated) and event.turn_id is None
    assert event.limits == {"windows": [{"name": "primary", "used_percent": 42.0, "resets_at": 1796681572,
                                         "window_minutes": 300}], "status": "allowed", "limit_id": "codex"}


def test_a_reached_limit_says_rejected_and_the_recorded_all_null_update_says_nothing():
    reached = {"rateLimits": {**WINDOW["rateLimits"], "rateLimitReachedType": "rate_limit_reached",
                              "credits": {"hasCredits": False, "unlimited": False, "balance": None}}}
    router = Router(reject=lambda _: None)
    ref = _Ref()
    router.register("th", ref)
    recorded = [m for m in _inbound("codex-transcript.jsonl") if m.method in (METHOD, "thread/tokenUsage/updated")]
    assert any(m.method == METHOD for m in recorded)
    tid = json.loads(bytes(recorded[0].params))["threadId"]
    router.register(tid, ref)
    router.on_batch(recorded)
    assert _events([i for batch in ref.told for i in batch.items]) == []
    ref.told.clear()
    router.on_batch([_note(METHOD, reached)])
    [event] = _events([i for batch in ref.told for i in batch.items])
    assert event.limits["status"] == "rejected" and event.limits["reached"] == "rate_limit_reached"
    assert event.limits["credits"] == {"has_credits": False, "unlimited": False, "balance": None}
