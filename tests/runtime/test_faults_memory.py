"""Issue 25, memory under churn: a subscription that read back part of the event log and was
closed holds none of it, and the hub lets go of closed subscriptions when the next one is
registered, also while no event is published (clients polling an idle runtime). Real runtime
and local agent, through the public API."""

from __future__ import annotations

import gc
import weakref

from paddock import Runtime
from tests.runtime.conftest import run_turn

ONE_LOCAL = {"instances": {"local": {"driver": "local"}}}


def test_closed_subscriptions_of_an_idle_runtime_are_let_go(tmp_path, workspace):
    with Runtime.open(ONE_LOCAL, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="local", cwd=str(workspace))
        run_turn(rt, "t1", "@chunks 50\n@reply " + "word " * 50)
        refs = []
        for _ in range(3):  # read back from the log (a page of events in hand), then close
            sub = rt.subscribe(from_seq=1)
            assert sub.get(timeout=10) is not None
            sub.close()
            refs.append(weakref.ref(sub))
            del sub
        rt.subscribe().close()  # no event is published meanwhile: the runtime is idle
        gc.collect()
        assert [r() for r in refs] == [None, None, None]
