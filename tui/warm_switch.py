"""The warm switch, as the dashboard runs it: with `S` on, an option change that needs a compile
starts a side engine on the new config that compiles and prewarms beside the serving one; when
it is ready the session cuts over to it (the link's WarmSwitch ask; the link cuts over), so no
request waits on the compile. `S` again: the cold switch (requests wait on the compile)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from probe.analysis.side_compile_cost import SideCompileCost, side_compile_cost
from probe.contract.live import LiveView
from probe.contract.options import OptConfig
from tui.fit_line import Part, part
from tui.pending_wait import fmt_wait

SWITCH_KEY = "S"


@dataclass(frozen=True)
class SwitchUnderWay:
    target: OptConfig
    serving_id: str             # the config that keeps serving meanwhile
    started_s: float            # session time the side engine was asked for
    shapes: int = 0             # shapes it prewarms (0 until it says)
    cut_over_s: float | None = None
    seconds: float | None = None    # the side compile's wall time, once ready
    cost: SideCompileCost | None = None

    def done(self, at_s: float, seconds: float, shapes: int,
             view: LiveView | None) -> SwitchUnderWay:
        return replace(self, cut_over_s=at_s, seconds=seconds, shapes=shapes,
                       cost=self.cost_in(view, at_s))

    def cost_in(self, view: LiveView | None, now_s: float) -> SideCompileCost | None:
        if view is None:
            return self.cost
        return side_compile_cost(view.recent, self.serving_id, self.started_s, now_s) or self.cost


def shapes_text(shapes: int) -> str:
    return f"{shapes} shape{'s' * (shapes != 1)}" if shapes else "its shapes"


def warm_parts(switch: SwitchUnderWay, view: LiveView | None, now_s: float) -> tuple[Part, ...]:
    """The `⇄` line's parts, shortened by meaning where the line is narrow (tui/fit_line.py):
    what the switch is doing stays, its detail shortens, the pointer to the notice goes first.
    "warm switch to compile=default: prewarming 4 shapes beside c2, 35 s so far · serving
    slowed 1.8× by the side compile (…)" (so far), then "… cut over, no request waited · 41 s
    prewarming 4 shapes beside c2 · its compiles and what they cost c2: the engine's notice"
    (the engine charges the side compiles to the new config and says their cost, over their
    own span, in a notice the session keeps: one figure)."""
    target, serving = switch.target.label(), switch.serving_id
    if switch.cut_over_s is None:
        so_far = fmt_wait(max(now_s - switch.started_s, 0.0))
        head = part(f"warm switch to {target}: prewarming {shapes_text(switch.shapes)} beside "
                    f"{serving}, {so_far} so far", f"warm switch to {target}: {so_far} so far",
                    9)
        cost = switch.cost_in(view, now_s)
        if view is not None and view.compiling is not None:     # it is stalled, not serving
            who = view.compiling.request_id or "a prewarm"
            queued = view.replay.queue_depth
            return head, part(f"{serving} is stalled meanwhile, compiling for {who} "
                              f"({queued} queued)", f"{serving} stalled ({queued} queued)", 5)
        if cost is not None:
            return head, part(cost.text(), cost.text().split(" by ")[0], 5)
        return head, part(f"{serving} serves meanwhile", None, 1)
    took = fmt_wait(switch.seconds or 0.0)
    return (part(f"warm switch to {target}: cut over, no request waited",
                 f"cut over to {target}, no request waited", 9),
            part(f"{took} prewarming {shapes_text(switch.shapes)} beside {serving}",
                 f"{took} beside {serving}", 5),
            part(f"its compiles and what they cost {serving}: the engine's notice", None, 1))


def switch_on_parts(*, server: bool = False) -> tuple[Part, ...]:
    """The `⇄` line while the warm switch is on and no switch runs (`server`: attached to
    one, where every change is a warm switch and `S` changes nothing)."""
    if server:
        return (part("a server switches warm: a changed config is prewarmed beside the "
                     "serving one, then cut over; x gives a switch up", "warm switch", 9),)
    return (part("warm switch on: a config that compiles is prewarmed beside the serving one, "
                 "then cut over", "warm switch on", 9),
            part(f"{SWITCH_KEY}: cold switch", None, 1))


def warm_line(switch: SwitchUnderWay, view: LiveView | None, now_s: float) -> str:
    """The same, whole, as one sentence (the notification at the cut over)."""
    return " — ".join(p.full.plain for p in warm_parts(switch, view, now_s))


def wants_warm(requested: OptConfig, view: LiveView | None) -> bool:
    """A warm switch only where there is something to prewarm: a compiled config that differs
    from the one served (eager configs switch between requests without a stall anyway)."""
    return view is not None and requested.compiled and requested != view.options
