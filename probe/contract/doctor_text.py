"""The doctor's report as text: `infertop doctor FILE`, the dashboard's doctor screen and bench's
report all show a diagnosis through these functions."""

from __future__ import annotations

from probe.contract.diagnosis import SegmentDiagnosis, SessionDiagnosis
from probe.contract.units import fmt_fraction


def next_step_text(diagnosis: SegmentDiagnosis) -> str:
    step = diagnosis.next_step
    if step is None:
        return "no change advised" if diagnosis.healthy else "no option change addresses it"
    change = " ".join(f"{k}={v}" for k, v in step.options.items())
    return f"{change}: {step.why}; predicted: {step.predicted}"


def segment_lines(diagnosis: SegmentDiagnosis, label: str = "") -> list[str]:
    tail = diagnosis.tail
    title = f"{diagnosis.config_id}" + (f" [{label}]" if label else "")
    lines = [f"{title}: {tail.served} served, {tail.requests} in the tail (at or above p95)",
             f"  verdict: {diagnosis.verdict}",
             f"  next step: {next_step_text(diagnosis)}"]
    shown = [c for c in tail.causes if c.requests or abs(c.share) >= 0.0005]
    if shown:
        lines.append("  the tail's latency by cause:")
        width = max(len(c.cause) for c in shown)
        lines += [f"    {c.cause.ljust(width)}  {fmt_fraction(c.share):>6}  "
                  f"{c.requests:>4} req  {c.evidence}" for c in shown]
    if diagnosis.findings:
        lines.append("  findings:")
        lines += [f"    {f.finding}: {f.evidence}" for f in diagnosis.findings]
    return lines


def checklist_lines(report: SessionDiagnosis) -> list[str]:
    if not report.checklist:
        return []
    width = max(len(c.status) for c in report.checklist) + 2
    return ["production-readiness checklist:"] + [
        f"  {('[' + c.status + ']').ljust(width)} {c.item}: {c.evidence}" for c in report.checklist]


def report_text(report: SessionDiagnosis, labels: dict[str, str] | None = None) -> str:
    labels = labels or {}
    lines: list[str] = []
    for diagnosis in report.segments:
        lines += segment_lines(diagnosis, labels.get(diagnosis.config_id, "")) + [""]
    if not report.segments:
        lines += ["no configs were served in this session", ""]
    return "\n".join(lines + checklist_lines(report))
