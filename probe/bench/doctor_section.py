"""bench's report: the doctor's verdict and next step for each run, read from the run's session
snapshot (its `segments[].diagnosis`, which the snapshot carries from probe/analysis/diagnosis)."""

from __future__ import annotations

import json
from pathlib import Path

from probe.session_store.tables import table


def doctor_by_run(out: Path, runs: dict) -> dict[str, list[dict]]:
    """Each run's snapshot (runs served together share one) → its segments' diagnoses
    ({config_id, verdict, next_step, top_cause})."""
    found: dict[str, list[dict]] = {}
    for run in runs.values():
        snapshot = run.get("snapshot") if isinstance(run, dict) else None
        if not snapshot or snapshot in found:
            continue
        try:
            document = json.loads((out / snapshot).read_text())
        except (OSError, ValueError):
            continue
        found[snapshot] = [_entry(s) for s in document.get("segments", [])
                      if isinstance(s, dict) and isinstance(s.get("diagnosis"), dict)]
    return found


def _entry(segment: dict) -> dict:
    diagnosis = segment["diagnosis"]
    causes = diagnosis.get("tail", {}).get("causes") or [{}]
    return {"config_id": segment.get("config_id"), "verdict": diagnosis.get("verdict"),
            "next_step": diagnosis.get("next_step"), "top_cause": causes[0].get("cause")}


def _step_text(step: dict | None) -> str:
    if not step:
        return "none"
    change = " ".join(f"{k}={v}" for k, v in (step.get("options") or {}).items())
    return f"{change}: {step.get('predicted')}"


def doctor_markdown(report: dict) -> list[str]:
    doctor = report.get("doctor") or {}
    rows = [[f"`{snapshot}`", e.get("config_id"), e.get("top_cause"), e.get("verdict"),
             _step_text(e.get("next_step"))]
            for snapshot, entries in doctor.items() for e in entries]
    if not rows:
        return []
    return ["## The doctor, run by run", "",
            "Each run's slowest requests (at or above its p95) explained by cause, from its "
            "snapshot (`infertop doctor SNAPSHOT` shows the evidence and the checklist).", "",
            table(["snapshot", "config", "largest cause", "verdict", "next step"], rows), ""]
