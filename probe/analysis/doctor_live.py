"""The doctor on the dashboard's live window: the current config's requests in the window,
diagnosed as a segment is, and the checklist from the whole session (built with the LiveView)."""

from __future__ import annotations

import os
from typing import Sequence

from probe.analysis.checklist import ChecklistItem, checklist
from probe.analysis.diagnosis import DoctorContext, SegmentDiagnosis, diagnose
from probe.analysis.findings import Finding
from probe.analysis.load_figures import Load, live_load
from probe.contract.device_sample import DeviceSample
from probe.contract.figures import SegmentStats
from probe.contract.records import RequestRecord, RooflineStatus
from probe.contract.session import SessionData


def live_doctor(data: SessionData, config_id: str, window: Sequence[RequestRecord],
                segments: Sequence[SegmentStats], *, bucket_edges: tuple[int, ...],
                max_batch: int, device_sample: DeviceSample | None,
                roofline: RooflineStatus | None, overloaded: Finding | None = None,
                saved: str | None = None, load: Load | None = None
                ) -> tuple[SegmentDiagnosis | None, tuple[ChecklistItem, ...]]:
    """`overloaded`: the serving loop's own saturation (offered above capacity, a queue now);
    `load`: the live view's offered load and capacity, which the doctor and the checklist judge
    by, so they print what the throughput panel prints."""
    ctx = DoctorContext(bucket_edges=bucket_edges, max_batch=max_batch,
                        device_sample=device_sample, roofline=roofline,
                        cpu_count=os.cpu_count(), saved=saved, load=load)
    mine = [r for r in window if r.config_id == config_id]
    diagnosis = (diagnose(data, config_id, ctx, records=mine, segments=segments,
                          live_findings=[overloaded] if overloaded else [])
                 if config_id in data.configs and mine else None)
    return diagnosis, checklist(data, [diagnosis] if diagnosis else [], ctx, segments)


def overload_finding(offered: float | None, capacity: float | None, queue_depth: int,
                     overloaded: bool) -> Finding | None:
    if not overloaded or not offered or not capacity:
        return None
    return Finding("saturation", f"{live_load(offered, capacity).text()}; {queue_depth} queued now")
