"""`D`: the doctor's full report on the window's requests of the served config — the verdict,
the next step, the tail's latency by cause with its evidence, the findings, and the
production-readiness checklist (probe/analysis/doctor_text.py writes the same for the CLI)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from probe.analysis.checklist import ChecklistItem
from probe.analysis.diagnosis import SegmentDiagnosis
from probe.analysis.doctor_text import segment_lines
from tui.live_ab import AB_STEP_KEY

STATUS_STYLE = {"pass": "green", "fail": "bold red", "not yet": "yellow"}


def report_text(diagnosis: SegmentDiagnosis | None, checklist: tuple[ChecklistItem, ...],
                label: str = "") -> Text:
    text = Text()
    if diagnosis is None:
        text.append("No request of the served config has finished in the window yet.\n",
                    style="dim")
    else:
        text.append("\n".join(segment_lines(diagnosis, label, checklist)) + "\n")
    if checklist:
        text.append("\nproduction-readiness checklist\n", style="bold")
        for item in checklist:
            text.append(f"  {item.status:<8}", style=STATUS_STYLE.get(item.status, ""))
            text.append(f" {item.item}: ", style="bold")
            text.append(f"{item.evidence}\n")
    return text


class DoctorScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,D", "dismiss", "close the doctor"),
                Binding(AB_STEP_KEY, "verify", "A/B the next step")]

    def __init__(self, diagnosis: SegmentDiagnosis | None, checklist: tuple[ChecklistItem, ...],
                 label: str = "", ab: str = "") -> None:
        """`ab`: a live A/B's comparison (tui/live_ab.py's ab_report), shown first."""
        super().__init__()
        self._text = report_text(diagnosis, checklist, label)
        if ab:
            self._text = Text(ab + "\n\n", style="bold") + self._text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="doctor-body") as body:
            body.border_title = "the doctor: why the slowest requests were slow"
            body.border_subtitle = f"esc or D closes · {AB_STEP_KEY}: A/B the next step live"
            yield Static(self._text, id="doctor-report")   # a Text: ids and errors are data

    def action_verify(self) -> None:
        """Close, and run the next step as a live A/B (the app says why when it cannot)."""
        self.dismiss()
        self.app.call_later(self.app.run_action, "ab_next_step")
