"""Exception hierarchy: every error a user can cause names what was wrong.

The CLI and the workflow turn these into one line on stderr (exit code 2); anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations


class LbreproError(Exception):
    """Base class of every error lbrepro raises on purpose."""


class ConfigError(LbreproError, ValueError):
    """A configuration or command-line value is invalid: ``key`` names it, ``message`` says why.

    ``str(err)`` is ``"key: message"``, the one line the CLI and the workflow print.
    """

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        self.message = message
        super().__init__(f"{key}: {message}")

    def under(self, prefix: str, key: str | None = None) -> ConfigError:
        """The same message keyed inside ``prefix`` (a section, an artifact id, a list item):
        ``prefix.key`` — ``key`` replaces this error's own key where the caller knows better."""
        inner = self.key if key is None else key
        return ConfigError(f"{prefix}.{inner}" if inner else prefix, self.message)


class UnstableError(LbreproError, ValueError):
    """The parameters describe an unstable system (load >= capacity): refused, never simulated."""


class ConvergenceError(LbreproError, RuntimeError):
    """A numerical method did not reach its tolerance; the message says which and by how much."""
