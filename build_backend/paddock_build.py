"""The build backend: setuptools' own, plus a tree type checkers can read in editable installs.

``paddock`` maps several repository folders onto one import name (``package-dir`` in
pyproject.toml), so setuptools' editable install imports it through an import hook
(a ``sys.meta_path`` finder). Python follows the hook; static type checkers (mypy, pyright) read
only the paths in ``.pth`` files and report ``import-not-found`` for ``paddock``.

``build_editable`` therefore adds a second ``.pth`` naming ``build/__editable__.paddock-typing``,
which holds ``paddock-stubs/``: a PEP 561 stub-only package laid out as the wheel lays out
``paddock`` (symlinks to ``runtime/``'s entries, ``__init__.py`` as ``__init__.pyi``, and the
``actors``, ``drivers`` and ``supervisors`` folders). Python never imports it (``-stubs`` is no
identifier), so the import hook still serves every import and new files; a type checker reads the
sources through it. A new top-level module of ``runtime/`` reaches the type checker after the next
``pip install -e``. Where symlinks cannot be made, the tree is left out.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 (every other hook is setuptools' own)

ROOT = Path(__file__).resolve().parents[1]
MOUNTS = ("actors", "drivers", "supervisors")
TREE = ROOT / "build" / "__editable__.paddock-typing"


def build_editable(wheel_directory: str, config_settings: dict[str, object] | None = None,
                   metadata_directory: str | None = None) -> str:
    name = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    tree = _typing_tree()
    if tree is not None:
        _add_pth(Path(wheel_directory) / name, "__editable__.paddock-typing.pth", f"{tree}\n")
    return name


def _typing_tree() -> Path | None:
    """Lay out ``TREE/paddock-stubs`` as symlinks into the repository; ``None`` where symlinks
    cannot be made."""
    stubs = TREE / "paddock-stubs"
    shutil.rmtree(TREE, ignore_errors=True)
    try:
        stubs.mkdir(parents=True)
        for entry in sorted((ROOT / "runtime").iterdir()):
            if entry.name != "__pycache__":
                (stubs / ("__init__.pyi" if entry.name == "__init__.py" else entry.name)).symlink_to(entry)
        for folder in MOUNTS:
            (stubs / folder).symlink_to(ROOT / folder)
    except OSError:
        shutil.rmtree(TREE, ignore_errors=True)
        return None
    return TREE


def _add_pth(wheel: Path, name: str, text: str) -> None:
    """Add the file ``name`` to the wheel's root and its ``RECORD``."""
    data = text.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    staged = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(staged, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            body = src.read(item)
            if item.filename.endswith(".dist-info/RECORD"):
                body += f"{name},sha256={digest},{len(data)}\n".encode()
            dst.writestr(item, body)
        dst.writestr(name, data)
    os.replace(staged, wheel)
