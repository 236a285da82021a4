"""What is configured: the config file, each instance's home and environment (isolation), what
a host hands its sessions (MCP servers, preamble), probes and the instance table.
"""
