"""OpenTelemetry spans (issue #24): a span per control call, per turn and per approval request,
recorded by the SDK's in-memory exporter around a real local agent."""

from __future__ import annotations

import pytest

from paddock import Runtime

pytestmark = pytest.mark.timeout(60)

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="needs the OpenTelemetry SDK: pip install -e '.[test]'")
from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402


@pytest.fixture
def exporter():
    """An in-memory exporter on the process's tracer provider (set once: OpenTelemetry refuses a
    second global provider)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, sdk_trace.TracerProvider):
        provider = sdk_trace.TracerProvider()
        trace.set_tracer_provider(provider)
    exported = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exported)
    provider.add_span_processor(processor)
    yield exported
    processor.shutdown()


def test_turns_requests_and_control_calls_are_spans(exporter, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    with Runtime.open({"instances": {"agent": {"driver": "local"}}}, state_dir=tmp_path / "state") as rt:
        rt.start_session("t1", instance="agent", cwd=str(ws), runtime_mode="approval-required")
        with rt.subscribe(thread_id="t1") as events:
            turn = rt.send_turn("t1", f"@write {ws}/traced.txt spans")
            while (event := events.get(timeout=30)) is not None:
                if event.type == "request.opened":
                    rt.respond_to_request("t1", event.request_id, "accept")
                elif event.type == "turn.completed":
                    break
            assert event is not None and event.state == "completed"
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"paddock.start_session", "paddock.send_turn", "paddock.respond_to_request"} <= set(spans), sorted(spans)
    assert spans["paddock.send_turn"].attributes["gen_ai.conversation.id"] == "t1"
    turn_span = spans["invoke_agent agent"]
    assert turn_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn_span.attributes["gen_ai.provider.name"] == "local"
    assert turn_span.attributes["paddock.turn_id"] == turn.turn_id
    assert turn_span.attributes["paddock.turn.state"] == "completed"
    request = spans["paddock.request file_change"]
    assert request.parent is not None and request.parent.span_id == turn_span.context.span_id
    assert request.attributes["paddock.request.decision"] == "accept"
    assert turn_span.start_time <= request.start_time <= request.end_time <= turn_span.end_time
