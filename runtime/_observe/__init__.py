"""Host-side readers of the event stream: the stall watchdog and OpenTelemetry spans, each on a
thread of its own.
"""
