"""Attachments and catalogs through every surface: ``paddock serve`` with ``RemoteRuntime`` (image
bytes travel base64 in JSON; paths are the server's) and ``AsyncRuntime``."""

from __future__ import annotations

import asyncio

import pytest

from paddock.aio import AsyncRuntime
from paddock.contract import CapabilityUnsupportedError, FileAttachment, ImageAttachment, ValidationError

from tests.server.conftest import make_server, short_root  # noqa: F401  (fixtures)

from .conftest import PNG, run_turn, text_of

pytestmark = pytest.mark.timeout(120)


def test_remote_runtime_sends_image_bytes_and_server_side_paths(make_server):
    served = make_server("unix")
    (served.workspace / "red.png").write_bytes(PNG)
    remote = served.remote()
    try:
        remote.start_session("t1", instance="local-a", cwd=served.workspace)
        _, events = run_turn(remote, "t1", "@reply over http", attachments=[
            ImageAttachment(data=PNG, mime_type="image/png"), ImageAttachment(path="red.png", mime_type="image/png"),
            FileAttachment(text="hi", name="a.txt")])
        assert text_of(events) == (f"received: image image/png {len(PNG)} bytes; image image/png {len(PNG)} bytes; "
                                   "resource a.txt text/plain 2 chars\nover http")
        with pytest.raises(ValidationError, match="outside the session's workspace"):
            remote.send_turn("t1", "@reply no", attachments=[ImageAttachment(path="/etc/hostname", mime_type="image/png")])
        assert remote.models("local-a") == []  # the local agent offers no model option here
    finally:
        remote.close()


def test_async_runtime_models_and_attachments(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    config = {"instances": {"loc": {"driver": "local", "env": {"PADDOCK_LOCAL_MODELS": "m-one,m-two",
                                                                "PADDOCK_LOCAL_NO_ATTACHMENTS": "1"}}}}

    async def main() -> None:
        async with await AsyncRuntime.open(config, state_dir=tmp_path / "state") as rt:
            assert [m.id for m in await rt.models("loc")] == ["m-one", "m-two"]
            # The catalog is advice: a name it lacks runs, with a warning naming the close match.
            warnings = rt.subscribe(thread_id="t1", types=["runtime.warning"])
            await rt.start_session("t1", instance="loc", cwd=ws, model="m-tw")
            warning = await asyncio.wait_for(anext(warnings), 10)
            assert warning.code == "model.not_in_catalog" and "'m-two'" in warning.message
            await rt.start_session("t1", instance="loc", cwd=ws, model="m-two")
            with pytest.raises(CapabilityUnsupportedError):
                await rt.send_turn("t1", "@reply no", attachments=[ImageAttachment(data=PNG, mime_type="image/png")])

    asyncio.run(main())
