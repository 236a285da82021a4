"""``paddock generate``: one-shot text from an instance (``Runtime.generate_text``): an
ephemeral session with no tool approved; prints the assistant's text and leaves nothing behind."""

from __future__ import annotations

import argparse

from paddock.cli._common import add_runtime_options, write_answer
from paddock.cli._connect import call_once

HELP = "one-shot text from an instance (a title, a commit message): no tools, nothing left behind"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_runtime_options(parser)
    parser.add_argument("--instance", default="local", help="instance id (default: local)")
    parser.add_argument("--model", help="model (default: the instance's)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the text")
    parser.add_argument("prompt", nargs="+", help="the prompt")


def run(args: argparse.Namespace) -> int:
    prompt = " ".join(args.prompt).replace("\\n", "\n")
    text = call_once(args, "generate",
                     lambda rt: rt.generate_text(args.instance, prompt, model=args.model, timeout=args.timeout))
    if text is None:
        return 1
    write_answer(args, {"text": text}, text + "\n")
    return 0
