"""MCP secrets (every ``env`` and ``headers`` value) appear in no event, log row, error, CLI
output, Python log record or process argv: a turn runs while every process under the runtime
is scanned, and the agent is made to say the secrets so that the masking has something to do."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import psutil
import pytest

from paddock import Runtime
from paddock.contract import McpHttpServer, McpStdioServer, PaddockError

from .conftest import run_turn, text_of

ENV_SECRET = "mcp-env-secret-7f3a9c2e41"
HEADER_SECRET = "mcp-header-secret-0b8d55e1"
CONFIG_SECRET = "mcp-config-secret-99aa11"
SECRETS = (ENV_SECRET, HEADER_SECRET, CONFIG_SECRET)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cmdlines() -> list[str]:
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            with open(f"/proc/{proc.pid}/cmdline", "rb") as fh:
                out.append(fh.read().replace(b"\0", b" ").decode("utf-8", "replace"))
        except OSError:
            pass
    return out


def _leaks(text: str) -> list[str]:
    return [s for s in SECRETS if s in text]


def test_no_secret_in_events_log_rows_logging_errors_or_argv(tmp_path, workspace, caplog):
    caplog.set_level(logging.DEBUG, logger="paddock")
    state = tmp_path / "state"
    config = {"instances": {"local": {"driver": "local",
                                      "mcp_servers": {"cfg": {"command": "mcp-cfg", "env": {"T": CONFIG_SECRET}}}}}}
    servers = [McpStdioServer(name="files", command="mcp-files", env={"FILES_TOKEN": ENV_SECRET}),
               McpHttpServer(name="docs", url="http://127.0.0.1:9/mcp", headers={"X-Key": HEADER_SECRET})]
    with Runtime.open(config, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace, mcp_servers=servers)
        argv: list[str] = []
        # The hub masks a secret within one batch of deltas; the agent says them in one chunk,
        # after a command that keeps the turn (and a process of its own) running for the scan.
        with rt.subscribe(thread_id="t1", types=["item.started", "content.delta", "turn.completed"]) as streaming:
            turn = rt.send_turn("t1", f"@run sleep 1\n@chunks 1\nkeys {ENV_SECRET} {HEADER_SECRET} {CONFIG_SECRET}")
            first = [streaming.get(timeout=10)]
            assert first[0] is not None and first[0].type == "item.started"  # the command runs: scan now
            argv += _cmdlines()
            while first[-1] is not None and first[-1].type != "turn.completed":
                first.append(streaming.get(timeout=10))
        _, events = run_turn(rt, "t1", f"again {ENV_SECRET}")
        logging.getLogger("paddock").warning("a host logs %s and %s", ENV_SECRET, repr(servers))
        with pytest.raises(PaddockError) as failed:  # an error that would quote what it was given
            rt.start_session("t2", instance="nope", cwd=workspace, mcp_servers=servers)
        assert first[-1].turn_id == turn.turn_id
        said = text_of(first) + text_of(events)
    assert "[redacted]" in said and not _leaks(said)
    assert len(argv) >= 2 and not _leaks("\n".join(argv)), argv
    assert not _leaks(caplog.text) and "a host logs [redacted]" in caplog.text
    assert not _leaks(str(failed.value)) and not _leaks(repr(servers))
    for name in ("events.db", "paddock.db"):
        body = b"".join(p.read_bytes() for p in state.glob(name + "*"))
        assert not [s for s in SECRETS if s.encode() in body], name


def test_no_secret_in_the_cli_output(tmp_path, workspace):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "files": {"command": "mcp-files", "env": {"FILES_TOKEN": ENV_SECRET}},
        "docs": {"url": "http://127.0.0.1:9/mcp", "type": "sse", "headers": {"X-Key": HEADER_SECRET}},
    }}))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PADDOCK_STATE_DIR", None)
    run = subprocess.run(
        [sys.executable, "-m", "paddock.cli", "run", "--state-dir", str(tmp_path / "state"), "--cwd", str(workspace),
         "--mcp-config", str(config), "--thread", "t1", "--json", f"echo {ENV_SECRET} {HEADER_SECRET}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "[redacted]" in run.stdout and not _leaks(run.stdout + run.stderr)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"files": {"command": "x", "env": {"K": ENV_SECRET}, "cwd": 7}}}))
    refused = subprocess.run(
        [sys.executable, "-m", "paddock.cli", "run", "--state-dir", str(tmp_path / "state"), "--mcp-config", str(bad),
         "hi"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and str(bad) in refused.stderr and "'files'" in refused.stderr
    assert not _leaks(refused.stdout + refused.stderr)
