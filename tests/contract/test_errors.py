from __future__ import annotations

import pickle

import pytest

from paddock.contract import (
    CapabilityUnsupportedError,
    CapacityError,
    ConfigError,
    DriverError,
    InstanceNotFoundError,
    OperationTimeout,
    PaddockError,
    PersistenceError,
    ProcessError,
    RequestError,
    ResumeCursor,
    SessionClosedError,
    SessionNotFoundError,
    ValidationError,
)

ERRORS = [
    ValidationError("send_turn", "the prompt is empty", thread_id="t1"),
    InstanceNotFoundError("codex-work", "binary 'codex' not found on PATH"),
    SessionNotFoundError("t9"),
    SessionClosedError("t1", "the agent exited"),
    RequestError("session/prompt", -32603, "Internal error", driver="acp", instance_id="gemini"),
    ProcessError("agent exited during the handshake", 3, stderr_tail="boom\n"),
    CapabilityUnsupportedError("turns.steer", "steering a running turn"),
    DriverError("codex", "codex-work", "app-server refused initialize"),
    ConfigError("paddock.toml", "[instances.a] key 'driver': expected a string"),
    PersistenceError("append events", "disk full"),
    OperationTimeout("start_session", 30.0, thread_id="t1"),
    CapacityError("max_running_turns", "instance", 4, 4, instance_id="claude", thread_id="t1"),
]


@pytest.mark.parametrize("err", ERRORS, ids=lambda e: type(e).__name__)
def test_every_error_is_a_sentence_in_the_family(err):
    assert isinstance(err, PaddockError)
    text = str(err)
    assert text[0].isupper() and len(text) > 20
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is type(err) and str(clone) == text


def test_errors_name_where_they_happened():
    assert "thread 't1'" in str(ERRORS[0])
    assert str(ERRORS[4]).endswith("(instance 'gemini', driver 'acp')")
    assert "exit code 3" in str(ERRORS[5]) and "boom" in str(ERRORS[5])
    assert "killed by signal 9" in str(ProcessError("agent died", -9))
    assert ERRORS[1].instance_id == "codex-work"


def test_resume_cursor_round_trips_and_rejects_garbage():
    cursor = ResumeCursor(driver="acp", version=1, payload='{"sessionId":"s1"}')
    assert ResumeCursor.decode(cursor.encode()) == cursor
    with pytest.raises(ValidationError, match="version"):
        ResumeCursor.decode(b'{"driver":"acp","version":"x","payload":""}')
