"""``python -m paddock.drivers.local``: run the built-in local ACP agent."""

from paddock.drivers.local.agent import main

raise SystemExit(main())
