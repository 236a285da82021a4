"""What agents spend: the usage ledger's figures (``Runtime.usage``) and the budgets that bound
them (``start_session(budget=...)``, ``set_budget``, ``budgets = {...}`` in the config).

Token counts follow the OpenAI convention every driver maps to: ``input_tokens`` includes
``cached_input_tokens``, ``output_tokens`` includes ``reasoning_tokens``; ``total_tokens`` is
input plus output. ``cost`` is in USD; ``cost_source`` says where it comes from: ``provider``
(the agent reported it), ``pricing`` (computed from the host's ``[pricing]`` table for the turn's
model), ``unknown`` (neither: ``cost`` is ``None``), ``mixed`` (a sum of turns of several
sources; ``cost`` then covers the turns whose cost is known).
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

__all__ = [
    "BUDGET_KINDS",
    "Budget",
    "BudgetKind",
    "CostSource",
    "InstanceUsage",
    "ThreadUsage",
    "TurnUsage",
    "UsageFigures",
    "UsageReport",
]

BudgetKind = Literal["tokens", "cost", "turns", "turn_seconds"]
BUDGET_KINDS: tuple[BudgetKind, ...] = ("tokens", "cost", "turns", "turn_seconds")
CostSource = Literal["provider", "pricing", "unknown", "mixed"]

_Positive = Annotated[float, msgspec.Meta(gt=0)]


class Budget(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Bounds on what a thread, an instance or the whole runtime may spend; ``None``: unbounded.

    ``tokens`` (input + output), ``cost`` (USD, where known), ``turns`` (turns started) and
    ``turn_seconds`` (wall time of turns, the running one included) count over ``period``:
    ``None`` for all time, ``"day"`` for the current UTC day. At ``warn_at`` of a limit a
    ``budget.warning`` event; at the limit the running turn is interrupted and ``send_turn``
    raises :class:`BudgetExceededError`. Enforcement reads the usage events, so it lags by at
    most one usage report of the agent (a turn may overshoot by what that report adds)."""

    tokens: Annotated[int, msgspec.Meta(gt=0)] | None = None
    cost: _Positive | None = None
    turns: Annotated[int, msgspec.Meta(gt=0)] | None = None
    turn_seconds: _Positive | None = None
    period: Literal["day"] | None = None
    warn_at: Annotated[float, msgspec.Meta(gt=0, le=1)] = 0.8

    def limits(self) -> list[tuple[BudgetKind, float]]:
        """The bounds that are set, as ``(kind, limit)``."""
        return [(kind, float(v)) for kind in BUDGET_KINDS if (v := getattr(self, kind)) is not None]


class UsageFigures(msgspec.Struct, frozen=True, kw_only=True):
    """Totals over some turns. ``turn_seconds`` is the wall time of those turns (a running turn
    counts up to now). ``cpu_seconds`` and ``peak_rss_bytes`` are ``None`` until measured."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None
    cost_source: CostSource = "unknown"
    turns: int = 0
    turn_seconds: float = 0.0
    cpu_seconds: float | None = None
    peak_rss_bytes: int | None = None


class TurnUsage(UsageFigures, frozen=True, kw_only=True):
    """One turn's usage (``turns`` is 1). ``state`` is ``running`` until the turn completes."""

    thread_id: str
    turn_id: str
    instance_id: str
    driver: str
    model: str | None = None
    state: str = "running"
    started_at: float = 0.0
    ended_at: float | None = None


class ThreadUsage(UsageFigures, frozen=True, kw_only=True):
    thread_id: str
    instance_id: str
    driver: str


class InstanceUsage(UsageFigures, frozen=True, kw_only=True):
    instance_id: str
    driver: str


class UsageReport(msgspec.Struct, frozen=True, kw_only=True):
    """``Runtime.usage``: the total, per instance and per thread, of the turns that started at
    or after ``since`` (all when ``None``), filtered by thread or instance; ``turns`` lists the
    turns one by one when a thread was asked for."""

    total: UsageFigures
    instances: tuple[InstanceUsage, ...] = ()
    threads: tuple[ThreadUsage, ...] = ()
    turns: tuple[TurnUsage, ...] = ()
    since: float | None = None
