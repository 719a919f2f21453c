"""The one error type of the workloads package."""

from __future__ import annotations


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
