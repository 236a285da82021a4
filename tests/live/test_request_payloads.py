"""Live: every driver's ``request.opened`` says exactly what the decision approves (issue #24).

Each pinned CLI (and the built-in ``local`` agent) runs through the public Runtime against the
scripted model server, behind the tripwire proxy, in ``approval-required`` mode. For a shell
command the request's subject is the exact command line the agent will run, with its cwd; for a
new file it is the path and a diff that adds the content. Every request is declined, and the
disk shows nothing ran.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from paddock import Runtime
from paddock.contract import CommandSubject, FileChangeSubject, RequestOpened, ToolSubject
from paddock.testing import ModelServer, Shell, build_offline_env

from tests.codex.conftest import offline_config

from .conftest import require_peer

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]

KEY = "sk-paddock-live-payloads"
# The model each CLI is configured with (any name the model server accepts).
MODELS = {
    "claude": "claude-sonnet-4-5",
    "gemini": "gemini-2.5-flash",
    "qwen": "qwen3-coder",
    "claude-acp": "claude-sonnet-4-5",
    "copilot": "gpt-4.1",
    "codex-acp": "gpt-5.4-mini",
    "opencode": "mock-model",
}
DRIVERS = ["claude", "codex", "codex-acp", "copilot", "gemini", "qwen", "opencode", "claude-acp", "local"]
# Codex runs every command through a login shell (codex-app-server.md).
CODEX_FAMILY = ("codex", "codex-acp")
# The app-server runs a command inside its sandbox without asking; the escalated scenario makes it
# ask. codex-acp's "untrusted" policy asks for the plain command and rejects an escalated one
# itself (drivers/acp/flavors/_codex_acp.py).
ESCALATES = ("codex",)
_PROXY_KEYS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def _instance(driver: str, url: str, tmp_path: Path, proxy: str) -> dict:
    if driver == "local":
        return {"driver": "local"}
    if driver == "codex":
        return {"driver": "codex", **offline_config(url)}
    if driver == "claude":
        # The claude driver's own live tests give the Anthropic SDK the /v1 base.
        return {"driver": "claude", "endpoint": url + "/v1", "api_key": KEY, "model": MODELS[driver]}
    if driver == "opencode":  # its npm provider package comes from the offline environment
        offline = build_offline_env("opencode", tmp_path / "env", model_url=url, proxy_url=proxy)
        return {"driver": "opencode", "endpoint": url, "api_key": KEY, "model": MODELS[driver], "env": offline.env}
    return {"driver": driver, "endpoint": url, "api_key": KEY, "model": MODELS[driver]}


def _prompts(driver: str) -> tuple[str, str]:
    """The prompts that ask for ``touch hello.txt`` and for the new file ``patched.txt``."""
    if driver == "local":  # the local agent's own directives (no model)
        return "@run touch hello.txt", "@write patched.txt created by apply_patch"
    shell = "tool_shell_escalated" if driver in ESCALATES else "tool_shell"
    return f"run it SCENARIO:{shell}", "write it SCENARIO:patch"


def _declined_request(rt: Runtime, thread_id: str, prompt: str) -> RequestOpened:
    """Send ``prompt``; decline the first request; return it once the turn ended."""
    opened: list[RequestOpened] = []
    with rt.subscribe(thread_id=thread_id) as events:
        turn = rt.send_turn(thread_id, prompt)
        while True:
            event = events.get(timeout=90)
            assert event is not None, f"no turn.completed within 90 s; requests: {opened}"
            if event.type == "request.opened":
                opened.append(event)
                rt.respond_to_request(thread_id, event.request_id, "decline")
            elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                break
    assert opened, f"{prompt!r} opened no request"
    return opened[0]


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_request_carries_the_exact_command_and_the_diff(driver, tmp_path, workspace, model_server, tripwire,
                                                          monkeypatch):
    if driver != "local":
        require_peer(driver)
    for key in _PROXY_KEYS:
        monkeypatch.setenv(key, tripwire.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    shell_prompt, write_prompt = _prompts(driver)
    config = {"instances": {"agent": _instance(driver, model_server.url, tmp_path, tripwire.url)}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.start_session("shell", instance="agent", cwd=str(workspace), runtime_mode="approval-required", timeout=60)
        command = _declined_request(rt, "shell", shell_prompt)
        rt.start_session("edit", instance="agent", cwd=str(workspace), runtime_mode="approval-required", timeout=60)
        write = _declined_request(rt, "edit", write_prompt)

    assert command.kind == "command"
    expected = "/bin/bash -lc 'touch hello.txt'" if driver in CODEX_FAMILY else "touch hello.txt"
    assert command.subject == CommandSubject(command=expected, cwd=str(workspace)), command

    assert write.kind == "file_change"
    assert isinstance(write.subject, FileChangeSubject), write
    [edit] = write.subject.files
    assert Path(edit.path) == workspace / "patched.txt", edit
    assert edit.diff is not None and "+created by apply_patch" in edit.diff, edit
    assert not edit.truncated

    assert not (workspace / "hello.txt").exists() and not (workspace / "patched.txt").exists()


def test_codex_acp_asks_the_host_before_a_command_it_calls_a_search(tmp_path, workspace, tripwire, monkeypatch):
    """codex-acp names ``find -delete`` a ``search`` (a kind approval-required answers itself for
    other agents): it is still left to the host, and the declined command deletes nothing."""
    require_peer("codex-acp")
    for key in _PROXY_KEYS:
        monkeypatch.setenv(key, tripwire.url)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    victim = workspace / "victim.txt"
    victim.write_text("keep me\n")
    script = {"scenarios": {"find_delete": [Shell(command="find . -name victim.txt -delete")]}}
    with ModelServer(script, workspace=workspace) as server:
        config = {"instances": {"agent": _instance("codex-acp", server.url, tmp_path, tripwire.url)}}
        with Runtime.open(config, state_dir=tmp_path / "state") as rt:
            rt.start_session("find", instance="agent", cwd=str(workspace), runtime_mode="approval-required", timeout=60)
            request = _declined_request(rt, "find", "clean up SCENARIO:find_delete")
    # It reaches the host as a tool named by its search (the exact command is in its arguments).
    assert isinstance(request.subject, ToolSubject), request
    assert request.subject.arguments["command"] == ["/bin/bash", "-lc", "find . -name victim.txt -delete"], request
    assert victim.read_text() == "keep me\n"
