"""Every line the driver writes to the app-server is valid against the JSON schema that the
pinned binary generates (``codex app-server generate-json-schema``): requests and notifications
against ``ClientRequest``/``ClientNotification``, our answers to its requests against each
request's ``*Response`` schema. The protocol is experimental and changes fast: this is the test
that fails first when a pin moves."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import jsonschema
import pytest

from paddock.contract import SendTurnInput

from .conftest import etype
from tests.live.conftest import require_peer

pytestmark = pytest.mark.live

RESPONSE_SCHEMAS = {
    "item/commandExecution/requestApproval": "CommandExecutionRequestApprovalResponse",
    "item/fileChange/requestApproval": "FileChangeRequestApprovalResponse",
    "item/permissions/requestApproval": "PermissionsRequestApprovalResponse",
    "item/tool/requestUserInput": "ToolRequestUserInputResponse",
    "mcpServer/elicitation/request": "McpServerElicitationRequestResponse",
    "execCommandApproval": "ExecCommandApprovalResponse",
    "applyPatchApproval": "ApplyPatchApprovalResponse",
}


class Lines:
    """A LineTap keeping every line in both directions."""

    def __init__(self) -> None:
        self.out: list[dict] = []
        self.inbound: list[dict] = []
        self._lock = threading.Lock()

    def on_outbound(self, line: bytes) -> None:
        with self._lock:
            self.out.append(json.loads(line))

    def on_inbound(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            return
        with self._lock:
            self.inbound.append(msg)


@pytest.fixture(scope="module")
def schema_dir(tmp_path_factory) -> Path:
    _, argv = require_peer("codex")
    out = tmp_path_factory.mktemp("codex-schema")
    subprocess.run([*argv, "app-server", "generate-json-schema", "--out", str(out)], check=True,
                   capture_output=True, timeout=60)
    return out


def _validator(path: Path) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads(path.read_text()))


def _drive(h) -> None:
    h.start(runtime_mode="approval-required")
    h.turn("hi SCENARIO:text")
    for scenario, decision in (("tool_shell", "accept"), ("patch", "decline")):
        res = h.send(f"go SCENARIO:{scenario}")
        opened = h.events_until(lambda e: etype(e) in ("request.opened", "turn.completed"))[-1]
        assert etype(opened) == "request.opened"
        h.adapter.respond_to_request("t1", opened.request_id, decision, timeout=10)
        h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    res = h.send("slow SCENARIO:slow")
    h.events_until(lambda e: etype(e) == "content.delta")
    h.adapter.steer_turn("t1", SendTurnInput(thread_id="t1", text="and more"), timeout=10)
    h.adapter.interrupt_turn("t1", timeout=10)
    h.events_until(lambda e: etype(e) == "turn.completed" and e.turn_id == res.turn_id)
    h.adapter.rollback_thread("t1", 1, timeout=10)


def test_outgoing_messages_match_the_pinned_schema(make, schema_dir):
    lines = Lines()
    h = make(tap=lines)
    _drive(h)
    cursor = h.adapter.list_sessions()[0].resume_cursor
    h.close()
    h2 = make(tap=lines, home=str(h.home))
    h2.start(resume_cursor=cursor, runtime_mode="approval-required")  # thread/resume
    h2.close()

    requests = _validator(schema_dir / "ClientRequest.json")
    notifications = _validator(schema_dir / "ClientNotification.json")
    server_requests = {m["id"]: m["method"] for m in lines.inbound if "method" in m and "id" in m}
    methods = set()
    for msg in lines.out:
        assert "jsonrpc" not in msg  # the app-server's dialect: no "jsonrpc" member
        if "method" in msg and "id" in msg:
            methods.add(msg["method"])
            errors = [e.message for e in requests.iter_errors(msg)]
            assert not errors, (msg, errors[:3])
        elif "method" in msg:
            methods.add(msg["method"])
            assert not list(notifications.iter_errors(msg)), msg
        else:
            method = server_requests[msg["id"]]
            schema = _validator(schema_dir / f"{RESPONSE_SCHEMAS[method]}.json")
            assert "result" in msg, msg
            errors = [e.message for e in schema.iter_errors(msg["result"])]
            assert not errors, (method, msg, errors[:3])
            methods.add(f"answer:{method}")
    assert methods >= {
        "initialize", "initialized", "model/list", "thread/start", "thread/resume", "turn/start", "turn/steer",
        "turn/interrupt", "thread/revert", "answer:item/commandExecution/requestApproval",
        "answer:item/fileChange/requestApproval",
    }, methods


def test_the_pinned_schema_still_has_every_method_we_call(schema_dir):
    requests = json.loads((schema_dir / "ClientRequest.json").read_text())
    offered = {branch["properties"]["method"]["enum"][0] for branch in requests["oneOf"]}
    assert {"initialize", "model/list", "thread/start", "thread/resume", "thread/revert", "turn/start",
            "turn/steer", "turn/interrupt"} <= offered
    served = json.loads((schema_dir / "ServerRequest.json").read_text())
    asked = {branch["properties"]["method"]["enum"][0] for branch in served["oneOf"]}
    assert set(RESPONSE_SCHEMAS) <= asked
