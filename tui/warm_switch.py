"""The warm switch, as the dashboard runs it: with `S` on, an option change that needs a compile
starts a side engine on the new config that compiles and prewarms beside the serving one; when
it is ready the session cuts over to it (the engine handle's `warm_switch`/`cut_over`), so no
request waits on the compile. `S` again: the cold switch (requests wait on the compile)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from textual.message import Message

from probe.analysis.side_compile_cost import SideCompileCost, side_compile_cost
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui.pending_wait import fmt_wait

SWITCH_KEY = "S"


@dataclass(frozen=True)
class WarmSwitch:
    target: OptConfig
    serving_id: str             # the config that keeps serving meanwhile
    started_s: float            # session time the side engine was asked for
    shapes: int = 0             # shapes it prewarms (0 until it says)
    cut_over_s: float | None = None
    seconds: float | None = None    # the side compile's wall time, once ready
    cost: SideCompileCost | None = None

    def progressed(self, shapes: int) -> WarmSwitch:
        return replace(self, shapes=shapes)

    def done(self, at_s: float, seconds: float, shapes: int,
             view: LiveView | None) -> WarmSwitch:
        return replace(self, cut_over_s=at_s, seconds=seconds, shapes=shapes,
                       cost=self.cost_in(view, at_s))

    def cost_in(self, view: LiveView | None, now_s: float) -> SideCompileCost | None:
        if view is None:
            return self.cost
        return side_compile_cost(view.recent, self.serving_id, self.started_s, now_s) or self.cost


def shapes_text(shapes: int) -> str:
    return f"{shapes} shape{'s' * (shapes != 1)}" if shapes else "its shapes"


def warm_line(switch: WarmSwitch, view: LiveView | None, now_s: float) -> str:
    """ "warm switch to compile=default: prewarming 4 shapes beside c2, 35 s so far — serving
    slowed 1.8× by the side compile (…)" (so far), then "… cut over, no request waited — 41 s
    prewarming 4 shapes beside c2; its compiles and what they cost c2: the engine's notice"
    (the engine charges the side compiles to the new config and says their cost, over their
    own span, in a notice the session keeps) """
    target = switch.target.label()
    if switch.cut_over_s is None:
        so_far = fmt_wait(max(now_s - switch.started_s, 0.0))
        cost = switch.cost_in(view, now_s)
        tail = f" — {cost.text()}" if cost else f" — {switch.serving_id} serves meanwhile"
        if view is not None and view.compiling is not None:     # it is stalled, not serving
            who = view.compiling.request_id or "a prewarm"
            tail = (f" — {switch.serving_id} is stalled meanwhile, compiling for {who} "
                    f"({view.replay.queue_depth} queued)")
        return (f"warm switch to {target}: prewarming {shapes_text(switch.shapes)} beside "
                f"{switch.serving_id}, {so_far} so far{tail}")
    took = fmt_wait(switch.seconds or 0.0)
    # what it cost is the engine's notice, from the saved records (side_compiles): one figure
    return (f"warm switch to {target}: cut over, no request waited — {took} prewarming "
            f"{shapes_text(switch.shapes)} beside {switch.serving_id}; its compiles and what "
            f"they cost {switch.serving_id}: the engine's notice")


def wants_warm(requested: OptConfig, view: LiveView | None) -> bool:
    """A warm switch only where there is something to prewarm: a compiled config that differs
    from the one served (eager configs switch between requests without a stall anyway)."""
    return view is not None and requested.compiled and requested != view.options


class WarmSwitchEvent(Message):
    """A side engine's WarmProgress/WarmFailed, or CutOverDone once the reader cut over."""

    def __init__(self, event: Any) -> None:
        super().__init__()
        self.event = event
