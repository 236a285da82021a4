"""``paddock conformance``: the conformance suite outside pytest.

With no option it checks the built-in local agent, with no config and a temporary state dir of
its own. ``--driver D`` (repeatable) checks a pinned CLI against the scripted model server, also
in a temporary state dir; ``--instance ID`` checks a configured instance (``--config``): a
``local`` one with the local agent's directives; one whose endpoint is ``paddock mock-model`` (or
with ``--mock-model``) against a scripted model server this command starts with the suite's own
script (the scenarios need a model that follows them); any other with plain-language prompts, so
a user can point it at a real account (the model's HTTP error is then ``n/a``). The readable view is a table, drivers as rows and scenarios as columns, each
cell ``pass``, ``fail`` or ``n/a`` with its reason below; ``--json`` prints one document with
each driver's report (canonical, masked) and its digest. Exits 1 when any case failed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from paddock.cli._common import write

if TYPE_CHECKING:
    from paddock.testing._conformance import DriverReport, Target

HELP = "run the conformance suite against the local agent, a pinned CLI or a configured instance"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from paddock.cli._places import CONFIG_HELP

    which = parser.add_mutually_exclusive_group()
    which.add_argument("--driver", action="append", metavar="D",
                       help="driver or flavor to check against the scripted model server: local (default), "
                            "claude, codex, opencode, gemini, qwen, claude-acp, copilot, codex-acp, acp-registry")
    which.add_argument("--instance", metavar="ID", help="a configured instance, checked as it is")
    parser.add_argument("--config", help=CONFIG_HELP + "; for --instance")
    parser.add_argument("--mock-model", action="store_true",
                        help="for --instance: point it at a scripted model server this command starts with the "
                             "suite's script (the default when its endpoint is `paddock mock-model`), instead of "
                             "prompting its model in plain language")
    parser.add_argument("--scenario", action="append", metavar="S", help="only this scenario id (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def _targets(args: argparse.Namespace) -> list[tuple[str, Target | str]]:
    """(label, target or why it cannot run) for each driver or instance asked for."""
    from paddock.testing._conformance import instance_target, live_target, local_target

    if args.instance:
        import os
        import tomllib

        from paddock._instances._config import load_config
        from paddock.cli._places import find_config
        from paddock.contract import ConfigError

        path = find_config(argparse.Namespace(config=args.config, state_dir=None)).path
        if path is None:
            raise ConfigError(None, f"--instance {args.instance!r}: no config file (give --config)")
        load_config(path)  # the same checks as every command
        with open(path, "rb") as fh:
            table = tomllib.load(fh).get("instances", {}).get(args.instance)
        if table is None:
            raise ConfigError(path, f"no instance {args.instance!r}")
        secrets = tuple(s for s in (table.get("api_key"), os.environ.get(table.get("api_key_env") or ""))
                        if isinstance(s, str) and s)
        return [(args.instance, instance_target(args.instance, dict(table), secrets, mock=args.mock_model))]
    return [(kind, local_target() if kind == "local" else live_target(kind, scenarios=None))
            for kind in args.driver or ["local"]]


_HOW = {
    "local-agent-directives": "checked with the local agent's directives",
    "paddock-scripted-model": "checked against a scripted model server started for this run with the suite's "
                              "script (its configured endpoint is not used)",
    "configured-instance": "its own model is prompted in plain language (a model that does not follow them fails "
                           "scenarios; against `paddock mock-model` give --mock-model)",
}
"""How ``--instance`` checks an instance, by its report's corpus: said on stderr first."""


class _Row(NamedTuple):
    label: str
    report: DriverReport | None  # decoded from ``encoded``: masked
    encoded: bytes
    error: str | None


def run(args: argparse.Namespace) -> int:
    import msgspec

    from paddock.testing._conformance import SCENARIOS, DriverReport, encode_report, report_digest, run_target

    only = tuple(args.scenario) if args.scenario else None
    rows: list[_Row] = []
    for label, target in _targets(args):
        if isinstance(target, str):
            rows.append(_Row(label, None, b"", target))
            continue
        if args.instance and not args.json:
            write(f"paddock conformance: instance {label!r}: {_HOW[target.corpus]}\n", err=True)
        with tempfile.TemporaryDirectory(prefix="paddock-conformance-") as root:
            try:
                report = run_target(target, Path(root), only=only)
            except LookupError as exc:
                rows.append(_Row(label, None, b"", str(exc)))
                continue
        encoded = encode_report(report, target.secrets)
        # Both views come from the masked document: no secret reaches the output.
        rows.append(_Row(label, msgspec.json.decode(encoded, type=DriverReport), encoded, None))
    failed = any(row.report is None or any(c.result == "fail" for c in row.report.cases) for row in rows)
    if args.json:
        doc = {"drivers": [
            {"driver": row.label, "error": row.error} if row.report is None else
            {**json.loads(row.encoded), "digest": report_digest(row.encoded)}
            for row in rows
        ]}
        write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        return 1 if failed else 0
    ids = [s for s in SCENARIOS if only is None or s in only]
    width = max([len(row.label) for row in rows] + [6])
    write(f"{'driver':{width}}  " + "  ".join(f"{i.split('-')[0]:4}" for i in ids) + "\n")
    notes: list[str] = []
    for row in rows:
        if row.report is None:
            write(f"{row.label:{width}}  error: {row.error}\n")
            continue
        cases = {c.scenario: c for c in row.report.cases}
        cells = []
        for sid in ids:
            case = cases.get(sid)
            cells.append(f"{case.result if case is not None else 'n/a':4}")
            if case is not None and case.result != "pass":
                notes.append(f"  {row.label} {sid}: {case.result}: {case.reason}")
        write(f"{row.label:{width}}  " + "  ".join(cells) + "\n")
    write("\nscenarios:\n")
    for sid in ids:
        write(f"  {sid.split('-')[0]:4} {SCENARIOS[sid].title} ({sid})\n")
    if notes:
        write("\nfail and n/a:\n" + "\n".join(notes) + "\n")
    return 1 if failed else 0
