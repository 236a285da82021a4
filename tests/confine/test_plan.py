"""The runtime's side of confinement: the simulated kernel without Landlock (``"required"``
refuses, ``"workspace"`` warns at every start), the roots check of a shared process, and what
``session.started`` and ``InstanceInfo`` report."""

from __future__ import annotations

import sys

import pytest

from paddock import Runtime
from paddock.contract import InstanceNotFoundError, ValidationError
from paddock.supervisors import landlock_abi, set_landlock_probe

from ..runtime.conftest import run_turn

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def no_landlock():
    set_landlock_probe(lambda: 0)
    yield
    set_landlock_probe(None)


def test_required_without_landlock_makes_the_instance_unavailable(tmp_path, no_landlock) -> None:
    config = {"instances": {"strict": {"driver": "local", "confinement": "required"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        info = rt.instances()[0]
        assert info.status == "unavailable"
        assert "confinement" in (info.reason or "") and "Landlock" in (info.reason or "")
        with pytest.raises(InstanceNotFoundError, match="Landlock"):
            rt.start_session("t1", instance="strict", cwd=tmp_path)


def test_workspace_without_landlock_warns_at_every_start(tmp_path, no_landlock) -> None:
    config = {"instances": {"lax": {"driver": "local"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        info = rt.instances()[0]
        assert info.status == "available"
        assert info.confinement is not None and not info.confinement.confined
        assert "Landlock" in (info.confinement.reason or "")
        for thread in ("t1", "t2"):
            with rt.subscribe(thread_id=thread) as sub:
                rt.start_session(thread, instance="lax", cwd=tmp_path, runtime_mode="full-access")
                seen = []
                while not any(e.type == "session.started" for e in seen):
                    event = sub.get(timeout=20)
                    assert event is not None, [e.type for e in seen]
                    seen.append(event)
            warnings = [e for e in seen if e.type == "runtime.warning" and e.code == "confinement.unavailable"]
            assert len(warnings) == 1, [e.type for e in seen]
            started = next(e for e in seen if e.type == "session.started")
            assert started.confinement is not None and not started.confinement.confined


@pytest.mark.skipif(not sys.platform.startswith("linux") or landlock_abi() < 1, reason="needs Landlock")
def test_a_shared_process_refuses_a_cwd_outside_its_roots(tmp_path) -> None:
    inside = tmp_path / "project"
    inside.mkdir()
    config = {"instances": {"a": {"driver": "local", "roots": [str(inside)]}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        with pytest.raises(ValidationError, match="roots"):
            rt.start_session("t1", instance="a", cwd=tmp_path)
        with pytest.raises(ValidationError, match="never"):
            rt.start_session("t2", instance="a", cwd=tmp_path / "state")
        with rt.subscribe(thread_id="t3") as sub:
            rt.start_session("t3", instance="a", cwd=inside, runtime_mode="full-access")
            event = sub.get(timeout=20)
            while event is not None and event.type != "session.started":
                event = sub.get(timeout=20)
        assert event is not None and event.confinement is not None
        assert event.confinement.confined and event.confinement.landlock_abi == landlock_abi()
        assert event.confinement.roots == (str(inside.resolve()),)
        assert event.confinement.network == "any"
        _, events = run_turn(rt, "t3", f"@run echo hi > {tmp_path / 'outside'}; echo rc=$?")
        assert "Permission denied" in "".join(e.delta for e in events if e.type == "content.delta")


def test_none_is_not_confined_and_says_so(tmp_path) -> None:
    config = {"instances": {"a": {"driver": "local", "confinement": "none"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        info = rt.instances()[0]
        assert info.confinement is not None and info.confinement.setting == "none"
        assert not info.confinement.confined
        rt.start_session("t1", instance="a", cwd="/", runtime_mode="full-access")  # no roots to check


def test_doctor_says_whether_the_agents_are_confined(tmp_path, no_landlock) -> None:
    config = {"instances": {"lax": {"driver": "local"}, "off": {"driver": "local", "confinement": "none"}}}
    with Runtime.open(config, state_dir=tmp_path / "state") as rt:
        reports = {r["id"]: r for r in rt.diagnose()}
    assert reports["lax"]["confinement"].startswith("NOT confined: the kernel offers no Landlock")
    assert reports["off"]["confinement"].startswith('off (confinement = "none")')
