"""What the user gave cannot be used. Each error names what is wrong and where; the CLI prints
it as one line and exits 2 (infertop/endings.py). One base, `BadInput`, and a class for each
kind of input, so a handler can tell a busy port from a bad option."""

from __future__ import annotations


class BadInput(ValueError):
    """A bad argument, file or value; the message names the problem and the valid choices."""


class BadConfig(BadInput):
    """Options the engine cannot serve: an unknown option or value, or a combination it refuses
    (probe/contract/options.py's OptConfig)."""


class BadCheckpoint(BadInput):
    """A model folder that is not a T5 checkpoint infertop can load (probe/checks/
    checkpoint_check.py)."""


class Busy(BadInput):
    """Something another process holds: a port in use, or an output folder another infertop run
    has locked (probe/checks/ports.py, probe/checks/output_lock.py)."""


class TraceError(ValueError):
    """Bad trace input or a bad option; the message already names file:line and the field.

    `reason` groups row-level problems for the --skip-bad summary ("non-positive length",
    "timestamp going backwards", ...). `skippable` is False for problems of the whole file
    (missing column, empty trace, unreadable file) that no skipping can repair.
    """

    def __init__(self, message: str, *, reason: str = "malformed row", skippable: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.skippable = skippable


def file_error(message: str) -> TraceError:
    """A problem of the whole file or option: never skipped."""
    return TraceError(message, reason="file", skippable=False)
