"""Errors in the CLI's words: the runtime's messages name API calls (``start_session()``,
``respond_to_request``); a person at the command line needs the command to type instead."""

from __future__ import annotations

from paddock.contract import PaddockError, RequestError, SessionClosedError, SessionNotFoundError, ValidationError

__all__ = ["explain"]

_ANSWERING = ("respond_to_request", "respond_to_user_input")


def explain(exc: PaddockError) -> str:
    """``str(exc)``, with API names replaced by the CLI command that does the same. Errors rebuilt
    from a server's answer carry the same attributes, so this holds for both runtimes."""
    thread = exc.thread_id
    where = f" (thread {thread!r})" if thread else ""
    if isinstance(exc, SessionNotFoundError) and thread:
        return (f"thread {thread!r} has no live session; start one with `paddock chat --thread {thread}` "
                f"(or `paddock run --thread {thread} PROMPT`)")
    if isinstance(exc, SessionClosedError) and thread:
        detail = getattr(exc, "detail", None)
        return (f"the session of thread {thread!r} is closed{f' ({detail})' if detail else ''}; "
                f"start it again with `paddock chat --thread {thread}`")
    if isinstance(exc, ValidationError) and getattr(exc, "issue", None):
        return f"invalid input: {exc.issue}{where}"
    if isinstance(exc, RequestError) and getattr(exc, "method", None) in _ANSWERING and getattr(exc, "detail", None):
        return f"cannot answer: {exc.detail}{where}"
    return str(exc)
