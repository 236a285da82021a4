"""Approval rules on the pinned CLIs against the scripted model server (conformance scenario
``03c-approval-rules``): a rule-accepted command runs without a person, a rule-declined one does
not run (checked on disk), an unmatched one asks a person. Nothing in the rules is per driver:
they decide on the ``request.opened`` subject each driver already builds."""

from __future__ import annotations

import json
import os

import pytest

from paddock.testing import ModelServer
from paddock.testing._conformance import Probe, _ruled, live_target, model_script, run_target
from tests.server.conftest import make_server, short_root  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.live, pytest.mark.timeout(600)]

SCENARIO = "03c-approval-rules"


@pytest.mark.parametrize("kind", ["claude", "codex", "gemini", "opencode", "copilot"])
def test_rules_decide_on_a_pinned_cli(kind, tmp_path):
    target = live_target(kind, scenarios=(SCENARIO,))
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(target)
    report = run_target(target, tmp_path, only=(SCENARIO,))
    [case] = [c for c in report.cases if c.scenario == SCENARIO]
    assert case.result == "pass", case
    assert case.reason.startswith("rule accept; rule decline; person decline"), case


def _toml_value(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return json.dumps(value)  # strings, numbers and booleans are valid TOML as JSON writes them


@pytest.mark.parametrize("kind", ["claude", "codex", "gemini", "opencode", "copilot"])
def test_rules_decide_on_a_pinned_cli_through_paddock_serve(kind, make_server, short_root):
    """The same three cases, the session started over HTTP with the thread's own rules
    (``RemoteRuntime.start_session(approval_rules=...)``) and answered by a person over HTTP."""
    target = live_target(kind, scenarios=(SCENARIO,))
    if isinstance(target, str):
        if os.environ.get("PADDOCK_REQUIRE_PEERS") == "1":
            pytest.fail(target + " (PADDOCK_REQUIRE_PEERS=1)", pytrace=False)
        pytest.skip(target)
    root = short_root / "srv"
    (root / "ws").mkdir(parents=True)
    with ModelServer(model_script(target.script), workspace=root / "ws", log_path=short_root / "model.jsonl") as server:
        instance = {**target.config, "endpoint": server.url}
        config = "[instances.agent]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in instance.items())
        served = make_server("unix", config=config, name="srv")
        with served.remote() as rt:
            probe = Probe(rt=rt, instance="agent", workspace=served.workspace, dialect=target.dialect,  # type: ignore[arg-type]
                          caps=rt.instances()[0].capabilities, config={}, state_dir=served.state, server=server,
                          timeout=target.timeout)
            said = [_ruled(probe, "accept"), _ruled(probe, "decline"), _ruled(probe, None)]
    assert said == ["rule accept", "rule decline", "person decline"], said
