"""The errors a job raises for its user, torch-free so that every layer and the CLI can name them."""

from __future__ import annotations


class NlndlError(Exception):
    """An error the user can act on, whose message says where (``file:line:col: error: ...`` where it has a
    place): the CLI prints the message and exits 1. Every such error of every layer derives from it."""


class JobError(NlndlError):
    """A job that cannot run, or failed, for a reason the user can act on; the message says where."""


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) during training, after the checkpoint was saved; the message says how to continue, and
    ``code`` is the exit code: 130 for Ctrl-C, 143 for SIGTERM."""

    def __init__(self, message: str, code: int = 130) -> None:
        super().__init__(message)
        self.code = code

    @classmethod
    def of(cls, exc: BaseException, message: str) -> Interrupted:
        return cls(message, 143 if isinstance(exc, Terminated) else 130)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process runs so that training stops as on Ctrl-C (checkpoint saved)."""
