"""The hand-off parameters on every surface: ``paddock serve`` with RemoteRuntime (the body
carries the servers, tagged by ``kind``), the CLI in two processes (the second resumes with what
the first handed), and the commented ``paddock init`` template, uncommented, loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from paddock import Runtime
from paddock._instances._config import load_config
from paddock.cli._init import template
from paddock.contract import McpHttpServer, McpStdioServer, with_preamble, with_reminder
from tests.server.conftest import make_server, short_root  # noqa: F401  (fixtures)

from .conftest import local_history, run_turn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FS = McpStdioServer(name="fs", command="mcp-fs", env={"FS_TOKEN": "fs-secret-0123456789"})
WEB = McpHttpServer(name="web", url="http://127.0.0.1:9/mcp", headers={"X-Key": "web-secret-0123456789"},
                    transport="sse")


def test_remote_runtime_hands_off_through_a_real_server(make_server):
    served = make_server("unix")
    remote = served.remote()
    try:
        remote.start_session("t1", instance="local-a", cwd=served.workspace, mcp_servers=[FS, WEB],
                             preamble="P", preamble_reminder="R")
        _, first = run_turn(remote, "t1", "one")
        _, second = run_turn(remote, "t1", "two")
        assert remote.generate_text("local-a", "@reply a title") == "a title"
        assert [s.thread_id for s in remote.list_sessions()] == ["t1"]
    finally:
        remote.close()
    assert served.stop() == 0
    started = [next(e for e in events if e.type == "turn.started") for events in (first, second)]
    assert [(s.preamble, s.input_text) for s in started] == [(True, "one"), (False, "two")]
    [file] = (served.state / "instances" / "local-a" / "paddock-threads").glob("*.json")
    assert json.loads(file.read_text())["mcp_servers"] == [
        {"kind": "stdio", "name": "fs", "command": "mcp-fs", "args": [], "env": {"FS_TOKEN": "fs-secret-0123456789"},
         "cwd": None},
        {"kind": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "web-secret-0123456789"},
         "transport": "sse"},
    ]
    # (generate_text's ephemeral session is the agent's own too; its file sorts anywhere)
    assert sorted(local_history(served.state, "local-a")) == sorted(
        [with_preamble("P", "one"), with_reminder("R", "two"), "@reply a title"])


def test_the_cli_hands_off_and_a_second_process_resumes_with_it(tmp_path, workspace):
    state = tmp_path / "state"
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps({"mcpServers": {"fs": {"command": "mcp-fs", "env": {"FS_TOKEN": "fs-secret-0123456789"}}}}))
    grounding = tmp_path / "grounding.md"
    grounding.write_text("Grounding from a file.")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PADDOCK_STATE_DIR", None)
    base = [sys.executable, "-m", "paddock.cli", "run", "--state-dir", str(state), "--thread", "t1"]
    first = subprocess.run([*base, "--cwd", str(workspace), "--mcp-config", str(mcp), "--preamble-file", str(grounding),
                            "one"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    second = subprocess.run([*base, "two"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0, second.stderr
    # Each process is a new live session: one full copy each.
    assert local_history(state) == [with_preamble("Grounding from a file.", "one"),
                                    with_preamble("Grounding from a file.", "two")]
    with Runtime.open(None, state_dir=state) as rt:
        rt.start_session("t1", instance="local", cwd=workspace)
        assert rt._adapter("local")._records["t1"].input.mcp_servers == (
            McpStdioServer(name="fs", command="mcp-fs", env={"FS_TOKEN": "fs-secret-0123456789"}),)


def test_the_init_template_uncommented_loads(tmp_path):
    text = template("local", "mine")
    block = text[text.index("# What every session"):].splitlines()[1:]
    kept = [line[2:].split("   #")[0] for line in block
            if line.startswith("# ") and ("=" in line or line.startswith("# [[")) and "preamble_file" not in line]
    config = tmp_path / "paddock.toml"
    config.write_text(text + "\n".join(kept) + "\n")
    handoff = load_config(config).instances[0].handoff
    assert [s.name for s in handoff.mcp_servers] == ["files", "docs"]
    assert handoff.preamble == "..." and handoff.preamble_max_chars == 70_000 and handoff.preamble_reminder == "..."


def test_config_check_names_the_servers_and_never_their_secrets(tmp_path):
    config = tmp_path / "paddock.toml"
    config.write_text('[instances.local]\ndriver = "local"\npreamble = "Grounding."\n'
                      '[[instances.local.mcp_servers]]\nname = "files"\ncommand = "mcp-files"\n'
                      'env = { FILES_TOKEN = "files-secret-0123456789" }\n'
                      '[[instances.local.mcp_servers]]\nname = "docs"\nurl = "http://127.0.0.1:9/mcp"\n'
                      'headers = { X-Key = "docs-secret-0123456789" }\n')
    env = {**os.environ}
    env.pop("PADDOCK_STATE_DIR", None)
    done = subprocess.run([sys.executable, "-m", "paddock.cli", "config", "check", "--config", str(config),
                           "--state-dir", str(tmp_path / "state")], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "mcp:      files (stdio), docs (http)" in done.stdout and "preamble: 10 characters" in done.stdout
    assert "secret" not in done.stdout + done.stderr
