"""The opencode driver without the real binary: config, cursor, generated config, probe, and the
server's start-up and teardown against a stand-in (tests/opencode/fake_serve.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import msgspec
import psutil
import pytest

pytest.importorskip("httpx", reason="the opencode driver needs agent-paddock[opencode]")

from paddock.contract import DriverError, ResumeCursor, StartSessionInput, TokenUsage, ValidationError
from paddock.drivers import BUILT_IN_DRIVERS, InstanceContext, ModelAccess
from paddock.drivers.opencode import OPENCODE_CAPABILITIES, OpencodeConfig, check_server_url, permission_rules, server_config
from paddock.drivers.opencode._cursor import cursor_for, decode_cursor
from paddock.drivers.opencode._server import parse_ready_url

from tests.adapter_harness import hub  # noqa: F401  (fixture)

FAKE = Path(__file__).with_name("fake_serve.py")
SPEC = BUILT_IN_DRIVERS["opencode"]


def _config(**kw) -> OpencodeConfig:
    return msgspec.convert({"driver": "opencode", **kw}, OpencodeConfig)


def test_server_url_must_be_a_bare_origin():
    assert check_server_url("http://127.0.0.1:4096") == "http://127.0.0.1:4096"
    assert check_server_url("https://oc.example:443/") == "https://oc.example:443"
    for bad, why in [("http://u:p@h:1", "user-info"), ("http://h:1/api", "path"), ("http://h:1?x=1", "query"),
                     ("http://h:1#f", "fragment"), ("ftp://h:1", "http(s)"), ("h:1", "http(s)")]:
        with pytest.raises(ValueError, match=why.replace("(", r"\(").replace(")", r"\)")):
            check_server_url(bad)
    with pytest.raises(msgspec.ValidationError, match="user-info"):
        _config(server_url="http://me:pw@127.0.0.1:1")


def test_password_is_masked_in_the_config_repr_and_doctor(tmp_path, hub):
    cfg = _config(server_url="http://127.0.0.1:9", password="hunter2-secret")
    assert "hunter2-secret" not in repr(cfg) and "hunter2-secret" not in str(cfg)
    ctx = InstanceContext(instance_id="x", driver="opencode", config=cfg, home=str(tmp_path), env={}, state_dir=str(tmp_path),
                          hub=hub)
    doctor = SPEC.diagnose(ctx)
    assert "hunter2-secret" not in json.dumps(doctor) and "with a password" in doctor["binary"]


def test_permission_rules_follow_the_runtime_mode():
    assert permission_rules("full-access") == [{"permission": "*", "pattern": "*", "action": "allow"}]
    ask = permission_rules("approval-required")
    assert {r["permission"] for r in ask if r["action"] == "ask"} >= {"*", "bash", "edit", "webfetch"}
    assert {"permission": "question", "pattern": "*", "action": "allow"} in ask
    edits = permission_rules("auto-accept-edits")
    assert edits[-1] == {"permission": "edit", "pattern": "*", "action": "allow"}  # later rules win


def test_generated_config_names_the_key_variable_never_the_key():
    config = server_config(ModelAccess(endpoint="http://127.0.0.1:5/v1", api_key="sk-top-secret", model="m1"))
    assert config["enabled_providers"] == ["paddock"] and config["model"] == "paddock/m1"
    options = config["provider"]["paddock"]["options"]
    assert options == {"baseURL": "http://127.0.0.1:5/v1", "apiKey": "{env:PADDOCK_OPENCODE_API_KEY}"}
    assert "sk-top-secret" not in json.dumps(config)
    assert server_config(ModelAccess()) == {"autoupdate": False, "share": "disabled"}


def test_cursor_round_trip_and_refusals():
    cursor = cursor_for("opencode", "ses_abc", "/w", TokenUsage(total_tokens=5))
    sid, cwd, usage = decode_cursor(cursor, "opencode")
    assert (sid, cwd, usage.total_tokens) == ("ses_abc", "/w", 5)
    with pytest.raises(ValidationError):
        decode_cursor(ResumeCursor(driver="claude", version=1, payload="{}"), "opencode")
    with pytest.raises(ValidationError):
        decode_cursor(ResumeCursor(driver="opencode", version=1, payload="not json"), "opencode")
    with pytest.raises(ValidationError):
        decode_cursor(ResumeCursor(driver="opencode", version=1, payload='{"session_id": "x"}'), "opencode")


def test_readiness_line_is_parsed():
    assert parse_ready_url(b"opencode server listening on http://127.0.0.1:4096") == "http://127.0.0.1:4096"
    assert parse_ready_url(b"Warning: OPENCODE_SERVER_PASSWORD is not set; server is unsecured.") is None


def test_capabilities_are_declared():
    assert SPEC.capabilities is OPENCODE_CAPABILITIES
    assert OPENCODE_CAPABILITIES.sessions.shared_process and OPENCODE_CAPABILITIES.approvals.user_input
    assert OPENCODE_CAPABILITIES.sessions.fork and OPENCODE_CAPABILITIES.context.compaction


def test_probe_says_what_to_install(tmp_path, hub, monkeypatch):
    cfg = _config(binary=str(FAKE))
    ctx = InstanceContext(instance_id="x", driver="opencode", config=cfg, home=str(tmp_path), env={}, state_dir=str(tmp_path),
                          hub=hub)
    assert SPEC.probe(ctx) is None
    import paddock.actors.transports._http as http

    monkeypatch.setattr(http, "httpx", None)
    assert "install agent-paddock[opencode]" in SPEC.probe(ctx)
    missing = _config(binary=str(tmp_path / "nope"))
    monkeypatch.undo()
    assert "does not exist" in SPEC.probe(InstanceContext(instance_id="x", driver="opencode", config=missing,
                                                          home=str(tmp_path), env={}, state_dir=str(tmp_path), hub=hub))


def _adapter(tmp_path, hub, mode: str, **config):
    cfg = _config(binary=sys.executable, args=[str(FAKE), mode], **config)
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(tmp_path)}
    ctx = InstanceContext(instance_id="fake", driver="opencode", config=cfg, home=str(tmp_path), env=env,
                          state_dir=str(tmp_path), hub=hub)
    return SPEC.create(ctx)


def _start(adapter, tmp_path):
    return adapter.start_session(StartSessionInput(thread_id="t1", cwd=str(tmp_path)), timeout=30)


def test_an_early_exit_fails_the_start_with_the_stderr_tail(tmp_path, hub):
    adapter = _adapter(tmp_path, hub, "exit-early")
    try:
        with pytest.raises(DriverError) as err:
            _start(adapter, tmp_path)
        assert "exited before it was ready" in str(err.value) and "cannot start (as asked)" in str(err.value)
    finally:
        adapter.close()


def test_no_readiness_line_fails_after_start_timeout(tmp_path, hub):
    adapter = _adapter(tmp_path, hub, "silent", start_timeout=1.5)
    t0 = time.monotonic()
    try:
        with pytest.raises(DriverError, match="no readiness line within 1.5 s"):
            _start(adapter, tmp_path)
        assert time.monotonic() - t0 < 10
    finally:
        adapter.close()
    assert not [p for p in psutil.Process().children(recursive=True) if "fake_serve" in " ".join(p.cmdline())]


def test_a_server_ignoring_sigterm_is_killed_after_the_grace(tmp_path, hub):
    adapter = _adapter(tmp_path, hub, "ignore-term", shutdown_timeout=1.0)
    # No session can be created on the stand-in; bring the server up the way the first start does.
    scope, link = adapter._ensure_link(time.monotonic() + 30)
    pid = adapter.server_pid
    assert pid is not None and link.up.is_set()
    # The generated password reached the child's environment, and the stream authenticated with it.
    assert psutil.Process(pid).environ()["OPENCODE_SERVER_PASSWORD"] == link._password
    t0 = time.monotonic()
    adapter.close(timeout=10)
    took = time.monotonic() - t0
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert 0.9 <= took < 6.0, took


def test_a_malformed_event_reaches_every_session_as_a_transport_warning(tmp_path, hub):
    import pykka

    from paddock.actors import TransportWarning

    class Sink(pykka.ThreadingActor):
        def __init__(self) -> None:
            super().__init__()
            self.got: list = []

        def on_receive(self, message):
            if message == "get":
                return list(self.got)
            self.got.append(message)

    adapter = _adapter(tmp_path, hub, "garbage")
    sink = Sink.start()
    try:
        _, link = adapter._ensure_link(time.monotonic() + 30)
        link.register("ses_x", sink)
        deadline = time.monotonic() + 10
        while not [m for m in sink.ask("get") if isinstance(m, TransportWarning)]:
            assert time.monotonic() < deadline, sink.ask("get")
            time.sleep(0.05)
        [warning] = [m for m in sink.ask("get") if isinstance(m, TransportWarning)]
        assert warning.code == "sse.malformed_event" and "not valid JSON" in warning.message
    finally:
        sink.stop()
        adapter.close()


def test_a_malformed_event_before_any_session_is_the_instances_warning(tmp_path, hub):
    adapter = _adapter(tmp_path, hub, "garbage")
    sub = hub.subscribe(instance_id="fake", types=["runtime.warning"])
    try:
        adapter._ensure_link(time.monotonic() + 30)  # no session is routed when the event comes
        warning = sub.get(timeout=10)
        assert warning is not None, "the warning was dropped"
        assert warning.code == "transport.malformed_event" and warning.thread_id == ""
    finally:
        sub.close()
        adapter.close()
