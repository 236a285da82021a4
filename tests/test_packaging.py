"""Packaging: one installed import name, ``paddock``, in the wheel and in the editable install.

The wheel test builds the real wheel, installs it into a fresh venv and runs a local turn from a
host directory that holds its own ``runtime``, ``drivers``, ``actors`` and ``supervisors``
packages: the names a host may already use must keep meaning the host's own code.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"runtime": "paddock", "supervisors": "paddock.supervisors", "actors": "paddock.actors", "drivers": "paddock.drivers"}

HOST_SCRIPT = """
import sys
import drivers, runtime, actors, supervisors   # the host's own packages
assert drivers.MINE and runtime.MINE and actors.MINE and supervisors.MINE
from paddock import Runtime
import paddock
assert "site-packages" in paddock.__file__, paddock.__file__
with Runtime.open(None, state_dir=sys.argv[1]) as rt:
    rt.start_session("t1", instance="local", cwd=sys.argv[2])
    with rt.subscribe(thread_id="t1") as events:
        turn = rt.send_turn("t1", "@reply hello from the wheel", timeout=30)
        text = ""
        for event in events:
            if event.type == "content.delta":
                text += event.delta
            elif event.type == "turn.completed" and event.turn_id == turn.turn_id:
                assert event.state == "completed", event
                break
assert drivers.MINE and sys.modules["drivers"] is drivers
print("TURN:" + text)
"""


def _packages_in_folders() -> set[str]:
    found = set()
    for folder, name in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([name, *rel]))
    return found


def test_pyproject_lists_every_package_folder():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        setuptools = tomllib.load(fh)["tool"]["setuptools"]
    assert set(setuptools["packages"]) == _packages_in_folders()
    assert setuptools["package-dir"] == {v: k for k, v in FOLDERS.items() if v != "paddock"} | {"paddock": "runtime"}


def test_importing_the_contract_loads_neither_the_facade_nor_pykka_nor_the_drivers():
    code = (
        "import sys, paddock.contract\n"
        "bad = [m for m in ('pykka', 'paddock._runtime', 'paddock.drivers', 'paddock.actors', 'psutil') if m in sys.modules]\n"
        "print(bad)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_editable_install_maps_the_folders_under_paddock():
    code = (
        "import paddock, paddock.actors, paddock.drivers, paddock.supervisors, paddock.contract, paddock.testing\n"
        "print(paddock.__file__, paddock.actors.__file__, paddock.drivers.__file__, paddock.supervisors.__file__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, cwd="/")
    assert done.returncode == 0, done.stderr
    files = done.stdout.split()
    assert [Path(f).parent.name for f in files] == ["runtime", "actors", "drivers", "supervisors"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wheel_installs_one_name_and_runs_a_turn_beside_a_hosts_own_packages(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    [wheel] = dist.glob("agent_paddock-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        [top_level] = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert zf.read(top_level).decode().split() == ["paddock"]
        assert {n.split("/", 1)[0] for n in names} == {"paddock", top_level.split("/", 1)[0]}
        assert "paddock/drivers/peers.toml" in names and "paddock/py.typed" in names
        # Every module of the repository's package folders is in the wheel, under its new name.
        for folder, name in FOLDERS.items():
            for path in (ROOT / folder).rglob("*.py"):
                rel = path.relative_to(ROOT / folder)
                assert "/".join([*name.split("."), *rel.parts]) in names, rel

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    install = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stderr

    host = tmp_path / "host"
    for name in FOLDERS:
        (host / name).mkdir(parents=True)
        (host / name / "__init__.py").write_text("MINE = True\n")
    (host / "app.py").write_text(textwrap.dedent(HOST_SCRIPT))
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    done = subprocess.run(
        [str(py), "app.py", str(tmp_path / "state"), str(work)],
        cwd=host, capture_output=True, text=True, timeout=120, env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "TURN:hello from the wheel" in done.stdout
