"""The import-boundary checker behind ``tests/test_boundary.py``.

Rules (ARCHITECTURE.md, "Layout and the one-way import rule"):
- layers import one way: ``runtime.contract`` <- ``supervisors`` <- ``actors`` <- ``drivers``
  <- ``runtime`` (facade and CLI); a module never imports a layer above its own;
- ``runtime.contract`` imports only the standard library and msgspec;
- a driver never imports another driver, except that ACP flavors import ``drivers.acp``;
- process spawning (``subprocess``, ``pty``, ``multiprocessing``, ``os.fork``, ``os.exec*``,
  ``os.spawn*``, ``os.posix_spawn*``, ``os.system``, ``os.popen``) happens only in
  ``supervisors`` and ``actors``.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

LAYERS = {"runtime.contract": 0, "supervisors": 1, "actors": 2, "drivers": 3, "runtime": 4}
SPAWN_MODULES = {"subprocess", "pty", "multiprocessing", "_posixsubprocess"}
SPAWN_OS_PREFIXES = ("fork", "exec", "spawn", "posix_spawn", "system", "popen", "forkpty")
SPAWN_ALLOWED_LAYERS = {"supervisors", "actors"}
# Separate programs that the runtime starts as children, not runtime code: they may spawn
# (the local agent runs `@run` commands and `@spawn` grandchildren like any real agent does).
SPAWN_EXEMPT_PACKAGES = ("drivers.local.agent",)
SHARED_DRIVER_PACKAGES = {"drivers.acp"}
CONTRACT_THIRD_PARTY = {"msgspec"}


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _layer(module: str) -> str | None:
    if module == "runtime.contract" or module.startswith("runtime.contract."):
        return "runtime.contract"
    top = module.split(".", 1)[0]
    return top if top in LAYERS else None


def _driver_of(module: str) -> str | None:
    """The driver package a module belongs to; ``None`` for the registry (``drivers`` and its
    private ``drivers._*`` modules), which every driver may use."""
    parts = module.split(".")
    if parts[0] != "drivers" or len(parts) < 2 or parts[1].startswith("_"):
        return None
    return ".".join(parts[:2])


def _module_name(root: Path, path: Path) -> tuple[str, bool]:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _imports(tree: ast.AST, module: str, is_package: bool):
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield node.lineno, target, alias.name


def check_tree(root: Path) -> list[Violation]:
    """Return every violation of the rules above in the packages under ``root``."""
    root = Path(root)
    stdlib = set(sys.stdlib_module_names)
    violations: list[Violation] = []
    for top in ("runtime", "supervisors", "actors", "drivers"):
        for path in sorted((root / top).rglob("*.py")):
            module, is_package = _module_name(root, path)
            layer = _layer(module)
            rel = str(path.relative_to(root))
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            may_spawn = layer in SPAWN_ALLOWED_LAYERS or any(
                module == p or module.startswith(p + ".") for p in SPAWN_EXEMPT_PACKAGES
            )
            for line, target, name in _imports(tree, module, is_package):
                full = f"{target}.{name}" if name else target
                target_layer = _layer(full) or _layer(target)
                if layer == "runtime.contract":
                    first = target.split(".", 1)[0]
                    if target_layer != "runtime.contract" and first not in stdlib | CONTRACT_THIRD_PARTY:
                        violations.append(Violation(rel, line, f"runtime.contract must stay pure but imports {full!r}"))
                        continue
                if target_layer and LAYERS[target_layer] > LAYERS[layer]:
                    violations.append(
                        Violation(rel, line, f"{layer} may not import {full!r} from the higher layer {target_layer}")
                    )
                if target == "drivers":  # `from drivers import X`: a driver package, or a registry name
                    dst_driver = f"drivers.{name}" if (root / "drivers" / str(name)).is_dir() else None
                else:
                    dst_driver = _driver_of(target)
                src_driver = _driver_of(module)
                if (
                    src_driver
                    and dst_driver
                    and src_driver != dst_driver
                    and dst_driver not in SHARED_DRIVER_PACKAGES
                ):
                    violations.append(Violation(rel, line, f"driver {src_driver} may not import another driver: {full!r}"))
                if not may_spawn:
                    first = target.split(".", 1)[0]
                    if first in SPAWN_MODULES or (name and name in SPAWN_MODULES and not target):
                        violations.append(Violation(rel, line, f"process spawning ({full!r}) belongs in supervisors/ or actors/"))
                    elif target == "os" and name and name.startswith(SPAWN_OS_PREFIXES):
                        violations.append(Violation(rel, line, f"process spawning (os.{name}) belongs in supervisors/ or actors/"))
            if not may_spawn:
                for node in ast.walk(tree):
                    if (
                        isinstance(node, ast.Attribute)
                        and isinstance(node.value, ast.Name)
                        and node.value.id == "os"
                        and node.attr.startswith(SPAWN_OS_PREFIXES)
                    ):
                        violations.append(
                            Violation(rel, node.lineno, f"process spawning (os.{node.attr}) belongs in supervisors/ or actors/")
                        )
    return violations
