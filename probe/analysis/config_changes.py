"""Where a session's serving config changed, read from the requests themselves: the
dashboard's latency plot and the printed timeline (probe/report_charts) mark the same places."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from probe.contract.records import RequestRecord
from probe.contract.session import ConfigEntry


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


def served_before(configs: Mapping[str, ConfigEntry], config_id: str) -> str | None:
    """The config id the same options were first served under, when `config_id` is a return
    to them (a segment of its own: probe/contract/session.py); None for a first visit."""
    entry = configs.get(config_id)
    if entry is None:
        return None
    first = next(cid for cid, e in configs.items() if e.options == entry.options)
    return None if first == config_id else first
