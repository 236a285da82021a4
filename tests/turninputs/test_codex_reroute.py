"""Codex's ``model/rerouted`` notification (app-server v2: ``threadId``, ``turnId``,
``fromModel``, ``toModel``, ``reason``) becomes ``model.rerouted`` on the running turn, decoded by
the router's own decoder from wire bytes. (The scripted model server cannot make Codex reroute: its
backend decides, not the answering model's name.)"""

from __future__ import annotations

import json

from paddock.contract import EventIdentity, ModelRerouted
from paddock.drivers.codex._server import _DECODERS
from paddock.drivers.codex._translate import TRANSLATED, Translator

ID = EventIdentity(driver="codex", instance_id="c", thread_id="t1")


def _translate(tr: Translator, payload: dict) -> list:
    out: list = []
    TRANSLATED["model/rerouted"](tr, _DECODERS["model/rerouted"].decode(json.dumps(payload).encode()), out)
    return out


def test_model_rerouted_becomes_the_event_of_the_running_turn():
    tr = Translator(ID)
    tr.begin("turn-1", "native-1")
    [event] = _translate(tr, {"threadId": "th", "turnId": "native-1", "fromModel": "gpt-5.5", "toModel": "gpt-5.4",
                              "reason": "highRiskCyberActivity"})
    assert event == ModelRerouted(**ID, turn_id="turn-1", from_model="gpt-5.5", to_model="gpt-5.4",
                                  reason="highRiskCyberActivity")
    [late] = _translate(tr, {"threadId": "th", "turnId": "native-0", "fromModel": "a", "toModel": "b",
                             "reason": "highRiskCyberActivity"})
    assert late.turn_id is None  # another turn's notice is the thread's, not the running turn's
