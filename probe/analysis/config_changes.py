"""Where a session's serving config changed, read from the requests themselves: the
dashboard's latency plot and the printed timeline (probe/report_charts) mark the same places."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from probe.contract.records import RequestRecord


@dataclass(frozen=True)
class ConfigChange:
    t_s: float                  # start of the first request served under the new config
    config_id: str


def config_changes(records: Sequence[RequestRecord]) -> list[ConfigChange]:
    """Where the serving config changed, read from the requests themselves (in seq order)."""
    changes: list[ConfigChange] = []
    previous: str | None = None
    for record in sorted(records, key=lambda r: r.seq):
        if previous is not None and record.config_id != previous:
            changes.append(ConfigChange(record.start_s, record.config_id))
        previous = record.config_id
    return changes
