"""report.json (every number) and report.md from it (every experiment in the seed's template,
tables GitHub renders), both written atomically."""

from __future__ import annotations

import datetime as dt
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Mapping

from probe.analysis.sequential import MARGIN
from probe.bench.doctor_section import doctor_by_run, doctor_markdown
from probe.bench.energy_section import energy_by_run, energy_markdown
from probe.bench.experiments import EXPERIMENTS, acceptance_checks, left_out
from probe.bench.goodput_section import goodput_markdown
from probe.bench.ledger_section import ledger_by_run, ledger_markdown
from probe.bench.nodes import Placement, nodes_markdown, place_runs
from probe.bench.runs_section import runs_markdown
from probe.bench.study_setup import print_written
from probe.bench.time_section import time_markdown, time_split
from probe.bench.torch_trace import INSTALL_HINT, TlparseReport, TraceFolder, run_tlparse
from probe.common.atomic import write_atomic, write_json_atomic
from probe.common.units import NO_DATA, fmt_s
from probe.report_charts.bench_figures import figures_or_reason
from probe.report_charts.html_report import html_document
from probe.report_charts.markdown import ACROSS_RUNS, figure_file_lines, figure_lines
from probe.runs.verdict import DRIFT_TOLERANCE
from probe.session_store.tables import table

REPORT_SCHEMA = "infertop-bench/1"

TEMPLATE_FIELDS = (("Hypothesis", "hypothesis"), ("Variable", "variable"),
                   ("Control", "control"), ("Expected", "expected"))


def report_document(settings, plan, environment: dict, study, *, interrupted: bool,
                    wall_s: float, torch_trace: TraceFolder | None,
                    tlparse: list[TlparseReport] | None, executor: dict | None = None) -> dict:
    sections = study.sections(environment)
    out = settings.out
    runs = study.runs_json()
    return {
        "schema": REPORT_SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "infertop " + " ".join(sys.argv[1:]),
        "settings": {"model": settings.model, "trace": settings.trace,
                     "device": environment["device"], "requests": len(plan.requests),
                     "repeats": settings.repeats, "quick": settings.quick,
                     "bucket_count": settings.bucket_count, "seed": settings.seed,
                     "experiments": list(settings.experiments),
                     "compile_backend": settings.compile_backend,
                     "torch_trace": settings.torch_trace, "profile": settings.profile,
                     "stopping": getattr(settings, "stopping", "sequential")},
        "environment": environment,
        "executor": executor or {"name": "local"},
        # --slo: what every run's goodput_rps, goodput_tokens_per_s, slo_attainment are against
        "slo": None if getattr(settings, "slo", None) is None else settings.slo.as_dict(),
        "plan": {"requests": [{**vars(r), "text": None} for r in plan.requests],
                 "planner_edges": list(plan.planner_edges), "pow2_edges": list(plan.pow2_edges)},
        "left_out": left_out(plan, settings.experiments),
        "experiments": sections,
        "runs": runs,
        "doctor": doctor_by_run(out, runs),
        "energy": energy_by_run(runs),
        "compile_ledger": ledger_by_run(out, runs),
        "checks": acceptance_checks(sections),
        "wall_s": wall_s,
        "time": time_split(study, wall_s),
        "incomplete": interrupted,
        "files": {"report_md": "report.md", "runs": "runs/",
                  "torch_trace": ([str(p.relative_to(out)) for p in torch_trace.logs()]
                                  if torch_trace else None),
                  "tlparse": (None if tlparse is None else [asdict(t) for t in tlparse]),
                  "profile": "profile/" if settings.profile else None},
    }


def write_study_report(settings, study, environment: dict, torch_trace: TraceFolder | None, *,
                       interrupted: bool, started: float, executor: dict | None = None,
                       places: Mapping[str, Placement] | None = None) -> dict:
    """One study's report, here or from a Ray study's tasks (`places`: where each run ran):
    tlparse over its TORCH_TRACE logs, the report written, and what was written said."""
    tlparse = run_tlparse(torch_trace.logs(), settings.out) if torch_trace else None
    report = report_document(settings, study.plan, environment, study, interrupted=interrupted,
                             wall_s=time.perf_counter() - started, torch_trace=torch_trace,
                             tlparse=tlparse, executor=executor)
    if places is not None:
        place_runs(report, places, study.results)
    write_report(settings.out, report)
    print_written(settings.out, study, report, torch_trace, tlparse)
    return report


def write_report(out: Path, report: dict) -> None:
    """report.json, report.md, the charts in figures/ and report.html with them inline."""
    made_by = {name: EXPERIMENTS[name].figures for name in report.get("experiments") or {}
               if name in EXPERIMENTS}
    report.setdefault("files", {})["figures"] = figures = figures_or_reason(out, report, made_by)
    if figures.get("unavailable"):
        print(f"infertop: no figures: {figures['unavailable']}", file=sys.stderr)
    write_json_atomic(out / "report.json", report)
    markdown = render_markdown(report)
    write_atomic(out / "report.md", [markdown])
    write_atomic(out / "report.html", [html_document(markdown, out, _title(report))])


def _title(report: dict) -> str:
    settings = report.get("settings", {})
    return f"infertop bench: {settings.get('model')} on {settings.get('trace')}"


def _environment_lines(report: dict) -> list[str]:
    env, settings = report.get("environment", {}), report.get("settings", {})
    lines = [
        f"- model **{settings.get('model')}**, trace **{settings.get('trace')}**, "
        f"{settings.get('requests')} replayed requests (fixed seed {settings.get('seed')}), "
        f"{settings.get('repeats')} warm repeats per config"
        + (", `--quick`" if settings.get("quick") else ""),
        f"- device {env.get('device')} ({env.get('device_name')}), {env.get('cpu_count')} CPUs, "
        f"{env.get('torch_threads')} torch threads; torch {env.get('torch')}, transformers "
        f"{env.get('transformers')}, Python {env.get('python')}",
        f"- compile backend {settings.get('compile_backend')}; inductor FX graph cache "
        f"{'on' if env.get('inductor_fx_graph_cache') else 'off'} (a graph compiled before on "
        f"this machine costs less the second time)",
    ]
    start, end = env.get("load_average_start"), env.get("load_average_end")
    if start:
        busy = max(start[0], (end or [0])[0]) > 0.5 * (env.get("cpu_count") or 1)
        lines.append(f"- load average at start {start[0]}, at end {(end or ['?'])[0]}"
                     + (" — **the machine was busy: absolute times are inflated**" if busy else ""))
    calibration = env.get("calibration_ms")
    if calibration:
        drift = calibration["drift"]
        lines.append(f"- machine speed (a fixed small workload timed before and after every run): "
                     f"{calibration['min']:.1f}–{calibration['max']:.1f} ms, a {drift:.2f}× spread"
                     + (" — **differences between runs smaller than that are reported as noise**"
                        if drift > DRIFT_TOLERANCE else ""))
    lines.append(f"- wall time {fmt_s(report.get('wall_s'))}"
                 + (" — **interrupted: incomplete**" if report.get("incomplete") else ""))
    return lines


def render_section(section: dict) -> list[str]:
    out = [f"## {section.get('id')} — {section.get('title')}", ""]
    if section.get("error"):
        return out + [f"This section could not be built: {section['error']}", ""]
    out += [f"- **{label}:** {section.get(key, NO_DATA)}" for label, key in TEMPLATE_FIELDS]
    out.append("")
    main_table = section.get("table") or {}
    if main_table.get("columns"):
        out += [table(main_table["columns"], main_table["rows"]), ""]
    for title, key, empty in (("Observed", "observed", "nothing was measured"),
                              ("Root cause", "root_cause", "not derived: no data")):
        out += [f"**{title}**", "", *[f"- {line}" for line in section.get(key) or [empty]], ""]
    if section.get("chart"):
        out += ["```", *section["chart"], "```", ""]
    for extra in section.get("extra_tables", []):
        if extra.get("rows"):
            out += [f"*{extra['title']}*", "", table(extra["columns"], extra["rows"]), ""]
    if section.get("notes"):
        out += [f"> {note}" for note in section["notes"]] + [""]
    snapshots = sorted({c["snapshot"] for c in section.get("configs", {}).values()
                        if isinstance(c, dict) and c.get("snapshot")})
    if snapshots:
        out += ["Snapshots: " + ", ".join(f"`{s}`" for s in snapshots), ""]
    return out


def _torch_trace_lines(files: dict) -> list[str]:
    """Each TORCH_TRACE log, with a link to tlparse's HTML report of it, or how to get one."""
    logs = files.get("torch_trace") or []
    if isinstance(logs, str):
        logs = [logs]
    reports = {t["log"]: t for t in files.get("tlparse") or []}
    lines = []
    for log_file in logs:
        made = reports.get(log_file, {})
        if made.get("html"):
            how = f"tlparse's report: [{made['html']}]({made['html']})"
        elif made:
            how = f"tlparse could not read it: {made.get('error')}"
        else:
            how = (f"tlparse is not installed here (`{INSTALL_HINT}`, then "
                   f"`tlparse {log_file} -o tlparse`)")
        lines.append(f"- `{log_file}`: the TORCH_TRACE log of every compile; {how}")
    return lines


def render_markdown(report: dict) -> str:
    out = [f"# {_title(report)}", ""]
    out += _environment_lines(report)
    out += ["",
            "How to read the numbers: **cold start** is the first request a fresh config "
            "served — it includes every compile it waited on, and is one sample. **Warm** "
            "figures come from the passes after a warm-up (a pass over the same requests, or "
            "its first request served and the rest rehearsed: How each run ended): the "
            "median of the repeated passes, with their range (min–max) in brackets. A verdict "
            "on latency pairs each request with the same request in the other run: **faster** "
            f"or **slower** when an always-valid 95% interval of the ratio lies beyond "
            f"±{MARGIN:.0%}, **within noise** when it lies inside ±{MARGIN:.0%}, **no difference "
            "yet** otherwise (with the "
            "requests it would need); where requests cannot be paired, two configs whose ranges "
            "overlap are reported within noise, and with a single repeat the noise is not "
            "measured and the report says so. Requests are served back to back, so a latency "
            "is the request's service time.", ""]
    plan = report.get("plan", {})
    if plan:
        out.append(f"Replayed input lengths: {', '.join(str(r['input_length']) for r in plan.get('requests', []))}; "
                   f"outputs: {', '.join(str(r['output_length']) for r in plan.get('requests', []))}. "
                   f"Planner buckets {plan.get('planner_edges')}, powers of two {plan.get('pow2_edges')}.")
        out.append("")
    out += nodes_markdown(report)
    out += goodput_markdown(report)
    out += energy_markdown(report)
    figures = (report.get("files") or {}).get("figures") or {}
    for section in report.get("experiments", {}).values():
        out += render_section(section)
        out += figure_lines(figures, section.get("id"))
    across = figure_lines(figures, ACROSS_RUNS)
    if across:
        out += ["## Across runs", ""] + across
    out += runs_markdown(report)
    out += time_markdown(report)
    out += doctor_markdown(report)
    out += ledger_markdown(report)
    if report.get("left_out"):
        out += ["## Left out", ""] + [f"- {line}" for line in report["left_out"]] + [""]
    checks = report.get("checks") or {}
    if checks:
        out += ["## Checks", "", *[f"- {name[:-3]}: {'pass' if value else 'FAIL'}"
                                   for name, value in checks.items() if name.endswith("_ok")], ""]
    files = report.get("files") or {}
    out += ["## Files", "",
            "- `report.json`: every number, by experiment and config (`experiments.E1.configs…`), "
            "and every run (`runs`)",
            "- `runs/*.json`: the session snapshot of each run (`infertop snapshot show FILE`, "
            "`infertop snapshot compare A B`)"]
    out += _torch_trace_lines(files)
    out += figure_file_lines(figures)
    if files.get("profile"):
        out.append("- `profile/trace.json`: torch.profiler Chrome trace of a few warm requests "
                   "(open in Perfetto or chrome://tracing); `profile/top_ops.txt` the top operators")
    out.append("")
    return "\n".join(out)
