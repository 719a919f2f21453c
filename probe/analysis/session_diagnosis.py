"""The doctor on a whole session: each config's diagnosis in order of first use (each reading
the one before it, for the prediction it made) and the readiness checklist over them all; and
the session JSON's `segments[].diagnosis`. Above both diagnosis.py and checklist.py, which
reads the diagnoses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from probe.analysis.checklist import ChecklistItem, checklist
from probe.analysis.diagnosis import (
    DoctorContext,
    SegmentDiagnosis,
    context_from_document,
    diagnose,
)
from probe.analysis.stats import session_segments
from probe.contract.device_sample import DeviceSample
from probe.contract.records import RooflineStatus
from probe.contract.session import SessionData


@dataclass(frozen=True)
class SessionDiagnosis:
    segments: tuple[SegmentDiagnosis, ...]
    checklist: tuple[ChecklistItem, ...] = field(default=())

    def segment(self, config_id: str) -> SegmentDiagnosis | None:
        return next((s for s in self.segments if s.config_id == config_id), None)

    def as_dict(self) -> dict:
        return {"segments": [s.as_dict() for s in self.segments],
                "checklist": [c.as_dict() for c in self.checklist]}


def diagnose_session(data: SessionData, ctx: DoctorContext | None = None) -> SessionDiagnosis:
    ctx = ctx or DoctorContext()
    diagnoses: list[SegmentDiagnosis] = []
    segments = session_segments(data)
    for stats in segments:
        previous = diagnoses[-1] if diagnoses else None
        entry = data.configs.get(previous.config_id) if previous else None
        diagnoses.append(diagnose(data, stats.config_id, ctx, stats=stats, previous=previous,
                                  previous_options=entry.options if entry else None,
                                  segments=segments))
    return SessionDiagnosis(tuple(diagnoses), checklist(data, diagnoses, ctx, segments))


def attach_diagnoses(document: dict[str, Any], data: SessionData,
                     live_parts: tuple[DeviceSample | None, RooflineStatus | None]
                     ) -> dict[str, Any]:
    """The session JSON's `segments[].diagnosis`, from its records and what it saved beside them."""
    report = diagnose_session(data, context_from_document(document, live_parts))
    for segment in document.get("segments", []):
        found = report.segment(segment.get("config_id"))
        if found is not None:
            segment["diagnosis"] = found.as_dict()
    return document
