"""Workspaces the runtime owns: a git worktree per thread, a checkpoint per turn (see
docs/architecture.md, "Workspaces")."""
