"""The replayer: a fake CLI process that plays a recorded transcript.

``python -m paddock.testing.replay FILE [--workspace DIR]`` reads lines on stdin and writes
lines on stdout. Frames are played in order: each ``expect_outbound`` frame waits for the next
stdin line and compares it, after the same normalisation the recorder applied (renumbered ids,
``<workspace>``, timestamps), with the recorded frame (``"<*>"`` matches anything); each
``emit_inbound`` frame is written to stdout (``<workspace>`` replaced by DIR, answers carrying
the client's own request ids). After the last frame it waits for stdin to close.

HTTP transcripts (OpenCode) are served instead: see :mod:`paddock.testing._replay_http`.

Exit status: 0 when the client sent exactly the recorded lines and closed stdin; 3 on a
mismatch, an unexpected extra line or an early EOF, with a readable diff on stderr; 2 for a
bad transcript file.
"""

from __future__ import annotations

import argparse
import os
import sys

from ._replay_http import serve_http
from ._transcript import Normaliser, diff_frames, load_transcript, matches

__all__ = ["main"]


def _fail(index: int, total: int, message: str, detail: str = "") -> int:
    sys.stderr.write(f"replay mismatch at frame {index} of {total}: {message}\n")
    if detail:
        sys.stderr.write(detail.rstrip("\n") + "\n")
    sys.stderr.flush()
    return 3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m paddock.testing.replay")
    parser.add_argument("transcript")
    parser.add_argument("--workspace", default=None, help="the client's workspace (default: the cwd)")
    parser.add_argument("--port", type=int, default=0, help="HTTP transcripts: the port to serve on")
    parser.add_argument("--verdict", default=None,
                        help="also write the exit status and any mismatch to this file (for clients that hide "
                             "the replayer's exit, like a driver under test)")
    args, _ = parser.parse_known_args(argv)
    if args.verdict:
        return _with_verdict(args, argv)  # the CLI's own flags (app-server, --acp, ...) are ignored
    try:
        transcript = load_transcript(args.transcript)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"replay: {exc}\n")
        return 2
    workspace = os.path.abspath(args.workspace or os.getcwd())
    norm = Normaliser(transcript.framing, [(workspace, "<workspace>")])
    if transcript.framing == "http":
        return serve_http(transcript, norm, args.port)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    total = len(transcript.frames)
    for index, frame in enumerate(transcript.frames, start=1):
        if frame["type"] == "emit_inbound":
            try:
                stdout.write(norm.inbound_line(frame) + b"\n")
                stdout.flush()
            except BrokenPipeError:
                return _fail(index, total, "the client closed stdout while frames were left to emit")
            continue
        line = stdin.readline()
        if not line:
            expected = frame.get("msg", frame.get("line"))
            return _fail(index, total, "the client closed stdin, but the recording expects another line:",
                         diff_frames(expected, None))
        actual = norm.frame(line, True)
        want = frame.get("msg", frame.get("line"))
        got = actual.get("msg", actual.get("line"))
        if not matches(want, got):
            return _fail(index, total, "the client sent a different line than recorded:", diff_frames(want, got))
    extra = stdin.readline()
    if extra:
        got = norm.frame(extra, True)
        return _fail(total + 1, total, "the client sent a line after the end of the recording:",
                     diff_frames(None, got.get("msg", got.get("line"))))
    return 0


def _with_verdict(args: argparse.Namespace, argv: list[str] | None) -> int:
    import io

    rest = list(sys.argv[1:] if argv is None else argv)
    i = rest.index("--verdict")
    del rest[i:i + 2]
    captured = io.StringIO()
    real = sys.stderr

    class _Tee(io.TextIOBase):
        def write(self, text: str) -> int:
            captured.write(text)
            return real.write(text)

        def flush(self) -> None:
            real.flush()

    sys.stderr = _Tee()  # type: ignore[assignment]
    try:
        status = main(rest)
    finally:
        sys.stderr = real
    with open(args.verdict, "w", encoding="utf-8") as fh:
        fh.write(f"{status}\n{captured.getvalue()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
