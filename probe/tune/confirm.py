"""`tune --search quick|exhaustive --confirm`: after the search, an independent check that the
chosen combination beats its parts. The default, each single change of the chosen config
served alone (with the settings the chosen config gives it), and the chosen config itself are
replayed again on the same requests, fresh engines, alternated run by run, `--repeats` times
each; the chosen config is confirmed when its goodput beats every other arm's beyond the
repeats' noise (the bench's verdict, probe/runs/verdict.py). Pure apart from the `run_once`
it is given."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from probe.common.units import fmt_ms, fmt_num
from probe.contract.options import OPTION_BY_KEY
from probe.runs.spread import Spread
from probe.runs.verdict import compare
from probe.tune.space import Dimension, chosen_of, config_of
from probe.tune.tuned_settings import Setup

BETTER, WORSE = "more goodput", "less goodput"


@dataclass(frozen=True)
class ArmRun:
    """One replay of an arm: its goodput at the rate, its p95, its saved session."""
    goodput_rps: float | None
    p95_ms: float | None
    session: str | None = None


@dataclass(frozen=True)
class Arm:
    role: str                        # "default" | "part" | "chosen"
    setup: Setup
    change: str = ""                 # a part: the one change it holds

    @property
    def label(self) -> str:
        return self.setup.label()


@dataclass
class Confirmation:
    arms: list[Arm]
    runs: dict[int, list[ArmRun]] = field(default_factory=dict)   # by arm index
    skipped: list[str] = field(default_factory=list)   # changes that cannot be served alone
    interrupted: bool = False

    def figure(self, at: int) -> Spread:
        return Spread.of(r.goodput_rps for r in self.runs.get(at, []))

    def verdicts(self) -> list[dict]:
        """The chosen config's goodput against each other arm's."""
        chosen = len(self.arms) - 1
        out = []
        for at, arm in enumerate(self.arms[:-1]):
            result = compare(self.figure(chosen), self.figure(at), lower_is_better=False,
                             better=BETTER, worse=WORSE)
            out.append({"against": arm.label, "role": arm.role, "verdict": result.verdict,
                        "ratio": result.ratio, "text": result.text})
        return out

    @property
    def confirmed(self) -> bool:
        found = self.verdicts()
        return bool(found) and not self.interrupted and all(v["verdict"] == BETTER
                                                            for v in found)

    def as_dict(self) -> dict:
        return {"arms": [{"role": a.role, "label": a.label, "change": a.change,
                          "options": a.setup.options.as_dict(),
                          "settings": a.setup.settings.as_dict(),
                          "goodput": self.figure(i).as_dict(),
                          "p95_ms": [r.p95_ms for r in self.runs.get(i, [])],
                          "sessions": [r.session for r in self.runs.get(i, []) if r.session]}
                         for i, a in enumerate(self.arms)],
                "verdicts": self.verdicts(), "skipped": self.skipped,
                "interrupted": self.interrupted, "confirmed": self.confirmed}


def arms_for(default: Setup, chosen: Setup, dims: tuple[Dimension, ...]
             ) -> tuple[list[Arm], list[str]]:
    """The default, each change of `chosen` alone on the default (an option with the settings
    `chosen` gives it where they act; a setting alone where its option is the default's
    already), and `chosen`; and the changes that cannot be served alone (an option that needs
    another, which the default does not have)."""
    base, mine = default.options.as_dict(), chosen.options.as_dict()
    arms, skipped = [Arm("default", default)], []
    seen = {default, chosen}
    changes = [(k, v) for k, v in mine.items() if v != base[k]]
    changes += [(k, str(v)) for k, v in chosen.settings.as_dict().items()
                if getattr(default.settings, k) not in (None, v)]
    for key, value in changes:
        if key in OPTION_BY_KEY:
            options = default.options.with_option(key, value)
            setup = config_of(options, chosen_of(Setup(options, chosen.settings), dims), dims)
        else:
            values = {**default.settings.as_dict(), key: int(value)}
            setup = config_of(default.options, {**chosen_of(default, dims), **values}, dims)
        if setup in seen:
            if setup == default:
                skipped.append(f"{key}={value}: not served alone (it needs another change "
                               f"of the chosen config)")
            continue
        seen.add(setup)
        arms.append(Arm("part", setup, f"{key}={value}"))
    arms.append(Arm("chosen", chosen))
    return arms, skipped


def confirm(arms: list[Arm], skipped: list[str], run_once: Callable[[Setup, str, int], ArmRun],
            *, repeats: int, stop: threading.Event | None = None,
            say: Callable[[str], None] = lambda text: None) -> Confirmation:
    """Replay every arm `repeats` times, alternated: each repeat starts one arm later than the
    one before (with two arms, A B then B A), so over as many repeats as arms each arm has run
    in every place once, and a machine that slows steadily costs no arm more than another."""
    stop = stop or threading.Event()
    result = Confirmation(arms, skipped=list(skipped))
    for repeat in range(repeats):
        for at in [(i + repeat) % len(arms) for i in range(len(arms))]:
            if stop.is_set():
                result.interrupted = True
                return result
            arm = arms[at]
            say(f"confirm: {arm.role} {arm.label}: run {repeat + 1}/{repeats}")
            result.runs.setdefault(at, []).append(run_once(arm.setup, arm.role, repeat))
    return result


def confirmation_markdown(document: dict | None) -> list[str]:
    """tune.md's section: each arm's goodput and p95, and the verdict against the chosen."""
    if not document:
        return []
    lines = ["## Confirmation: the chosen config against its parts and the default", ""]
    if document["interrupted"]:
        lines += ["Interrupted before every arm ran: not confirmed.", ""]
    for arm in document["arms"]:
        goodput = arm["goodput"]
        p95 = [v for v in arm["p95_ms"] if v is not None]
        lines.append(f"- {arm['role']} `{arm['label']}`"
                     + (f" ({arm['change']} alone)" if arm["change"] else "")
                     + f": goodput {fmt_num(goodput.get('median'), 3)} req/s "
                       f"[{fmt_num(goodput.get('low'), 3)}–{fmt_num(goodput.get('high'), 3)}]"
                     + (f", p95 {', '.join(fmt_ms(v) for v in p95)}" if p95 else ""))
    lines.append("")
    for verdict in document["verdicts"]:
        lines.append(f"- chosen against {verdict['role']} `{verdict['against']}`: "
                     f"{verdict['text']}")
    lines += [""] + [f"- {why}" for why in document["skipped"]]
    word, beats = (("**Confirmed**", "beats") if document["confirmed"]
                   else ("**Not confirmed**", "does not beat"))
    lines += ["", f"{word}: the chosen config {beats} every part and the default beyond the "
                  "repeats' noise.", ""]
    return lines
