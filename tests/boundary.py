"""The import-boundary checker behind ``tests/test_boundary.py``.

Rules (docs/architecture.md, "Layout, import names and the one-way rule"):
- everything imports under the one name ``paddock``; a bare import of a repository folder
  (``runtime``, ``actors``, ``drivers``, ``supervisors``) would load a second copy of a module, and
  is refused everywhere: in the packages, the tests, the examples and the benchmarks;
- layers import one way: ``paddock.contract`` <- ``paddock.supervisors`` <- ``paddock.actors`` <-
  ``paddock.drivers`` <- ``paddock`` (facade, CLI, server, ``paddock.testing``); a module never
  imports a layer above its own;
- ``paddock.contract`` imports only the standard library and msgspec;
- inside ``paddock.actors`` the four rooms import one way: ``execution`` <- ``events``,
  ``transports`` <- ``sessions`` (``events`` and ``transports`` never import each other);
- inside ``paddock`` (the facade layer) the private rooms import one way:
  ``_state``, ``_observe`` <- ``_instances``, ``_workspaces`` <- ``_operations`` <- ``_services`` <- ``_threads`` <-
  the facade (``Runtime``, ``paddock.aio``, the client, the CLI, the server, ``paddock.testing``);
  a room never imports the facade or a room above it, nor ``paddock`` itself;
- a driver never imports another driver, except that ACP flavors import ``paddock.drivers.acp`` and
  any driver may use the MCP relay (``paddock.drivers.mcp_relay``);
- process spawning (``subprocess``, ``pty``, ``multiprocessing``, ``os.fork``, ``os.exec*``,
  ``os.spawn*``, ``os.posix_spawn*``, ``os.system``, ``os.popen``) happens only in
  ``paddock.supervisors`` and ``paddock.actors``.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Repository folder -> the import name it installs as (pyproject's package-dir).
FOLDERS = {"runtime": "paddock", "supervisors": "paddock.supervisors", "actors": "paddock.actors", "drivers": "paddock.drivers"}
OLD_NAMES = frozenset(FOLDERS)
LAYERS = {"paddock.contract": 0, "paddock.supervisors": 1, "paddock.actors": 2, "paddock.drivers": 3, "paddock": 4}
SPAWN_MODULES = {"subprocess", "pty", "multiprocessing", "_posixsubprocess"}
SPAWN_OS_PREFIXES = ("fork", "exec", "spawn", "posix_spawn", "system", "popen", "forkpty")
SPAWN_ALLOWED_LAYERS = {"paddock.supervisors", "paddock.actors"}
# Separate programs that the runtime starts as children, not runtime code: they may spawn
# (the local agent runs `@run` commands and `@spawn` grandchildren like any real agent does; the
# MCP relay, run by the agent in place of a server, starts the real server).
SPAWN_EXEMPT_PACKAGES = ("paddock.drivers.local.agent", "paddock.drivers.mcp_relay._relay")
# Shared by drivers, not drivers themselves: the ACP adapter (its flavors) and the MCP relay.
SHARED_DRIVER_PACKAGES = {"paddock.drivers.acp", "paddock.drivers.mcp_relay"}
# The rooms of paddock.actors, and which other rooms each may import.
ACTOR_ROOMS = {
    "paddock.actors.execution": frozenset(),
    "paddock.actors.events": frozenset({"paddock.actors.execution"}),
    "paddock.actors.transports": frozenset({"paddock.actors.execution"}),
    "paddock.actors.sessions": frozenset({"paddock.actors.execution", "paddock.actors.events", "paddock.actors.transports"}),
}
# The rooms of the facade layer (runtime/'s private packages) by rank: a room imports only rooms
# of a lower rank (``_state`` and ``_observe`` share the bottom and never import each other, nor
# do ``_instances`` and ``_workspaces``, which share the next rank).
FACADE_ROOMS = {
    "paddock._state": 0,
    "paddock._observe": 0,
    "paddock._instances": 1,
    "paddock._workspaces": 1,
    "paddock._operations": 2,
    "paddock._services": 3,
    "paddock._threads": 4,
}
CONTRACT_THIRD_PARTY = {"msgspec"}
# Folders that are not installed but must still use the installed names.
OTHER_FOLDERS = ("tests", "examples", "benchmarks")


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _layer(module: str) -> str | None:
    for layer in sorted(LAYERS, key=len, reverse=True):
        if _within(module, layer):
            return layer
    return None


def _room(module: str) -> str | None:
    return next((room for room in ACTOR_ROOMS if _within(module, room)), None)


def _facade_room(module: str) -> str | None:
    return next((room for room in FACADE_ROOMS if _within(module, room)), None)


def _facade_rule(module: str, full: str, target: str) -> str | None:
    """Why ``module`` (in a room of the facade layer) may not import ``full``, else ``None``."""
    src = _facade_room(module)
    if src is None or _layer(full) != "paddock" or full == "paddock.__version__":
        return None  # the lower layers are the layer rule's business
    dst = _facade_room(full) or _facade_room(target)
    if dst is None:
        return f"{src} may not import {full!r} from the facade"
    if dst != src and FACADE_ROOMS[dst] >= FACADE_ROOMS[src]:
        return f"{src} may not import {full!r} from the room {dst} (rooms import one way)"
    return None


def _driver_of(module: str) -> str | None:
    """The driver package a module belongs to; ``None`` for the registry (``paddock.drivers`` and
    its private ``paddock.drivers._*`` modules), which every driver may use."""
    parts = module.split(".")
    if parts[:2] != ["paddock", "drivers"] or len(parts) < 3 or parts[2].startswith("_"):
        return None
    return ".".join(parts[:3])


def _module_name(root: Path, path: Path) -> tuple[str, bool]:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    if parts and parts[0] in FOLDERS:
        parts = FOLDERS[parts[0]].split(".") + parts[1:]
    return ".".join(parts), is_package


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str, str | None, int]]:
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None, 0
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                yield node.lineno, target, alias.name, node.level


def _old_name(target: str, level: int) -> str | None:
    first = target.split(".", 1)[0]
    return first if level == 0 and first in OLD_NAMES else None


def check_tree(root: Path) -> list[Violation]:
    """Return every violation of the rules above in the packages (and the other folders) under
    ``root``."""
    root = Path(root)
    stdlib = set(sys.stdlib_module_names)
    violations: list[Violation] = []
    for top in OTHER_FOLDERS:
        for path in sorted((root / top).rglob("*.py")) if (root / top).is_dir() else ():
            rel = str(path.relative_to(root))
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            for line, target, _name, level in _imports(tree, rel.replace("/", ".")[:-3], False):
                old = _old_name(target, level)
                if old:
                    violations.append(Violation(rel, line, f"bare import of {target!r}: use {FOLDERS[old]!r}"))
    for top in FOLDERS:
        for path in sorted((root / top).rglob("*.py")):
            module, is_package = _module_name(root, path)
            layer = _layer(module)
            assert layer is not None
            rel = str(path.relative_to(root))
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
            may_spawn = layer in SPAWN_ALLOWED_LAYERS or any(_within(module, p) for p in SPAWN_EXEMPT_PACKAGES)
            for line, target, name, level in _imports(tree, module, is_package):
                old = _old_name(target, level)
                if old:
                    violations.append(Violation(rel, line, f"bare import of {target!r}: use {FOLDERS[old]!r}"))
                    continue
                full = f"{target}.{name}" if name else target
                target_layer = _layer(full) or _layer(target)
                if layer == "paddock.contract":
                    first = target.split(".", 1)[0]
                    if target_layer != "paddock.contract" and first not in stdlib | CONTRACT_THIRD_PARTY:
                        violations.append(Violation(rel, line, f"paddock.contract must stay pure but imports {full!r}"))
                        continue
                if target_layer and LAYERS[target_layer] > LAYERS[layer]:
                    violations.append(
                        Violation(rel, line, f"{layer} may not import {full!r} from the higher layer {target_layer}")
                    )
                src_room, dst_room = _room(module), _room(full) or _room(target)
                if src_room and dst_room and dst_room != src_room and dst_room not in ACTOR_ROOMS[src_room]:
                    violations.append(Violation(rel, line, f"{src_room} may not import {full!r} from {dst_room}"))
                if src_room and target == "paddock.actors":
                    violations.append(Violation(rel, line, f"{src_room} imports the {name!r} of another room through "
                                                           "paddock.actors: import it from its room"))
                facade = _facade_rule(module, full, target)
                if facade:
                    violations.append(Violation(rel, line, facade))
                if target == "paddock.drivers":  # `from paddock.drivers import X`: a driver, or a registry name
                    dst_driver = f"paddock.drivers.{name}" if (root / "drivers" / str(name)).is_dir() else None
                else:
                    dst_driver = _driver_of(target)
                src_driver = _driver_of(module)
                if src_driver and dst_driver and src_driver != dst_driver and dst_driver not in SHARED_DRIVER_PACKAGES:
                    violations.append(Violation(rel, line, f"driver {src_driver} may not import another driver: {full!r}"))
                if not may_spawn:
                    first = target.split(".", 1)[0]
                    if first in SPAWN_MODULES or (name and name in SPAWN_MODULES and not target):
                        violations.append(Violation(rel, line, f"process spawning ({full!r}) belongs in paddock.supervisors or paddock.actors"))
                    elif target == "os" and name and name.startswith(SPAWN_OS_PREFIXES):
                        violations.append(Violation(rel, line, f"process spawning (os.{name}) belongs in paddock.supervisors or paddock.actors"))
            if not may_spawn:
                for node in ast.walk(tree):
                    if (
                        isinstance(node, ast.Attribute)
                        and isinstance(node.value, ast.Name)
                        and node.value.id == "os"
                        and node.attr.startswith(SPAWN_OS_PREFIXES)
                    ):
                        violations.append(
                            Violation(rel, node.lineno, f"process spawning (os.{node.attr}) belongs in paddock.supervisors or paddock.actors")
                        )
    return violations
