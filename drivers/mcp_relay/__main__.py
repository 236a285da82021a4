"""``python -m paddock.drivers.mcp_relay SPEC``: run one MCP relay (see ``._relay``)."""

from paddock.drivers.mcp_relay._relay import main

raise SystemExit(main())
