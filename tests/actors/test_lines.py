"""The bounded line splitter on its own (the reader thread's state machine)."""

from __future__ import annotations

import pytest

from paddock.actors.transports._lines import LineSplitter


def split(chunks: list[bytes], limit: int = 10) -> tuple[list[bytes], list[int]]:
    overlong: list[int] = []
    splitter = LineSplitter(limit, overlong.append)
    lines: list[bytes] = []
    for chunk in chunks:
        lines += splitter.feed(chunk)
    lines += splitter.finish()
    return lines, overlong


@pytest.mark.parametrize(
    ("chunks", "lines", "overlong"),
    [
        ([b"a\nb\n"], [b"a", b"b"], []),
        ([b"ab", b"c\nd", b"e\n"], [b"abc", b"de"], []),
        ([b"tail without newline"[:9]], [b"tail with"], []),
        ([b"0123456789\n"], [b"0123456789"], []),  # exactly the limit
        ([b"0123456789X\nok\n"], [b"ok"], [11]),
        ([b"01234", b"56789", b"XY\nok\n"], [b"ok"], [12]),
        ([b"x" * 25, b"y" * 25, b"\nafter\n"], [b"after"], [50]),
        ([b"x" * 25], [], [25]),  # over-long at EOF
        ([b"\n\n"], [b"", b""], []),
        ([b"crlf\r\n"], [b"crlf\r"], []),
        ([b"ab", b"c\nd\ne\nf"], [b"abc", b"d", b"e", b"f"], []),  # a carried line, then many
        ([b"ab", b"c\nd\n0123456789X\ne\n"], [b"abc", b"d", b"e"], [11]),  # one over-long among them
    ],
)
def test_split(chunks, lines, overlong):
    assert split(chunks) == (lines, overlong)


def test_one_byte_at_a_time_matches_whole_chunks():
    data = b"one\n" + b"z" * 40 + b"\ntwo\nthree"
    whole = split([data])
    bytewise = split([data[i : i + 1] for i in range(len(data))])
    assert whole == bytewise == ([b"one", b"two", b"three"], [40])
