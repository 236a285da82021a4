"""The ``opencode`` driver (placeholder while it is built)."""
