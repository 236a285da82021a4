"""Render ``docs/conformance.md`` from the reports a run of the suite saved.

    PADDOCK_REQUIRE_PEERS=1 PADDOCK_CONFORMANCE_OUT=/tmp/conformance \\
        .venv/bin/python -m pytest tests/conformance -q
    .venv/bin/python -m tests.conformance.table /tmp/conformance > docs/conformance.md

Each test of the suite writes ``<driver>.json`` (its canonical, masked report) and
``<driver>.seconds`` (its wall time) into ``$PADDOCK_CONFORMANCE_OUT`` when that is set. CI
(``.ci/run``) sets it to a temporary folder and prints this rendering after pytest, so every CI
log holds the table of its run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import msgspec

from paddock.testing._conformance import SCENARIOS, DriverReport, encode_report, report_digest

ORDER = ("local", "claude", "codex", "opencode", "gemini", "qwen", "claude-acp", "copilot", "codex-acp",
         "acp-registry", "cursor", "grok", "kiro")


def save(label: str, report: DriverReport, seconds: float, secrets: tuple[str, ...] = ()) -> None:
    """Keep ``report`` for the table when ``$PADDOCK_CONFORMANCE_OUT`` names a folder."""
    out = os.environ.get("PADDOCK_CONFORMANCE_OUT")
    if not out:
        return
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{label}.json").write_bytes(encode_report(report, secrets))
    (folder / f"{label}.seconds").write_text(f"{seconds:.1f}\n")


def render(folder: Path) -> str:
    found = {p.stem: p for p in folder.glob("*.json")}
    labels = [k for k in ORDER if k in found] + sorted(set(found) - set(ORDER))
    ids = list(SCENARIOS)
    lines = [
        "# Conformance",
        "",
        "Every driver and flavor runs one suite (`tests/conformance/`, the engine in",
        "`paddock.testing._conformance`): the scenarios below through the public `Runtime`, every",
        "case's events through the grammar checker (`paddock.contract.check_grammar`, rules in",
        "`docs/architecture.md`, \"The event grammar\"). A scenario whose capability is off is `n/a`",
        "naming it; where the runtime must refuse an operation the suite checks it does. The local",
        "agent and every pinned CLI (against the scripted model server) run every scenario; cursor,",
        "grok and kiro, which cannot be installed here, replay their recordings (scenarios 01, 03a",
        "and 05; the rest is `n/a`: not in the recording).",
        "",
        "Run it yourself: `paddock conformance` (the local agent, no config),",
        "`paddock conformance --driver codex` (a pinned CLI against the scripted model server), or",
        "`paddock conformance --instance ID --config paddock.toml` (your own configured instance;",
        "`--json` for the report documents). The scenarios need a model that follows them, so",
        "`--instance` checks a `local` instance with the local agent's directives, and an instance whose",
        "`endpoint` is `paddock mock-model` (docs/mock-model.md's offline setup; or any instance with",
        "`--mock-model`) against a scripted model server it starts itself with the suite's script and",
        "the pinned target's model keys; any other instance's model is prompted in plain language, and",
        "fails what it does not follow. The command says on stderr which way it checks.",
        "",
        "A passing report is local evidence, not a support decision; usage is what the agent",
        "reported; a cancel is a request.",
        "",
        "## Table",
        "",
        "Generated from the reports a run of the suite saved: each test saves its driver's canonical",
        "report and wall time in `$PADDOCK_CONFORMANCE_OUT`. `.ci/run` sets that to a temporary",
        "folder and prints this rendering (`python -m tests.conformance.table DIR`) after pytest, so",
        "every CI log holds the table of its run. To make this page from a run:",
        "",
        "```",
        "PADDOCK_REQUIRE_PEERS=1 PADDOCK_CONFORMANCE_OUT=/tmp/conformance .venv/bin/python -m pytest tests/conformance -q",
        ".venv/bin/python -m tests.conformance.table /tmp/conformance > docs/conformance.md",
        "```",
        "",
        "Wall time is the driver's whole test on the machine of that run (2 cores, shared with other",
        "work), not a benchmark.",
        "",
        "| driver | " + " | ".join(i.split("-")[0] for i in ids) + " | wall time |",
        "|---|" + "---|" * len(ids) + "---|",
    ]
    reports: dict[str, DriverReport] = {}
    for label in labels:
        data = found[label].read_bytes()
        report = reports[label] = msgspec.json.decode(data, type=DriverReport)
        cases = {c.scenario: c.result for c in report.cases}
        seconds = folder / f"{label}.seconds"
        wall = f"{seconds.read_text().strip()} s" if seconds.exists() else "-"
        lines.append(f"| {label} | " + " | ".join(cases.get(i, "-") for i in ids) + f" | {wall} |")
    lines += ["", "Scenarios:", ""]
    lines += [f"- `{i.split('-')[0]}` {SCENARIOS[i].title} (`{i}`)" for i in ids]
    lines += ["", "## Reasons", ""]
    for label, report in reports.items():
        digest = report_digest(found[label].read_bytes())
        version = report.cli_version or "built in"
        lines += [f"### {label}", "", f"CLI {version}, corpus `{report.corpus}`, report `{digest}`.", ""]
        for case in report.cases:
            lines.append(f"- `{case.scenario}` **{case.result}**: {case.reason}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1])))
