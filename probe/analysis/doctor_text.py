"""The doctor's report as text: `infertop doctor FILE`, the dashboard's doctor screen and bench's
report all show a diagnosis through these functions."""

from __future__ import annotations

from typing import Sequence

from probe.analysis.checklist import ChecklistItem
from probe.analysis.diagnosis import SegmentDiagnosis
from probe.analysis.session_diagnosis import SessionDiagnosis
from probe.common.units import fmt_fraction


def next_step_text(diagnosis: SegmentDiagnosis, checklist: Sequence[ChecklistItem] = ()) -> str:
    """The next step, agreeing with the checklist: a failed item with a fix is named — as the
    step when the tail's cause has none, or after the step, saying why the step comes first."""
    step = diagnosis.next_step
    fixes = [c for c in checklist if c.status == "fail" and c.fix]
    top = diagnosis.tail.top
    cause = f" ({top.cause})" if top is not None else ""
    if step is None:
        said = ("no change advised for the tail" if diagnosis.healthy else
                f"no option change addresses the tail's largest cause{cause}")
        if fixes:
            item = fixes[0]
            return f"{item.fix_text()}: the checklist's failed \"{item.item}\"; {said}"
        return said
    change = " ".join(f"{k}={v}" for k, v in step.options.items())
    text = f"{change}: {step.why}; predicted: {step.predicted}"
    others = [c for c in fixes if not any(step.options.get(k) == v for k, v in c.fix)]
    if others:
        item = others[0]
        text += (f"; then the checklist's failed \"{item.item}\" ({item.fix_text()}): the "
                 f"tail's largest cause{cause} comes first")
    return text


def short_next_step(diagnosis: SegmentDiagnosis, checklist: Sequence[ChecklistItem] = ()) -> str:
    """The dashboard's doctor line: the step's options, or the checklist's fix where the tail
    has none (next_step_text's words, cut short)."""
    step = diagnosis.next_step
    if step is not None:
        return "next: " + " ".join(f"{k}={v}" for k, v in step.options.items())
    fix = next((c for c in checklist if c.status == "fail" and c.fix), None)
    if fix is not None:
        return f"next: {fix.fix_text()} (checklist: {fix.item})"
    return "no change advised" if diagnosis.healthy else "no option addresses it"


def segment_lines(diagnosis: SegmentDiagnosis, label: str = "",
                  checklist: Sequence[ChecklistItem] = ()) -> list[str]:
    tail = diagnosis.tail
    title = f"{diagnosis.config_id}" + (f" [{label}]" if label else "")
    lines = [f"{title}: {tail.served} served, {tail.requests} in the tail (at or above p95)",
             f"  verdict: {diagnosis.verdict}",
             f"  next step: {next_step_text(diagnosis, checklist)}"]
    if diagnosis.tpot is not None and diagnosis.tpot.tpot_ms is not None:
        lines.append(f"  TPOT: {diagnosis.tpot.text()}")
    shown = [c for c in tail.causes if c.requests or abs(c.share) >= 0.0005]
    if shown:
        lines.append("  the tail's latency by cause:")
        width = max(len(c.cause) for c in shown)
        lines += [f"    {c.cause.ljust(width)}  {fmt_fraction(c.share):>6}  "
                  f"{c.requests:>4} req  {c.evidence}" for c in shown]
    if diagnosis.findings:
        lines.append("  findings:")
        lines += [f"    {f.finding}: {f.evidence}" for f in diagnosis.findings]
    if diagnosis.guard_groups:
        lines.append("  recompiles by guard:")
        for group in diagnosis.guard_groups:
            lines.append(f"    {group.text()}")
            lines.append(f"      fix: {group.fix.text}" if group.fix is not None else
                         "      fix: none predicted for this traffic" if group.sizes else
                         "      fix: none among the options (a guard on a value, not a shape)")
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
        lines += segment_lines(diagnosis, labels.get(diagnosis.config_id, ""),
                               report.checklist) + [""]
    if not report.segments:
        lines += ["no configs were served in this session", ""]
    return "\n".join(lines + checklist_lines(report))
