"""``paddock peers``: install and locate the pinned real agent CLIs used by the live tests."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from paddock.testing import default_peers_dir, install_peer, installed_version, load_pins, peer_argv

HELP = "install (npm, cached) and locate the pinned real agent CLIs for live tests"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="peers_command", metavar="ACTION", required=True)
    for name, help_text in (
        ("install", "install the pinned CLIs that are missing (idempotent)"),
        ("list", "show each pin, whether it is installed and its command line"),
    ):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--only", action="append", metavar="NAME", help="only this peer (repeatable)")
        p.add_argument("--dir", type=Path, help="peers folder (default: $PADDOCK_PEERS_DIR, else ~/.cache/paddock/peers)")
        p.add_argument("--pins", type=Path, help="pins file (default: the shipped pins (paddock/drivers/peers.toml))")
        if name == "install":
            p.add_argument("--registry", action="append", metavar="ID",
                           help="install this ACP registry agent's npx distribution at its pinned version (repeatable)")
            p.add_argument("--registry-file", metavar="FILE_OR_URL",
                           help="registry document (default: the snapshot shipped with Paddock)")
    p = sub.add_parser("path", help="print the command line that starts one installed peer")
    p.add_argument("name")
    p.add_argument("--dir", type=Path)
    p.add_argument("--pins", type=Path)


def run(args: argparse.Namespace) -> int:
    pins = load_pins(args.pins)
    root = args.dir if args.dir else default_peers_dir()
    if args.peers_command == "path":
        peer = pins.get(args.name)
        if peer is None:
            print(f"paddock peers: no pin {args.name!r}; known: {', '.join(pins)}", file=sys.stderr)
            return 2
        argv = peer_argv(peer, root)
        if argv is None:
            print(f"{peer.name} is not installed; run: {peer.install_hint}", file=sys.stderr)
            return 1
        print(" ".join(argv))
        return 0
    if args.peers_command == "install" and args.registry:
        return _install_registry(args, root)
    only = args.only or list(pins)
    unknown = [n for n in only if n not in pins]
    if unknown:
        print(f"paddock peers: no pin {', '.join(unknown)}; known: {', '.join(pins)}", file=sys.stderr)
        return 2
    if args.peers_command == "list":
        for name in only:
            peer = pins[name]
            have = installed_version(peer, root)
            state = "installed" if have == peer.version else (f"other version {have}" if have else "missing")
            print(f"{name:12} {peer.package}@{peer.version:10} {state:10} {peer.entry_path(root)}")
        return 0
    failed = 0
    for name in only:
        peer = pins[name]
        print(f"{name}: {peer.package}@{peer.version} ...", flush=True)
        try:
            result = install_peer(peer, root)
        except Exception as exc:  # one failed peer must not hide the others
            failed += 1
            print(f"{name}: FAILED: {exc}", file=sys.stderr, flush=True)
            tail = getattr(exc, "stderr_tail", None)
            if tail:
                print(tail, file=sys.stderr)
            continue
        how = "cached" if result.skipped else f"installed in {result.seconds:.1f} s"
        print(f"{name}: {how} -> {result.prefix}", flush=True)
    return 1 if failed else 0


def _install_registry(args: argparse.Namespace, root: Path) -> int:
    from paddock.drivers.acp import load_registry, registry_peer

    try:
        doc = load_registry(args.registry_file)
    except ValueError as exc:
        print(f"paddock peers: {exc}", file=sys.stderr)
        return 2
    failed = 0
    for agent_id in args.registry:
        try:
            peer = registry_peer(doc.agent(agent_id))
        except KeyError as exc:
            print(f"paddock peers: {exc.args[0]}", file=sys.stderr)
            return 2
        except ValueError as exc:
            failed += 1
            print(f"{agent_id}: unavailable: {exc} (only npx distributions install from npm)", file=sys.stderr)
            continue
        print(f"{agent_id}: {peer.package}@{peer.version} ...", flush=True)
        try:
            result = install_peer(peer, root)
        except Exception as exc:
            failed += 1
            print(f"{agent_id}: FAILED: {exc}", file=sys.stderr, flush=True)
            continue
        how = "cached" if result.skipped else f"installed in {result.seconds:.1f} s"
        print(f"{agent_id}: {how} -> {result.prefix}", flush=True)
    return 1 if failed else 0
