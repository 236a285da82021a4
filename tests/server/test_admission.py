"""Admission behind ``paddock serve``: the same ten-turn check as in process, through
``RemoteRuntime``, and ``CapacityError`` rebuilt by the client from the server's 429."""

from __future__ import annotations

import json
import re

import pytest

from paddock.contract import CapacityError
from tests.helpers.admission import ADMITTED_TOML, SLOW, ten_turns_two_at_a_time
from tests.server.test_cli import cli
from tests.server.test_metrics import _scrape_until

GATED = (("driver", "local"), ("instance", "gated"))


def test_ten_turns_through_a_real_server_run_two_at_a_time_in_order(make_server):
    served = make_server("unix", config=ADMITTED_TOML)
    remote = served.remote()
    try:
        ten_turns_two_at_a_time(remote, served.workspace)
    finally:
        remote.close()
    with served.http() as client:  # /metrics: the queue's depth and each queued turn's wait
        scraped = _scrape_until(client, lambda s: s.get(("paddock_turn_queue_wait_seconds_count", GATED)) == 8)
    assert scraped[("paddock_turns_queued", GATED)] == 0
    assert scraped[("paddock_turn_queue_wait_seconds_sum", GATED)] > 0


def test_a_refused_turn_is_a_capacity_error_over_http(make_server):
    served = make_server("unix", config=ADMITTED_TOML.replace("max_running_turns = 2",
                                                             "max_running_turns = 1\nqueue = false"))
    remote = served.remote()
    try:
        remote.start_session("a", instance="gated", cwd=served.workspace)
        remote.start_session("b", instance="gated", cwd=served.workspace)
        remote.send_turn("a", SLOW.replace("0.05", "0.5"))
        with pytest.raises(CapacityError) as err:
            remote.send_turn("b", "@reply refused")
        assert (err.value.limit, err.value.scope, err.value.bound) == ("max_running_turns", "instance", 1)
        with served.http() as http:
            answer = http.post("/v1/send_turn", json={"thread_id": "b", "text": "@reply refused"})
        assert answer.status_code == 429 and answer.json()["error"]["code"] == "capacity"
    finally:
        remote.close()


def test_paddock_sessions_shows_a_queued_turn(make_server):
    served = make_server("unix", config=ADMITTED_TOML.replace("max_running_turns = 2", "max_running_turns = 1"))
    with served.remote() as rt:
        for t in ("busy", "waits"):
            rt.start_session(t, instance="gated", cwd=served.workspace)
        rt.send_turn("busy", "@chunks 4\n@delay 2\nlong")
        queued = rt.send_turn("waits", "@reply later")
        listed = cli("sessions", "--state-dir", str(served.state))
        assert re.search(r"^waits\s+gated\s+local\s+ready, turn queued #1 \(\d+ s\)", listed.stdout, re.M), listed.stdout
        rows = [json.loads(line) for line in cli("sessions", "--json", "--state-dir", str(served.state)).stdout.splitlines()]
        [waiting] = [r for r in rows if r["thread_id"] == "waits"]
        assert waiting["queued"]["turn_id"] == queued.turn_id and waiting["queued"]["position"] == 1
        rt.interrupt_turn("waits")
        rt.interrupt_turn("busy")


def test_paddock_run_says_its_turn_is_queued(make_server):
    served = make_server("unix", config=ADMITTED_TOML.replace("max_running_turns = 2", "max_running_turns = 1"))
    with served.remote() as rt:
        rt.start_session("busy", instance="gated", cwd=served.workspace)
        rt.send_turn("busy", "@chunks 3\n@delay 1.5\nbusy")  # runs while the CLI starts
        r = cli("run", "--state-dir", str(served.state), "--instance", "gated", "--thread", "r1", "--cwd",
                str(served.workspace), "@reply after the busy one")
    assert r.returncode == 0 and "after the busy one" in r.stdout, r.stderr
    assert "the turn is queued (position 1)" in r.stderr
