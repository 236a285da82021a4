from __future__ import annotations

import pytest

from paddock.testing import ModelServer


@pytest.fixture
def server(tmp_path):
    srv = ModelServer(workspace=tmp_path / "ws", log_path=tmp_path / "requests.jsonl").start()
    try:
        yield srv
    finally:
        srv.stop()
