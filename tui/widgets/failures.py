"""Failed requests, shown only once there are some: how many, of which kinds (the exception
type their error starts with) in the title, and the latest one's reason."""

from __future__ import annotations

from rich.text import Text

from probe.common.units import fmt_count
from probe.contract.live import LiveView
from tui import derive
from tui.widgets.panel import Panel, Parts

TITLE = "Failures"


def failures_title(failures: derive.Failures) -> Text:
    text = Text(f"{TITLE}: {fmt_count(failures.failed)} failed")
    if failures.by_kind:
        scope = ("" if failures.recent_failed >= failures.failed
                 else f" (latest {fmt_count(failures.recent_failed)})")
        kinds = " · ".join(f"{kind} {fmt_count(count)}" for kind, count in failures.by_kind)
        text.append(f" · by kind{scope}: {kinds}")
    return text


def latest_failure(failures: derive.Failures) -> Text:
    latest = failures.latest
    if latest is None:
        return Text("no failed request among the recent ones", style="dim")
    text = Text("latest ", style="bold red", no_wrap=True, overflow="ellipsis")
    text.append(f"{latest.id} ({latest.config_id}): ", style="bold")
    text.append(latest.error or "no reason recorded")
    return text


class FailuresPanel(Panel):
    TITLE = TITLE

    def render_key(self, view: LiveView) -> object:
        failed = [r for r in view.recent if not r.ok]
        return view.replay.failed, failed[-1:], len(failed)

    def draw(self, view: LiveView, width: int) -> None:
        failures = derive.failures(view)
        self.display = failures.failed > 0 or failures.latest is not None
        self.border_title = failures_title(failures)   # a Text: error kinds are never markup
        super().draw(view, width)

    def render_parts(self, view: LiveView, width: int) -> Parts:
        return Parts(latest_failure(derive.failures(view)), "")
