"""The runtime's own actors: ProcessActor, the line and JSON-RPC transports, the SessionActor base
and the EventHub (fan-in)."""
