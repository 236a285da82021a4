"""``python -m drivers.local``: run the built-in local ACP agent."""

from drivers.local.agent import main

raise SystemExit(main())
