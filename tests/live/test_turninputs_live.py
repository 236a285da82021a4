"""Live: model catalogs and image attachments through the public Runtime on every pinned driver
(codex, claude, opencode and the ACP flavors), against the scripted model server, with every
proxy variable pointing at the tripwire.

For each: ``models()`` is non-empty where the agent reports a catalog; a near-miss model name is
passed to the agent with a ``model.not_in_catalog`` warning naming the close match; a PNG attached to a turn
reaches the model server as an image part.
"""

from __future__ import annotations

import contextlib

from pathlib import Path

import pytest

from paddock import Runtime
from paddock.contract import CapabilityUnsupportedError, FileAttachment, ImageAttachment, PaddockError
from paddock.testing import ModelServer, build_offline_env

from tests.codex.conftest import offline_config
from tests.turninputs.conftest import PNG, run_turn

from .conftest import Tripwire, require_peer
from .test_acp_flavors import KEY, MODELS as ACP_MODELS, _proxied, _restore

pytestmark = [pytest.mark.live, pytest.mark.timeout(240)]

DRIVERS = ("codex", "claude", "opencode", *sorted(ACP_MODELS))
NO_CATALOG = {"copilot"}
"""Copilot's session/new answers neither a ``models`` block nor a ``model`` config option."""


def _config(driver: str, server: ModelServer, root: Path, tripwire: Tripwire) -> dict:
    if driver in ACP_MODELS:
        entry = {"driver": driver, "endpoint": server.url, "api_key": KEY, "model": ACP_MODELS[driver]}
    elif driver == "claude":
        _, argv = require_peer("claude")
        offline = build_offline_env("claude", root / "env", model_url=server.url, proxy_url=tripwire.url)
        entry = {"driver": "claude", "binary": argv[0], "model": offline.model, "env": offline.env}
    else:
        offline = build_offline_env(driver, root / "env", model_url=server.url, proxy_url=tripwire.url)
        # The proxies, and (opencode) the closed package registry its background plugin install meets.
        proxies = {k: v for k, v in offline.env.items() if k.upper().endswith(("_PROXY", "_REGISTRY"))}
        keys = offline_config(server.url) if driver == "codex" else {
            "endpoint": server.url, "api_key": KEY, "model": "mock-model"}
        entry = {"driver": driver, **keys, "env": proxies}
    return {"instances": {"agent": entry}}


@contextlib.contextmanager
def _offline_runtime(driver: str, tmp_path: Path, config, script=None, **server_options):
    """A workspace holding ``red.png``, the model server (``script``, ``server_options``) and a
    Runtime on ``config(server, tripwire)``, behind the tripwire proxy; fails if the agent tried
    to leave 127.0.0.1."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "red.png").write_bytes(PNG)
    tripwire = Tripwire()
    saved = _proxied(tripwire)
    try:
        with ModelServer(script, workspace=workspace, log_path=tmp_path / "model-requests.jsonl",
                         **server_options) as server:
            with Runtime.open(config(server, tripwire), state_dir=tmp_path / "state") as rt:
                yield rt, server, workspace
    finally:
        _restore(saved)
        tripwire.close()
    assert not tripwire.hits, f"{driver} tried to leave 127.0.0.1: {tripwire.hits}"


@pytest.fixture(params=DRIVERS)
def live(request, tmp_path):
    driver = request.param
    require_peer(driver)
    with _offline_runtime(driver, tmp_path, lambda server, tw: _config(driver, server, tmp_path, tw)) as (
            rt, server, workspace):
        yield driver, rt, server, workspace


def test_catalog_model_check_and_a_png_reaching_the_model(live):
    driver, rt, server, workspace = live
    models = rt.models("agent", timeout=180)
    print(f"{driver}: {len(models)} models: {[m.id for m in models][:8]}")
    if driver in NO_CATALOG:
        assert models == []
    else:
        assert models, f"{driver} reported no model catalog"
        assert len({m.id for m in models}) == len(models) and sum(m.is_default for m in models) <= 1
        first = models[0].id
        # The catalog is advice: the name reaches the agent (which alone may refuse it), and a
        # runtime.warning names the close matches.
        with rt.subscribe(thread_id="t-advice", types=["runtime.warning"]) as sub:
            with contextlib.suppress(PaddockError):
                rt.start_session("t-advice", instance="agent", cwd=str(workspace), model=first[:-1] + "#", timeout=120)
            advice = sub.get(timeout=30)
        assert advice is not None and advice.code == "model.not_in_catalog", advice
        assert "did you mean" in advice.message and repr(first) in advice.message
        with contextlib.suppress(PaddockError):
            rt.stop_session("t-advice")

    rt.start_session("t1", instance="agent", cwd=str(workspace), runtime_mode="full-access", timeout=120)
    caps = [i for i in rt.instances() if i.id == "agent"][0].capabilities
    assert "image" in caps.turns.attachments, f"{driver} declares {caps.turns.attachments}"
    _, events = run_turn(rt, "t1", "what colour is it? SCENARIO:text", timeout=120,
                         attachments=[ImageAttachment(path="red.png", mime_type="image/png")])
    assert events[-1].type == "turn.completed" and events[-1].state == "completed", events[-1]
    turns = [r for r in server.requests if r.kind in ("turn", "follow_up") and r.images]
    assert turns and turns[-1].images.count("image/png") == 1, [(r.kind, r.images) for r in server.requests]


def test_qwen_sends_the_png_to_its_default_model_too(tmp_path):
    """With no ``model`` key qwen picks its own default model, which no settings entry names:
    the image still reaches the model server as an image part, never as qwen's
    ``Unsupported image file`` text."""
    require_peer("qwen")

    def config(server, _tripwire):
        return {"instances": {"agent": {"driver": "qwen", "endpoint": server.url, "api_key": KEY}}}

    with _offline_runtime("qwen", tmp_path, config) as (rt, server, workspace):
        rt.start_session("t1", instance="agent", cwd=str(workspace), runtime_mode="full-access", timeout=120)
        _, events = run_turn(rt, "t1", "what colour is it? SCENARIO:text", timeout=120,
                             attachments=[ImageAttachment(path="red.png", mime_type="image/png")])
    assert events[-1].state == "completed", events[-1]
    [turn] = [r for r in server.requests if r.kind == "turn"]
    assert turn.model != ACP_MODELS["qwen"] and turn.images == ("image/png",), (turn.model, turn.images)
    assert "Unsupported image file" not in str(turn.body)


FILE_KINDS = {"codex": (), "claude": ()}
"""Drivers that take no file attachment; every other one takes files (OpenCode file parts, ACP
embedded resources)."""

FILE_BY_REFERENCE = {"copilot"}
"""Copilot turns an embedded resource with a file URI into a ``<tagged_files>`` entry naming the
path and its line count; its model reads the file with a tool."""


def test_a_text_file_reaches_the_model_or_is_refused_before_the_process(live):
    driver, rt, server, workspace = live
    (workspace / "notes.txt").write_text("the secret word is PELICAN\n")
    rt.start_session("t1", instance="agent", cwd=str(workspace), runtime_mode="full-access", timeout=120)
    caps = [i for i in rt.instances() if i.id == "agent"][0].capabilities
    attachment = FileAttachment(path="notes.txt")
    if driver in FILE_KINDS:
        assert "file" not in caps.turns.attachments
        before = len(server.requests)
        with pytest.raises(CapabilityUnsupportedError) as err:
            rt.send_turn("t1", "read it SCENARIO:text", attachments=[attachment])
        assert err.value.capability == "turns.attachments"
        assert rt.read_thread("t1").turns == () and len(server.requests) == before
        return
    assert "file" in caps.turns.attachments
    _, events = run_turn(rt, "t1", "read it SCENARIO:text", timeout=120, attachments=[attachment])
    assert events[-1].state == "completed", events[-1]
    bodies = [str(r.body) for r in server.requests if r.kind == "turn"]
    if driver in FILE_BY_REFERENCE:
        assert any(f"{workspace / 'notes.txt'} (2 lines)" in b for b in bodies)
    else:
        assert any("PELICAN" in b for b in bodies)


def test_codex_steers_an_image_into_the_running_turn(tmp_path):
    """``turns.steer_attachments`` on codex: ``turn/steer`` carries a ``localImage`` into the
    running turn, and the turn's next model request holds it as an image part."""
    from paddock.testing import Text

    require_peer("codex")
    script = {"scenarios": {"slow": [Text(text="".join(f"tick{i} " for i in range(40)), chunks=40, delay=0.1)]}}
    with _offline_runtime("codex", tmp_path, lambda server, tw: _config("codex", server, tmp_path, tw),
                          script) as (rt, server, workspace):
        rt.start_session("t1", instance="agent", cwd=str(workspace), runtime_mode="full-access")
        caps = [i for i in rt.instances() if i.id == "agent"][0].capabilities
        assert caps.turns.steer and caps.turns.steer_attachments
        with rt.subscribe(thread_id="t1", types=("turn.completed",)) as sub:
            turn = rt.send_turn("t1", "count SCENARIO:slow")
            server.wait_stream_started(timeout=60)
            steered = rt.steer_turn("t1", "and look at this SCENARIO:text",
                                    attachments=[ImageAttachment(path="red.png", mime_type="image/png")])
            assert steered.turn_id == turn.turn_id
            done = sub.get(timeout=90)
        assert done is not None and done.turn_id == turn.turn_id and done.state == "completed", done
    with_image = [r for r in server.requests if r.images]
    assert with_image and with_image[0].images == ("image/png",), [(r.kind, r.prompt_text, r.images) for r in server.requests]
    assert "and look at this" in str(with_image[0].body)  # Codex wraps the image in <image> text parts


REROUTE = {"claude-haiku-4-5-20251001": "claude-opus-4-1", "claude-haiku-4-5": "claude-opus-4-1"}
"""Asked (what the ``haiku`` alias resolves to) -> the model the scripted server answers with."""


def test_claude_publishes_model_rerouted_when_another_model_answers(tmp_path):
    """The issue's case: a turn asked for one model and another answered. Claude Code names the
    answering model in each ``assistant`` message; the driver publishes ``model.rerouted``."""
    require_peer("claude")
    with _offline_runtime("claude", tmp_path, lambda server, tw: _config("claude", server, tmp_path, tw),
                          answer_models=REROUTE) as (rt, server, workspace):
        rt.start_session("t1", instance="agent", cwd=str(workspace), runtime_mode="full-access")
        _, plain = run_turn(rt, "t1", "hello SCENARIO:text", timeout=120)
        assert not [e for e in plain if e.type == "model.rerouted"]
        _, events = run_turn(rt, "t1", "again SCENARIO:text", timeout=120, model="haiku")
    assert any(r.model in REROUTE for r in server.requests if r.kind == "turn")
    rerouted = [e for e in events if e.type == "model.rerouted"]
    assert [(e.from_model, e.to_model) for e in rerouted] == [("haiku", "claude-opus-4-1")], rerouted
    assert events[-1].state == "completed"
