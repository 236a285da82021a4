"""Drivers import the registry one way: from its private modules (``paddock.drivers._registry``,
``_binary``, ``_access``), never through the ``paddock.drivers`` package, whose ``__init__``
imports every driver to build ``BUILT_IN_DRIVERS`` (that would be an import circle).

One exception: the Ray node actor (``ray/_node.py``) plays the runtime's part on its node and
looks the placed driver up in ``BUILT_IN_DRIVERS`` inside ``setup``, at call time, when every
driver module is loaded: no circle."""

import ast
from pathlib import Path

DRIVERS = Path(__file__).resolve().parents[2] / "drivers"


def test_no_driver_imports_the_drivers_package():
    offenders = []
    for path in sorted(DRIVERS.rglob("*.py")):
        if path in (DRIVERS / "__init__.py", DRIVERS / "ray" / "_node.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module == "paddock.drivers" and node.level == 0:
                offenders.append(f"{path.relative_to(DRIVERS)}:{node.lineno}")
            if isinstance(node, ast.Import) and any(a.name == "paddock.drivers" for a in node.names):
                offenders.append(f"{path.relative_to(DRIVERS)}:{node.lineno}")
    assert offenders == []


def test_claude_adapter_and_spec_form_no_circle():
    for name in ("_adapter.py", "_command.py", "_link.py", "_messages.py", "_session.py"):
        tree = ast.parse((DRIVERS / "claude" / name).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 1}
        assert "_spec" not in imported, name
