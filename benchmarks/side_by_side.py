"""Run one benchmark on this checkout and on another commit, alternating, in one invocation.

``paddock bench side-by-side --rev REV [--pairs N] NAME [ARGS...]`` checks REV out into a cached
worktree (``$PADDOCK_BENCH_TREES`` or ``~/.cache/paddock/bench-trees/<rev>``) with a venv of its
own (editable install of that tree, no dependencies: it reads them from this interpreter's
site-packages), then runs ``paddock bench NAME ARGS --json`` N times on each side, alternating
(``before``, ``after``, ``before``, ...) so that both sides see the same machine load. Each run is
a fresh process. Prints one JSON document: the rev, the head, and every run's document per side.
The machine is shared and noisy: read the pairs, not one run.

For the benchmarks in :data:`FIGURES` the document also carries ``compare``: per figure the median
of each side, the ratio after/before, and ``worse`` when the after side is more than
``--warn-above`` (default 10%) worse in the figure's direction. ``--warn`` prints one line per
worse figure to stderr (CI's regression guard: a warning, never a failure).
"""

from __future__ import annotations

import argparse
import json
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, emit  # noqa: E402


FIGURES: dict[str, tuple[tuple[str, str, bool], ...]] = {
    # (label, dotted path in one run's document, higher is better)
    "throughput": (
        ("log on events/s", "summary.runtime_log_on.events_per_s_median", True),
        ("log off events/s", "summary.runtime_log_off.events_per_s_median", True),
        ("log on host CPU per 100k events (s)", "summary.runtime_log_on.host_cpu_per_100k_median", False),
        ("log off host CPU per 100k events (s)", "summary.runtime_log_off.host_cpu_per_100k_median", False),
    ),
    "floor": (
        ("events/s", "events_per_s_median", True),
        ("us per event", "us_per_event_median", False),
    ),
    "sessions": tuple(
        (f"size {n + 1}: {label}", f"runs.{n}.{key}", higher)
        for n in (0, 1)
        for label, key, higher in (
            ("start per session (ms)", "start_per_session_ms", False),
            ("turns/s", "turns_per_s", True),
            ("host CPU per turn (ms)", "turn_host_cpu_ms", False),
            ("host RSS peak (MB)", "host_rss_peak_mb", False),
            ("close (s)", "close_seconds", False),
        )
    ),
    "serve": (
        ("in-process events/s", "summary.in_process.events_per_s", True),
        ("SSE, 1 client, events/s", "summary.sse_1.events_per_s", True),
        ("SSE, 50 clients, aggregate events/s", "summary.sse_50.aggregate_events_per_s", True),
        ("paced SSE, 1 client, p99 (ms)", "summary.paced_sse_1.p99_ms", False),
    ),
}
"""The figures :func:`compare` reads per benchmark (a size a run lacks compares as ``None``)."""


def _figure(doc: dict[str, Any], path: str) -> float | None:
    value: Any = doc
    for key in path.split("."):
        if isinstance(value, list) and key.isdigit():
            if int(key) >= len(value):
                return None
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            return None
    return float(value) if isinstance(value, (int, float)) else None


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def compare(name: str, runs: dict[str, list[dict[str, Any]]], warn_above: float) -> list[dict[str, Any]]:
    """Per figure of ``name`` (see :data:`FIGURES`): each side's median over its runs, the ratio
    after/before, and whether the after side is worse by more than ``warn_above`` (a fraction)."""
    rows = []
    for label, path, higher in FIGURES.get(name, ()):
        before = _median([v for r in runs["before"] if (v := _figure(r, path)) is not None])
        after = _median([v for r in runs["after"] if (v := _figure(r, path)) is not None])
        ratio = round(after / before, 3) if before and after is not None else None
        worse = ratio is not None and (ratio < 1 - warn_above if higher else ratio > 1 + warn_above)
        rows.append({"figure": label, "before": before, "after": after, "ratio": ratio,
                     "higher_is_better": higher, "worse": worse})
    return rows


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def prepare(rev: str) -> Path:
    """The python of a venv whose ``paddock`` is ``rev`` (created once and cached)."""
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    trees = Path(os.environ.get("PADDOCK_BENCH_TREES") or Path.home() / ".cache" / "paddock" / "bench-trees")
    tree = trees / sha[:12]
    python = tree / ".venv" / "bin" / "python"
    if python.exists():
        return python
    trees.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not tree.exists():
        _git("worktree", "add", "--detach", str(tree), sha)
    subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
    # The dependencies come from this interpreter's site-packages (a path in a .pth file is not
    # scanned for .pth files itself, so this checkout's own editable finder does not come along).
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    ours = [sysconfig.get_paths()["purelib"], *site.getsitepackages()]
    Path(purelib, "_paddock_bench_deps.pth").write_text("\n".join(dict.fromkeys(ours)) + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "-e", str(tree)],
                   check=True)
    return python


def _run(python: Path, cwd: Path, name: str, rest: list[str]) -> dict[str, Any]:
    proc = subprocess.run([str(python), "-m", "paddock.cli", "bench", name, *rest, "--json"], cwd=cwd,
                          capture_output=True, text=True)
    try:
        doc: dict[str, Any] = json.loads(proc.stdout)
    except json.JSONDecodeError:
        doc = {"failed": proc.returncode, "stderr_tail": proc.stderr[-2000:]}
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="paddock bench side-by-side", description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="HEAD~1", help="the commit to compare with (default HEAD~1)")
    parser.add_argument("--pairs", type=int, default=2, help="runs per side, alternating (default 2)")
    parser.add_argument("--json", action="store_true", help="accepted; the output is always JSON")
    parser.add_argument("--warn-above", type=float, default=0.10,
                        help="a figure worse by more than this fraction is flagged (default 0.10)")
    parser.add_argument("--warn", action="store_true",
                        help="print a warning line to stderr per flagged figure (the exit status stays 0)")
    parser.add_argument("name", help="the benchmark to run on both sides")
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="its arguments")
    args = parser.parse_args(argv)
    before_python = prepare(args.rev)
    before_tree = before_python.parents[2]
    runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
    for _ in range(args.pairs):
        runs["before"].append(_run(before_python, before_tree, args.name, args.rest))
        runs["after"].append(_run(Path(sys.executable), ROOT, args.name, args.rest))
    rows = compare(args.name, runs, args.warn_above)
    before_rev = _git("rev-parse", "--short", f"{args.rev}^{{commit}}")
    if args.warn:
        for row in rows:
            line = (f"bench {args.name}: {row['figure']}: {row['before']} -> {row['after']} "
                    f"(x{row['ratio']}) against {before_rev}")
            print(("WARNING: worse by more than %d%%: " % round(args.warn_above * 100) if row["worse"] else "")
                  + line, file=sys.stderr)
    emit({
        "benchmark": "side-by-side",
        "name": args.name,
        "args": args.rest,
        "before": before_rev,
        "after": _git("rev-parse", "--short", "HEAD") + ("+dirty" if _git("status", "--porcelain", "--untracked-files=no") else ""),
        "compare": rows,
        "runs": runs,
    })
    return 0
