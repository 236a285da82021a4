"""The usage ledger's reader, the ledger's side: what the ``paddock-usage`` thread does with each
batch and each wake (``paddock._observe.EventReader`` is the thread; the runtime wires the two)."""

from __future__ import annotations

import time
from typing import Any

from ._budgets import Budgets
from ._processes import ProcessMeter
from ._usage import UsageLedger

__all__ = ["SpendReader"]

_METER_EVERY = 2.0  # seconds between samples of the agent processes' CPU and RSS
_BUDGET_EVERY = 0.5  # seconds between judgements of the time budgets


class SpendReader:
    """:meth:`fold` and :meth:`tick` run on the reader thread only; :meth:`sample_soon` on any."""

    def __init__(self, ledger: UsageLedger, budgets: Budgets, meter: ProcessMeter) -> None:
        self._ledger = ledger
        self._budgets = budgets
        self._meter = meter
        self._budget_ticked = 0.0
        self._metered = 0.0

    def fold(self, batch: list[Any]) -> None:
        """Fold a batch into the ledger, then judge the budgets it touched."""
        touched = self._ledger.fold(batch)
        if touched and self._budgets.any:
            like = {e.thread_id: (e.driver, e.instance_id, e.thread_id, e.turn_id) for e in batch}
            self._budgets.after(touched, like)

    def tick(self) -> None:
        """After each wake: judge the time budgets and sample the agent processes, each at its pace."""
        now = time.monotonic()
        if self._budgets.any and now - self._budget_ticked >= _BUDGET_EVERY:
            self._budget_ticked = now
            self._budgets.tick()
        if now - self._metered >= _METER_EVERY:
            self._metered = now
            self._ledger.note_processes(self._meter.sample())

    def sample_soon(self) -> None:
        """Sample the processes at the next wake (a host asked for usage)."""
        self._metered = 0.0
