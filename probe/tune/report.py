"""DIR/tune.json, tune.md and report.html, by one writer for both searches (`write_report`),
rewritten (atomically) after every step or trial: an interrupted or killed tune leaves what it
finished. The hill-climb's content is here; the combo search's in combo_report.py."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from probe.common.atomic import write_atomic, write_json_atomic
from probe.contract.objective import Slo
from probe.report_charts.html_report import html_document
from probe.session_store.tables import text_table
from probe.tune.candidates import opt_line
from probe.tune.search import TuneState, step_row


def tune_document(state: TuneState, *, slo: Slo, target: float, rate_rps: float | None,
                  capacity: bool, settings: dict, done: bool) -> dict:
    final = state.final
    return {"slo": slo.as_dict(), "slo_text": slo.text(), "slo_target": target,
            "rate_rps": rate_rps, "mode": "capacity" if capacity else "goodput at the rate",
            "settings": settings, "done": done, "stopped": state.stopped,
            "steps": [s.as_dict() for s in state.steps],
            "final": {"options": final.as_dict(), "opt_line": opt_line(final),
                      "label": final.label()}}


def tune_markdown(document: dict, state: TuneState, capacity: bool) -> str:
    settings = document["settings"]
    figure = "capacity at the SLO" if capacity else "goodput"
    lines = [f"# infertop tune: {settings['model']} on {settings['trace']}", "",
             f"- SLO: `{document['slo_text']}`"
             + (f", capacity at ≥{document['slo_target']:.0%} attainment" if capacity
                else f", at {document['rate_rps']:.3g} req/s offered (open loop)"),
             f"- each config: {settings['requests']} requests, {settings['repeats']} "
             f"repeat(s), measured warm; budget {settings['budget_min']:g} min",
             "- each change is measured alternated with the current config, rerun beside it "
             "run by run (the *current, rerun* column), and judged against that rerun",
             f"- command: `{settings['command']}`", ""]
    rows = [step_row(s) for s in state.steps]
    lines += ["```", text_table(["change", figure, "current, rerun", "attained", "p95",
                                     "drift", "", "why"], rows),
              "```", ""]
    final = document["final"]
    speed = settings.get("replay_speed")
    # the same requests at the same offered rate, for an independent replay of the choice
    load = f" --requests {settings['requests']} --speed {speed:.4g}" if speed else ""
    lines += [f"**Chosen config**: {final['label']}", "",
              "```", f"infertop replay --model {settings['model']} --trace {settings['trace']}"
              f"{load} --slo {document['slo_text']} {final['opt_line']}".rstrip(), "```", ""]
    if document["stopped"]:
        lines.append(f"Stopped early: {document['stopped']}.")
    saturated = saturation(state, capacity)
    if saturated:
        lines += [saturated, ""]
    lines.append("Each run's session is in `runs/` (compare two with `infertop snapshot "
                 "compare`).")
    return "\n".join(lines) + "\n"


def saturation(state: TuneState, capacity: bool) -> str:
    """At a rate every request of the kept config meets the SLO, goodput is the offered rate and
    no later change can show a gain: say so, and what would rank them ("": not the case)."""
    kept = [(s.change, s.measured) for s in state.steps if s.kept and s.measured is not None]
    if capacity or not kept or (kept[-1][1].slo_attainment or 0.0) < 1.0:
        return ""
    return (f"Every request met the SLO with {kept[-1][0]} (attainment 100%): goodput is "
            "bounded by the offered rate, so the changes after it could only tie. To rank "
            "them, raise `--rate` or search with `--find-capacity`.")


def write_report(out: Path, document: dict, markdown: Callable[[dict], str],
                 chart: Callable[[Path, dict], object] | None = None) -> None:
    """tune.json first (a chart that cannot be written, a full disk, never leaves a finished
    trial marked interrupted, and names its failure in `frontier_chart`), then `chart`, tune.md
    and report.html (the bench report's page), one file to open or send."""
    write_json_atomic(out / "tune.json", document)
    if chart is not None:
        try:
            chart(out, document)
        except OSError as exc:
            document["frontier_chart"] = {"unavailable": f"not written: {exc.strerror or exc}"}
            write_json_atomic(out / "tune.json", document)
            raise
    text = markdown(document)
    write_atomic(out / "tune.md", [text])
    write_atomic(out / "report.html", [html_document(text, out, "infertop tune")])


def write_tune(out: Path, state: TuneState, **context) -> None:
    write_report(out, tune_document(state, **context),
                 lambda document: tune_markdown(document, state, context["capacity"]))
