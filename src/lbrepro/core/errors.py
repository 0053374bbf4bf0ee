"""Exception hierarchy: every error a user can cause names what was wrong.

The CLI and the workflow turn these into one line on stderr (exit code 2); anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations


class LbreproError(Exception):
    """Base class of every error lbrepro raises on purpose."""


class ConfigError(LbreproError, ValueError):
    """A configuration or command-line value is invalid; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(f"{key}: {message}")


class UnstableError(LbreproError, ValueError):
    """The parameters describe an unstable system (load >= capacity): refused, never simulated."""


class ConvergenceError(LbreproError, RuntimeError):
    """A numerical method did not reach its tolerance; the message says which and by how much."""
