"""What tune's report holds (report.py writes it) for `tune --search quick|exhaustive`, before
and after every trial: every trial with its constraints, the Pareto frontier of goodput
against p95 (each relative to the default, so the machine's drift between trials cancels) and
its knee, and the chosen config's gain over the default with its interval."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from probe.common.units import fmt_fraction, fmt_ms, fmt_num
from probe.report_charts.canvas import (
    Caption,
    ChartsUnavailable,
    date_text,
    require_matplotlib,
    save,
    warnings_to_log,
)
from probe.report_charts.tune_charts import FRONTIER_CHART, TunePoint, frontier_chart
from probe.session_store.tables import table
from probe.tune.candidates import opt_line
from probe.tune.combo import ComboState
from probe.tune.confirm import confirmation_markdown
from probe.tune.frontier import frontier, knee
from probe.tune.report import write_report
from probe.tune.trials import DONE, ENERGY, FIGURES, Ratio, Trial, best
from probe.tune.tuned_settings import rerun_flags

SHOWN_BEST = 3
# how tune.md names what the chosen config has the best of
BEST_OF = {"goodput": "most goodput", "tokens": "most tokens/s", "p95": "lowest p95",
           ENERGY: "fewest joules per good token"}


def frontier_trials(trials: list[Trial]) -> tuple[list[Trial], Trial | None]:
    """The feasible trials on the frontier of (goodput ↑, p95 ↓) relative to the default,
    most goodput first, and its knee."""
    scored = [t for t in trials if t.feasible and "goodput" in t.vs_default
              and "p95" in t.vs_default]
    points = [(t.vs_default["goodput"].value, t.vs_default["p95"].value) for t in scored]
    front = frontier(points)
    at = knee(points, front)
    return [scored[i] for i in front], (None if at is None else scored[at])


def gain_text(ratio: Ratio | None) -> str:
    if ratio is None:
        return "—"
    if ratio.low == ratio.high:          # one value a side: no range to show
        return f"{(ratio.value - 1) * 100:+.0f}%"
    return (f"{(ratio.value - 1) * 100:+.0f}% ({(ratio.low - 1) * 100:+.0f}% to "
            f"{(ratio.high - 1) * 100:+.0f}%)")


def _slim(trial: Trial) -> dict:
    return {"number": trial.number, "label": trial.setup.label(),
            "options": trial.options.as_dict(), "settings": trial.settings.as_dict(),
            "goodput_rps": trial.goodput_rps,
            "p95_ms": trial.p95_ms,
            "vs_default": {k: r.as_dict() for k, r in trial.vs_default.items()}}


def combo_document(state: ComboState, *, search: dict, slo_text: str, settings: dict,
                   done: bool, edges_for: Callable[[int], tuple[int, ...]] | None = None,
                   confirmation: dict | None = None) -> dict:
    """`edges_for(k)`: the planner's bucket edges for the trace (the final's --buckets);
    `confirmation`: --confirm's replay of the chosen config, its parts and the default."""
    objective = search["objectives"][0]
    chosen = best(state.trials, objective)
    front, bend = frontier_trials(state.trials)
    final = None
    if chosen is not None:
        flags = rerun_flags(chosen.setup, edges_for) if edges_for else ""
        line = " ".join(p for p in (opt_line(chosen.options), flags) if p)
        final = {"trial": chosen.number, "options": chosen.options.as_dict(),
                 "settings": chosen.settings.as_dict(), "label": chosen.setup.label(),
                 "opt_line": opt_line(chosen.options), "settings_flags": flags,
                 "rerun": (f"infertop replay --model {settings.get('model', '?')} --trace "
                           f"{settings.get('trace', '?')} {line}".rstrip()
                           if edges_for else None),
                 "better_than_default": (chosen.vs_default["goodput"].as_dict()
                                         if "goodput" in chosen.vs_default else None),
                 "objective_vs_default": (chosen.vs_default[objective].as_dict()
                                          if objective in chosen.vs_default else None)}
    return {"search": search, "slo_text": slo_text, "settings": settings, "done": done,
            "stopped": state.stopped, "refused": state.refused,
            "default_options": state.default.options.as_dict(),
            "default_settings": state.default.settings.as_dict(),
            "trials": [t.as_dict() for t in state.trials],
            "frontier": [_slim(t) for t in front],
            "knee": None if bend is None else _slim(bend), "final": final,
            "confirmation": confirmation}


def combo_markdown(document: dict, state: ComboState) -> str:
    settings, search = document["settings"], document["search"]
    objective = search["objectives"][0]
    lines = [f"# infertop tune --search {search['mode']}: {settings['model']} on "
             f"{settings['trace']}", "",
             f"- SLO: `{document['slo_text']}`; objective(s): {', '.join(search['objectives'])}",
             f"- each trial: {settings['requests']} requests, {settings['repeats']} repeat(s), "
             "measured warm, alternated run by run with the best config so far; its gain over "
             "the default is its ratio to that control times the control's own (the interval: "
             "the repeats' ranges)",
             f"- command: `{settings['command']}`", ""]
    ranked = sorted((t for t in state.trials if t.feasible and objective in t.vs_default
                     and t.control is not None),
                    key=lambda t: t.vs_default[objective].value, reverse=True)
    if not FIGURES[objective]:
        ranked.reverse()
    if ranked:
        lines += ["## Best configs against the default", ""]
        for t in ranked[:SHOWN_BEST]:
            energy = (f", J/good token {gain_text(t.vs_default.get(ENERGY))}"
                      if ENERGY in t.vs_default else "")
            lines.append(f"- trial {t.number}, `{t.setup.label()}`: goodput "
                         f"{gain_text(t.vs_default.get('goodput'))}, p95 "
                         f"{gain_text(t.vs_default.get('p95'))}{energy} against the default")
        lines.append("")
    names = sorted({k for t in state.trials for k in t.constraints})
    # energy's column only where a trial measured it (no counter: the refusal line says why)
    joules = any(t.j_per_good_token is not None for t in state.trials)
    rows = []
    front = {t["number"] for t in document["frontier"]}
    bend = (document["knee"] or {}).get("number")
    for t in state.trials:
        marks = ("frontier" if t.number in front else "") + (" knee" if t.number == bend else "")
        rows.append([str(t.number), f"`{t.setup.label()}`", t.status, fmt_num(t.goodput_rps, 3),
                     fmt_ms(t.p95_ms), gain_text(t.vs_default.get("goodput")),
                     *([fmt_num(t.j_per_good_token, 3)] if joules else []),
                     *[_met(t, n) for n in names], marks.strip(),
                     t.reason or t.source])
    lines += ["## Trials", "",
              table(["#", "config", "status", "goodput req/s", "p95", "goodput vs default",
                     *(["J/good token"] if joules else []), *names, "frontier",
                     "why / source"], rows), ""]
    final = document["final"]
    if final:
        shown = " ".join(p for p in (final["opt_line"], final["settings_flags"]) if p)
        flags = f"`{shown}`" if shown else "(no --opt: the default)"
        lines += [f"**Chosen config** ({BEST_OF[objective]} within the constraints): "
                  f"{final['label']} {flags}", ""]
        if final.get("rerun"):
            lines += [f"Serve it again: `{final['rerun']}`", ""]
    else:
        lines += ["**No trial met every constraint.**", ""]
    if document["knee"]:
        lines += [f"Knee of the goodput/p95 frontier (the frontier point farthest from the "
                  f"line joining its ends): trial {document['knee']['number']}, "
                  f"{document['knee']['label']}.", ""]
    lines += confirmation_markdown(document.get("confirmation"))
    chart = document.get("frontier_chart") or {}
    if chart.get("file"):
        lines += [f"![goodput against p95, relative to the default: the frontier, its knee "
                  f"and the default]({chart['file']})", ""]
    elif chart.get("unavailable"):
        lines += [f"Frontier chart not drawn: {chart['unavailable']}.", ""]
    if document.get("refused"):
        lines += [f"Stopped: {document['refused']}.", ""]
    elif document["stopped"]:
        lines += [f"Stopped early: {document['stopped']}. `infertop tune --resume DIR` "
                  "continues it.", ""]
    lines.append("Each run's session is in `runs/`.")
    return "\n".join(lines) + "\n"


def _met(trial: Trial, name: str) -> str:
    c = trial.constraints.get(name)
    if c is None:
        return "—"
    value = fmt_fraction(c.value) if name in ("slo_attainment", "drift") else fmt_num(c.value, 3)
    return f"{'met' if c.met else 'MISSED'} {value}"


def chart_points(state: ComboState, document: dict) -> list[TunePoint]:
    """Every finished trial with a goodput and a p95 ratio to the default, as tune.json holds
    them, with its place: on the frontier, the knee, the default."""
    front = {t["number"] for t in document["frontier"]}
    bend = (document["knee"] or {}).get("number")
    return [TunePoint(t.number, t.setup.label(), t.vs_default["goodput"].value,
                      t.vs_default["p95"].value, t.feasible, t.number in front,
                      t.number == bend, t.control is None and t.setup == state.default)
            for t in state.trials
            if t.status == DONE and "goodput" in t.vs_default and "p95" in t.vs_default]


def frontier_chart_entry(state: ComboState, document: dict) -> dict:
    """tune.json's `frontier_chart` before it is drawn: {"file": name}, or why it will not be."""
    if not chart_points(state, document):
        return {"unavailable": "no trial measured both goodput and p95 yet"}
    try:
        require_matplotlib()
    except ChartsUnavailable as exc:
        return {"unavailable": str(exc)}
    return {"file": f"{FRONTIER_CHART}.svg"}


def write_frontier_chart(out: Path, state: ComboState, document: dict) -> None:
    """tune_frontier.svg beside tune.md, where tune.json's `frontier_chart` names its file."""
    name = document["frontier_chart"].get("file")
    if not name:
        return
    settings = document["settings"]
    caption = Caption(str(settings.get("device", "device not recorded")),
                      str(settings.get("model", "?")), str(settings.get("trace", "?")),
                      date_text(time.time()))
    with warnings_to_log("tune frontier chart"):
        save(frontier_chart(chart_points(state, document), caption), out / name)


def write_combo(out: Path, state: ComboState, **context) -> None:
    document = combo_document(state, **context)
    document["frontier_chart"] = frontier_chart_entry(state, document)
    write_report(out, document, lambda d: combo_markdown(d, state),
                 lambda folder, d: write_frontier_chart(folder, state, d))
