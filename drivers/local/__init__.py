"""The built-in local agent (`python -m drivers.local`) and its ACP flavor."""
