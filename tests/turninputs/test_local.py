"""Model catalogs and attachments through the public Runtime on the local agent (a real ACP
agent process over real pipes): its ``model`` config option is its catalog, and it echoes the
image and resource blocks a prompt carried."""

from __future__ import annotations

import psutil
import pytest

from paddock import Runtime
from paddock.contract import (
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENTS,
    CapabilityUnsupportedError,
    FileAttachment,
    ImageAttachment,
    ValidationError,
)

from .conftest import PNG, run_turn, text_of

MODELS = {"PADDOCK_LOCAL_MODELS": "local-small,local-large"}


def _config(env: dict[str, str] | None = None) -> dict:
    return {"instances": {"loc": {"driver": "local", "env": env or {}}}}


def _children() -> int:
    return len(psutil.Process().children(recursive=True))


@pytest.fixture
def rt(tmp_path):
    with Runtime.open(_config(MODELS), state_dir=tmp_path / "state") as runtime:
        yield runtime


def test_models_come_from_the_sessions_model_option_and_are_cached(rt):
    before = _children()
    models = rt.models("loc")
    assert [(m.id, m.is_default) for m in models] == [("local-small", True), ("local-large", False)]
    assert _children() == before  # the throwaway session and its process are gone
    assert rt.list_sessions() == [] and rt.list_threads() == []
    assert rt.models("loc") == models  # cached: asks no process
    assert rt.models("loc", refresh=True) == models


def _model_warnings(sub, until: str) -> list[str]:
    """The ``model.not_in_catalog`` warnings read from ``sub`` up to the first ``until`` event."""
    seen: list[str] = []
    while True:
        event = sub.get(timeout=30)
        assert event is not None, f"no {until} within 30 s"
        if event.type == "runtime.warning" and event.code == "model.not_in_catalog":
            seen.append(event.message)
        if event.type == until:
            return seen


def test_a_model_the_catalog_lacks_is_passed_to_the_agent_with_advice(rt, tmp_path):
    """The catalog is advice: a model gateway serves names no catalog lists, so a name the
    catalog lacks reaches the agent, and a ``runtime.warning`` names the close matches."""
    ws = tmp_path / "ws"
    ws.mkdir()
    rt.models("loc")
    with rt.subscribe(thread_id="t1") as sub:
        rt.start_session("t1", instance="loc", cwd=ws, model="local-lareg")
        [advice] = _model_warnings(sub, "session.started")
    assert "'local-large'" in advice and "did you mean" in advice
    assert rt.list_sessions()[0].model == "local-lareg"
    with rt.subscribe(thread_id="t1") as sub:
        rt.send_turn("t1", "@reply yes", model="gateway/any-model")
        [advice] = _model_warnings(sub, "turn.completed")
    assert "'gateway/any-model'" in advice
    _, events = run_turn(rt, "t1", "@reply yes", model="local-small")
    assert events[-1].state == "completed" and text_of(events) == "yes"
    assert not [e for e in events if e.type == "runtime.warning" and e.code == "model.not_in_catalog"]


def test_the_instances_own_configured_model_is_accepted_when_passed(tmp_path):
    """``model=`` naming the instance's configured model (docs/mock-model.md's setup) runs
    without advice, as leaving it out does."""
    ws = tmp_path / "ws"
    ws.mkdir()
    config = {"instances": {"loc": {"driver": "local", "model": "gateway-model", "env": MODELS}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        rt.models("loc")
        with rt.subscribe(thread_id="t1") as sub:
            rt.start_session("t1", instance="loc", cwd=ws, model="gateway-model")
            assert _model_warnings(sub, "session.started") == []
        _, events = run_turn(rt, "t1", "@reply ok", model="gateway-model")
        assert text_of(events) == "ok"
        assert not [e for e in events if e.type == "runtime.warning"]


def test_an_image_by_path_reaches_the_agent_as_an_image_block(rt, png_file):
    ws, path = png_file
    rt.start_session("t1", instance="loc", cwd=ws)
    assert rt.instances()[0].capabilities.turns.attachments == ("image", "file")
    _, events = run_turn(rt, "t1", "@reply seen", attachments=[ImageAttachment(path="red.png", mime_type="image/png")])
    assert text_of(events) == f"received: image image/png {len(PNG)} bytes\nseen"


def test_image_bytes_and_files_by_value_and_by_path(rt, png_file):
    ws, _ = png_file
    (ws / "notes.md").write_text("# notes\nhello\n")
    rt.start_session("t1", instance="loc", cwd=ws)
    attachments = [
        ImageAttachment(data=PNG, mime_type="image/png"),
        FileAttachment(text="hello", name="greeting.txt"),
        FileAttachment(path=str(ws / "notes.md"), mime_type="text/markdown"),
    ]
    _, events = run_turn(rt, "t1", "@reply ok", attachments=attachments)
    assert text_of(events) == (f"received: image image/png {len(PNG)} bytes; resource greeting.txt text/plain 5 chars; "
                               f"resource file://{ws.resolve()}/notes.md text/markdown 14 chars\nok")


def test_bad_attachments_are_typed_errors_and_reach_no_agent(rt, png_file, tmp_path):
    ws, path = png_file
    (tmp_path / "outside.png").write_bytes(PNG)
    (ws / "binary.bin").write_bytes(b"\xff\xfe\x00")
    (ws / "link.png").symlink_to(tmp_path / "outside.png")
    rt.start_session("t1", instance="loc", cwd=ws)
    image = ImageAttachment(path="red.png", mime_type="image/png")
    cases = {
        "outside the session's workspace": [ImageAttachment(path="../outside.png", mime_type="image/png")],
        "outside the session's workspace roots": [ImageAttachment(path="link.png", mime_type="image/png")],
        "cannot be read": [ImageAttachment(path="missing.png", mime_type="image/png")],
        f"the limit is {MAX_ATTACHMENTS}": [image] * (MAX_ATTACHMENTS + 1),
        f"the limit is {MAX_ATTACHMENT_BYTES}": [ImageAttachment(data=b"x" * (MAX_ATTACHMENT_BYTES + 1), mime_type="image/png")],
        "exactly one of path and data": [ImageAttachment(path="red.png", data=PNG, mime_type="image/png")],
        "exactly one of path and text": [FileAttachment()],
        "not UTF-8": [FileAttachment(path="binary.bin")],
    }
    for issue, attachments in cases.items():
        with pytest.raises(ValidationError, match=issue):
            rt.send_turn("t1", "@reply no", attachments=attachments)
    with pytest.raises(ValidationError, match="mime_type"):
        rt.send_turn("t1", "@reply no", attachments=[{"kind": "image", "path": "red.png", "mime_type": "image/bmp"}])
    assert rt.read_thread("t1").turns == ()


def test_a_driver_that_declares_no_attachments_refuses_before_touching_the_process(tmp_path, png_file):
    ws, _ = png_file
    env = {"PADDOCK_LOCAL_NO_ATTACHMENTS": "1"}
    with Runtime.open(_config(env), state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="loc", cwd=ws)
        assert rt.instances()[0].capabilities.turns.attachments == ()
        for attachment in (ImageAttachment(path="red.png", mime_type="image/png"), FileAttachment(text="x")):
            with pytest.raises(CapabilityUnsupportedError) as err:
                rt.send_turn("t1", "@reply no", attachments=[attachment])
            assert err.value.capability == "turns.attachments"
        assert rt.read_thread("t1").turns == ()
        _, events = run_turn(rt, "t1", "@reply still fine")
        assert text_of(events) == "still fine"


def test_steering_with_an_image_restarts_the_turn_carrying_it(rt, png_file):
    ws, _ = png_file
    rt.start_session("t1", instance="loc", cwd=ws)
    assert not rt.instances()[0].capabilities.turns.steer  # interrupt and restart
    with rt.subscribe(thread_id="t1", types=("turn.started", "turn.completed", "content.delta")) as sub:
        first = rt.send_turn("t1", "@reply slow slow slow slow\n@chunks 4\n@delay 5")
        assert sub.get(timeout=10).type == "turn.started"
        second = rt.steer_turn("t1", "@reply steered", attachments=[ImageAttachment(path="red.png", mime_type="image/png")])
        assert second.turn_id != first.turn_id
        text, done = "", None
        while done is None:
            event = sub.get(timeout=20)
            assert event is not None
            if event.type == "content.delta" and event.turn_id == second.turn_id:
                text += event.delta
            if event.type == "turn.completed" and event.turn_id == second.turn_id:
                done = event
    assert text == f"received: image image/png {len(PNG)} bytes\nsteered"


@pytest.mark.parametrize("takes", [True, False])
def test_a_thread_resumed_by_its_turn_takes_or_refuses_attachments_by_the_agents_answer(tmp_path, png_file, takes):
    """In a new host the instance's agent has not answered ``initialize`` yet: the turn resumes
    the thread first, and its kinds decide (never the defaults before negotiation)."""
    ws, _ = png_file
    env = {} if takes else {"PADDOCK_LOCAL_NO_ATTACHMENTS": "1"}
    with Runtime.open(_config(env), state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="loc", cwd=ws)
        run_turn(rt, "t1", "@reply first")
    with Runtime.open(_config(env), state_dir=tmp_path / "state") as rt:
        attachment = ImageAttachment(path="red.png", mime_type="image/png")
        if takes:
            _, events = run_turn(rt, "t1", "@reply again", attachments=[attachment])
            assert text_of(events) == f"received: image image/png {len(PNG)} bytes\nagain"
        else:
            with pytest.raises(CapabilityUnsupportedError):
                rt.send_turn("t1", "@reply no", attachments=[attachment])
            assert [t.user_text for t in rt.read_thread("t1").turns] == ["@reply first"]
