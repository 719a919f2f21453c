"""The doctor's line on the dashboard: the verdict and the next step for the served config's
requests in the window, cut to one row (D opens the full doctor screen)."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from probe.analysis.diagnosis import LABELS, SegmentDiagnosis
from probe.analysis.doctor_text import short_next_step
from probe.common.units import fmt_ms
from probe.contract.live import LiveView

KEY = "D"
WAITING = "doctor: waiting for requests to finish"


def short_verdict(diagnosis: SegmentDiagnosis) -> str:
    """"p95 33.1 s: 91% compile stall" or "healthy: p95 1.2 s, 96% decode"."""
    top, p95 = diagnosis.tail.top, fmt_ms(diagnosis.tail.latency_p95_ms)
    if top is None:
        return diagnosis.verdict
    share = f"{100 * top.share:.0f}% {LABELS[top.cause]}"
    return f"healthy: p95 {p95}, {share}" if diagnosis.healthy else f"p95 {p95}: {share}"


def doctor_line(view: LiveView | None, width: int) -> Text:
    diagnosis = view.diagnosis if view is not None else None
    hint = f" ({KEY}: why)"
    if diagnosis is None:
        return Text(WAITING, style="dim", no_wrap=True, overflow="ellipsis")
    text = Text("doctor ", style="bold", no_wrap=True, overflow="ellipsis")
    text.append(short_verdict(diagnosis),
                style="green" if diagnosis.healthy else "bold yellow")
    text.append(" · ")
    text.append(short_next_step(diagnosis, view.checklist if view is not None else ()),
                style="bold cyan")
    step = diagnosis.next_step
    room = width - len(text.plain) - len(hint)
    if step is not None and room > 12:
        predicted = f" ({step.predicted})"
        text.append(predicted if len(predicted) <= room else predicted[:room - 2] + "…)",
                    style="dim")
    text.append(hint, style="dim")
    return text


class DoctorLine(Static):
    view: reactive[LiveView | None] = reactive(None)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(WAITING, id=id, markup=False)
        self._drawn: object = None

    def watch_view(self, view: LiveView | None) -> None:
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        # The line keeps its row when the failures panel appears (issue 38: it vanished);
        # the failures panel takes a row of its own
        width = self.content_size.width or 80
        diagnosis = self.view.diagnosis if self.view is not None else None
        key = (None if diagnosis is None else (diagnosis.verdict, diagnosis.next_step), width)
        if key != self._drawn:
            self._drawn = key
            self.update(doctor_line(self.view, width), layout=False)
