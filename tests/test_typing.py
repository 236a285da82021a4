"""The package ships ``py.typed``: its annotations must hold. Runs mypy over the whole ``paddock``
package.

mypy cannot follow the editable install's import hook, so the test lays the installed layout out
as a tree of symlinks (``paddock/`` = ``runtime/``'s entries plus ``actors``, ``drivers`` and
``supervisors``) and points mypy at it (``mypy_path`` in ``[tool.mypy]``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / ".mypy_cache" / "paddock-tree"
MOUNTS = {"actors": "actors", "drivers": "drivers", "supervisors": "supervisors"}


def build_tree(root: Path = ROOT, tree: Path = TREE) -> Path:
    """Lay ``paddock/`` out under ``tree`` as symlinks into the repository; returns ``tree``."""
    if tree.exists():
        shutil.rmtree(tree)
    pkg = tree / "paddock"
    pkg.mkdir(parents=True)
    for entry in (root / "runtime").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for name, folder in MOUNTS.items():
        (pkg / name).symlink_to(root / folder)
    return tree


@pytest.mark.slow
@pytest.mark.timeout(600)  # a cold cache on a fresh CI machine takes a minute or more
def test_the_package_type_checks():
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    build_tree()
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],  # package and options: [tool.mypy]
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


if __name__ == "__main__":
    build_tree()
    sys.exit(subprocess.call([sys.executable, "-m", "mypy"], cwd=ROOT))
