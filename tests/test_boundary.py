from __future__ import annotations

import textwrap
from pathlib import Path

from tests.boundary import check_tree

ROOT = Path(__file__).resolve().parents[1]


def test_repository_keeps_the_one_way_import_rule():
    violations = check_tree(ROOT)
    assert not violations, "import boundary violations:\n" + "\n".join(map(str, violations))


def _plant(root: Path, files: dict[str, str]) -> None:
    for top in ("runtime/contract", "supervisors", "actors", "drivers/acp", "drivers/x", "tests"):
        (root / top).mkdir(parents=True, exist_ok=True)
        (root / top / "__init__.py").write_text("")
    for rel, text in files.items():
        (root / rel).write_text(textwrap.dedent(text))


def test_checker_catches_an_upward_import(tmp_path):
    _plant(tmp_path, {"supervisors/_bad.py": "from paddock.actors import ProcessActor\n"})
    [v] = check_tree(tmp_path)
    assert v.path == "supervisors/_bad.py" and v.line == 1
    assert "'paddock.actors.ProcessActor'" in str(v) and "higher layer paddock.actors" in str(v)


def test_checker_catches_a_relative_upward_import_and_an_impure_contract(tmp_path):
    _plant(tmp_path, {"runtime/contract/_x.py": "import psutil\nfrom .. import _runtime\n"})
    messages = sorted(str(v) for v in check_tree(tmp_path))
    assert messages[0].startswith("runtime/contract/_x.py:1: paddock.contract must stay pure")
    assert messages[1].startswith("runtime/contract/_x.py:2:")


def test_checker_catches_the_facade_imported_from_a_driver(tmp_path):
    _plant(tmp_path, {"drivers/x/_a.py": "from paddock import Runtime\nfrom paddock.testing import ModelServer\n"})
    found = [str(v) for v in check_tree(tmp_path)]
    assert len(found) == 2 and all("higher layer paddock" in v for v in found)


def test_checker_catches_spawning_outside_supervisors_and_actors(tmp_path):
    _plant(
        tmp_path,
        {
            "drivers/x/_spawn.py": "import subprocess\nimport os\nos.execvp('a', ['a'])\n",
            "actors/_ok.py": "import subprocess\n",
        },
    )
    found = [str(v) for v in check_tree(tmp_path)]
    assert found == [
        "drivers/x/_spawn.py:1: process spawning ('subprocess') belongs in paddock.supervisors or paddock.actors",
        "drivers/x/_spawn.py:3: process spawning (os.execvp) belongs in paddock.supervisors or paddock.actors",
    ]


def test_checker_catches_one_driver_importing_another(tmp_path):
    _plant(
        tmp_path,
        {
            "drivers/x/_a.py": "from paddock.drivers.acp import flavor\nfrom paddock.drivers.codex import y\n"
            "from paddock.drivers._registry import DriverSpec\nfrom paddock.drivers import InstanceContext\n",
        },
    )
    [v] = check_tree(tmp_path)
    assert "driver paddock.drivers.x may not import another driver: 'paddock.drivers.codex.y'" in str(v)


def test_checker_refuses_the_old_bare_names_everywhere(tmp_path):
    _plant(
        tmp_path,
        {
            "actors/_a.py": "from supervisors import Scope\n",
            "drivers/x/_b.py": "import drivers.acp\n",
            "tests/test_c.py": "from runtime import Runtime\nfrom actors._lines import x\nfrom .helpers import y\n",
        },
    )
    found = sorted(str(v) for v in check_tree(tmp_path))
    assert found == [
        "actors/_a.py:1: bare import of 'supervisors': use 'paddock.supervisors'",
        "drivers/x/_b.py:1: bare import of 'drivers.acp': use 'paddock.drivers'",
        "tests/test_c.py:1: bare import of 'runtime': use 'paddock'",
        "tests/test_c.py:2: bare import of 'actors._lines': use 'paddock.actors'",
    ]


def test_checker_keeps_the_rooms_of_actors_one_way(tmp_path):
    _plant(tmp_path, {})
    for room in ("execution", "events", "transports", "sessions"):
        (tmp_path / "actors" / room).mkdir()
        (tmp_path / "actors" / room / "__init__.py").write_text("")
    (tmp_path / "actors" / "events" / "_a.py").write_text("from ..transports import ProcessActor\n")
    (tmp_path / "actors" / "execution" / "_b.py").write_text("from paddock.actors.sessions import SessionActor\n")
    (tmp_path / "actors" / "sessions" / "_c.py").write_text("from ..events import EventHub\nfrom paddock.actors import Open\n")
    found = sorted(str(v) for v in check_tree(tmp_path))
    assert len(found) == 3, found
    assert found[0].startswith("actors/events/_a.py:1: paddock.actors.events may not import 'paddock.actors.transports.ProcessActor'")
    assert found[1].startswith("actors/execution/_b.py:1: paddock.actors.execution may not import")
    assert found[2].startswith("actors/sessions/_c.py:2: paddock.actors.sessions imports the 'Open' of another room")


def test_checker_keeps_the_rooms_of_the_facade_one_way(tmp_path):
    _plant(tmp_path, {})
    for room in ("_state", "_instances", "_operations", "_threads"):
        (tmp_path / "runtime" / room).mkdir(parents=True, exist_ok=True)
        (tmp_path / "runtime" / room / "__init__.py").write_text("")
    (tmp_path / "runtime" / "_state" / "_a.py").write_text("from paddock._instances._table import InstanceTable\n")
    (tmp_path / "runtime" / "_instances" / "_b.py").write_text(
        "from paddock._state._dir import private_dir\nfrom paddock import Runtime\n")
    (tmp_path / "runtime" / "_operations" / "_c.py").write_text(
        "from .._threads import _directory\nfrom paddock._runtime import RuntimeAPI\nfrom paddock import __version__\n")
    found = sorted(str(v) for v in check_tree(tmp_path))
    assert len(found) == 4, found
    assert found[0].startswith("runtime/_instances/_b.py:2: paddock._instances may not import 'paddock.Runtime' from the facade")
    assert found[1].startswith("runtime/_operations/_c.py:1: paddock._operations may not import 'paddock._threads._directory'")
    assert found[2].startswith("runtime/_operations/_c.py:2: paddock._operations may not import 'paddock._runtime.RuntimeAPI' from the facade")
    assert found[3].startswith("runtime/_state/_a.py:1: paddock._state may not import 'paddock._instances._table.InstanceTable'")
