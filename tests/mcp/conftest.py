"""Fixtures for the MCP tests: the test MCP server over HTTP/SSE as a real process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.acp.conftest import make  # noqa: F401  (the ACP harness fixture)
from tests.adapter_harness import hub  # noqa: F401  (a fixture)

SECRET = "s3cr3t-relay-value-93"


@pytest.fixture
def http_server(tmp_path, request):
    """``(url, transport, pid)`` of a test MCP server that answers 401 without ``X-Api-Key: SECRET``
    (the test server takes the header on its own argv: a scan for the secret skips ``pid``)."""
    transport = getattr(request, "param", "http")
    proc = subprocess.Popen(
        [sys.executable, "-m", "paddock.testing.mcp_server", "--record", str(tmp_path / "calls.jsonl"),
         f"--{transport}", "--require-header", f"X-Api-Key={SECRET}"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        yield proc.stdout.readline().strip(), transport, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
