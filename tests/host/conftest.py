"""Fixtures for the host hand-off tests: runtimes on the local agent and on a prompt-recording
ACP agent (``prompt_agent.py``), and readers of what each agent really received."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.runtime.conftest import run_turn, text_of  # noqa: F401  (re-exported)

PROMPT_AGENT = str(Path(__file__).with_name("prompt_agent.py"))


@pytest.fixture
def workspace(tmp_path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def prompt_agent_config(log: Path, **instance: object) -> dict:
    """One ``acp`` instance ``rec`` running ``prompt_agent.py``, which logs every prompt to ``log``."""
    return {"instances": {"rec": {"driver": "acp", "binary": sys.executable, "args": [PROMPT_AGENT],
                                  "env": {"PROMPT_LOG": str(log)}, **instance}}}


def prompts(log: Path) -> list[str]:
    """Every prompt text the recording agent received, in order."""
    if not log.exists():
        return []
    return [json.loads(line)["text"] for line in log.read_text().splitlines()]


def local_history(state: Path, instance: str = "local") -> list[str]:
    """The user texts the local agent received, in order, from its own session files."""
    folder = state / "instances" / instance / "local-agent" / "sessions"
    out: list[str] = []
    for path in sorted(folder.glob("*.jsonl")):
        lines = path.read_text().splitlines()[1:]  # the first line is the session header
        out += [json.loads(line)["user"] for line in lines]
    return out
