"""``paddock doctor``: each configured instance's binary, version, auth and login state, credentials
(names only), model endpoint reachability and availability; exit 1 when any instance has a problem."""

from __future__ import annotations

import argparse
import json

from paddock.cli._common import add_runtime_options, write
from paddock.cli._connect import connect

HELP = ("check each instance: binary, version, login, credentials (names only), model endpoint reachable, kernel "
        "confinement; exit 1 on a problem")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)


def run(args: argparse.Namespace) -> int:
    rt, _ = connect(args, "doctor")
    try:
        reports = rt.diagnose()
    finally:
        rt.close()
    if args.json:
        for r in reports:
            write(json.dumps(r) + "\n")
        return 0
    for r in reports:
        problems = r.get("problems") or []
        mark = "ok " if r["status"] == "available" and not problems else "!! "
        write(f"{mark}{r['id']} (driver {r['driver']}): {r['status']}{' with problems' if problems and r['status'] == 'available' else ''}\n")
        source = {"peers": " (pinned, from the peers dir)", "path": " (found on PATH)", "config": " (configured)"}.get(
            r.get("source") or "", "")
        write(f"    binary:  {r['binary'] or '-'}{source}\n    version: {r['version'] or '-'}\n    auth:    {r['auth']}\n    home:    {r['home'] or '-'}\n")
        for key in ("endpoint", "api_key", "model"):
            if r.get(key):
                # api_key is already masked by the driver's report; never print a raw value.
                write(f"    {key + ':':10}{'***' if key == 'api_key' else r[key]}\n")
        for key, label in (("login", "login:"), ("credentials", "credentials:"), ("endpoint_check", "endpoint check:"),
                           ("confinement", "confinement:"), ("limits", "limits:")):
            if r.get(key):
                write(f"    {label} {r[key]}\n")
        if r.get("placement", "local") != "local":
            write(f"    placed:  {r['placement']}, node {r.get('node') or '-'}, status {r.get('ray') or '-'}\n")
        if r["reason"]:
            write(f"    reason:  {r['reason']}\n")
        for problem in problems:
            write(f"    problem: {problem}\n")
    return 0 if all(r["status"] == "available" and not r.get("problems") for r in reports) else 1
