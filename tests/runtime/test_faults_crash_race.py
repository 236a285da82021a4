"""Issue 25 #4, the race: a ``send_turn`` that reaches an agent which has died but whose exit the
host has not processed yet. The prompt never reaches the dead process; the call resumes the
session on the restarted agent in one call, as after a crash the host already knew of, instead of
failing its turn with the pipe's "Broken pipe". Real local agents, through the public API.

The window between the agent's death and the host's notice is held open by stopping the agent's
orphan-guard shim first: the shim mirrors the agent's exit, so while it is stopped the agent is a
zombie (its stdin's read end closed) and the host still sees a running process."""

from __future__ import annotations

import os
import signal
import threading

import psutil

from paddock import Runtime
from tests.helpers import until
from tests.runtime.conftest import run_turn
from tests.runtime.test_faults import _wait_for

ONE_LOCAL = {"instances": {"local": {"driver": "local"}}}


def _shim_and_agent() -> tuple[psutil.Process, psutil.Process]:
    [shim] = [p for p in psutil.Process().children() if "_shim.py" in " ".join(p.cmdline())]
    [agent] = shim.children()
    return shim, agent


def _dead(proc: psutil.Process) -> bool:
    """``proc`` exited and released its files (its stdin's read end): a zombie with no open fd.
    Its status turns zombie when its main thread exits, maybe before its other threads did."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE and not os.listdir(f"/proc/{proc.pid}/fd")
    except (psutil.NoSuchProcess, FileNotFoundError):
        return True
    except PermissionError:
        return False


def test_a_send_turn_racing_the_agents_death_resumes_the_session_in_one_call(tmp_path, workspace):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        run_turn(rt, "t1", "@reply before")
        shim, agent = _shim_and_agent()
        with rt.subscribe(thread_id="t1") as sub:
            shim.send_signal(signal.SIGSTOP)
            try:
                agent.send_signal(signal.SIGKILL)
                until(lambda: _dead(agent), timeout=10)
                outcome: dict[str, object] = {}

                def send() -> None:
                    try:
                        outcome["result"] = rt.send_turn("t1", "@reply-history")
                    except Exception as exc:  # the assertion below shows it
                        outcome["error"] = exc

                sender = threading.Thread(target=send)
                sender.start()
                sender.join(1.0)  # the call is under way against the dead agent (or already failed)
            finally:
                shim.send_signal(signal.SIGCONT)
            sender.join(60)
            assert not sender.is_alive()
            assert "error" not in outcome, repr(outcome.get("error"))
            turn = outcome["result"]
            seen = _wait_for(sub, lambda e: e.type == "turn.completed" and e.turn_id == turn.turn_id, timeout=30)
        ended = [e for e in seen if e.type == "turn.completed"]
        assert [(e.turn_id, e.state) for e in ended] == [(turn.turn_id, "completed")], \
            [(e.turn_id, e.state, e.error) for e in ended]
        text = "".join(e.delta for e in seen if e.type == "content.delta" and e.turn_id == turn.turn_id)
        assert text == "history: 1"  # the session was resumed on the new agent
        exits = [e for e in seen if e.type == "session.exited"]
        assert len(exits) == 1 and exits[0].recoverable and exits[0].signal == signal.SIGKILL, exits
        assert not any("Broken pipe" in (getattr(e, "error", None) or getattr(e, "message", None) or "")
                       for e in seen)
        assert _shim_and_agent()[1].pid != agent.pid
