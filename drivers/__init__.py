"""Drivers: the registry (``BUILT_IN_DRIVERS``) and one subpackage per kind of agent.

``drivers.acp`` is the shared ACP adapter plus small flavors, ``drivers.local`` the built-in agent,
``drivers.testing`` the scripted model server, recorder and replayer. A driver never imports the
facade (``runtime`` outside ``runtime.contract``) or another driver.
"""
