"""Issue 25 #4, the race: a ``send_turn`` that reaches an agent which has died but whose exit the
host has not processed yet. The prompt never reaches the dead process; the call resumes the
session on the restarted agent in one call, as after a crash the host already knew of, instead of
failing its turn with the pipe's "Broken pipe". Real local agents, through the public API.

The window between the agent's death and the host's notice is held open by stopping the agent's
orphan-guard shim first: the shim mirrors the agent's exit, so while it is stopped the agent is a
zombie (its stdin's read end closed) and the host still sees a running process."""

from __future__ import annotations

import os
import select
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


def _pipe_readers_gone(pipe: str) -> bool:
    """Whether every read end of ``pipe`` (``pipe:[inode]``, the agent's stdin) is closed: our
    write end polls POLLERR, which is what the runtime checks before it writes."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != pipe:
                continue
            poller = select.poll()
            poller.register(int(fd), 0)
            if any(ev & select.POLLERR for _, ev in poller.poll(0)):
                return True
        except OSError:
            continue
    return False


def _holders(pipe: str) -> list[str]:
    """Every process (pid and command) holding ``pipe`` open, for the failure message."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(os.readlink(f"/proc/{proc.pid}/fd/{fd}") == pipe for fd in os.listdir(f"/proc/{proc.pid}/fd")):
                found.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:120]}")
        except OSError:
            continue
    return found


def test_a_send_turn_racing_the_agents_death_resumes_the_session_in_one_call(tmp_path, workspace):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        run_turn(rt, "t1", "@reply before")
        shim, agent = _shim_and_agent()
        with rt.subscribe(thread_id="t1") as sub:
            shim.send_signal(signal.SIGSTOP)
            try:
                stdin = os.readlink(f"/proc/{agent.pid}/fd/0")
                agent.send_signal(signal.SIGKILL)
                until(lambda: _dead(agent), timeout=10)
                # The runtime knows the agent is gone by its stdin having no reader left: wait for
                # the kernel to say so (CI once saw the send refused as "stopped", the stopped
                # shim's state, which means a reader was still open when it looked).
                try:
                    until(lambda: _pipe_readers_gone(stdin), timeout=10)
                except AssertionError:
                    raise AssertionError(f"the agent's stdin {stdin} still has readers: {_holders(stdin)}") from None
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
