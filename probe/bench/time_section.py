"""report.md's "Where the time went": the study's wall split by experiment in the order they ran,
each run counted once, under the first experiment that reads it, its compile seconds beside
it, the open-loop experiments after, and what lies outside every run. The parts
add up to the wall: `outside the runs` is the wall less every part shown."""

from __future__ import annotations

from probe.bench.study import Study, unit_name
from probe.common.units import NO_DATA, fmt_s
from probe.runs.results import RunResult
from probe.session_store.tables import table

COLUMNS = ["experiment", "runs", "seconds", "of which compiling", "share of the wall",
           "its runs also read by"]


def time_split(study: Study, wall_s: float) -> dict:
    """report.json `time`: {"experiments": {name: {"runs", "seconds", "compile_s",
    "also_read_by"}}, "outside_runs_s", "wall_s"}; a unit not run (a stop before it) is not
    counted."""
    split: dict[str, dict] = {}
    for unit in study.units:
        seconds = study.seconds.get(unit_name(unit))
        if seconds is None:
            continue
        readers = list(dict.fromkeys(e for key in unit for e, _ in study.runs[key].users))
        row = split.setdefault(readers[0], {"runs": 0, "seconds": 0.0, "compile_s": 0.0,
                                            "also_read_by": []})
        row["runs"] += len(unit)
        row["seconds"] += seconds
        row["compile_s"] += sum(outcome.compile_s for key in unit
                                if isinstance(outcome := study.results.get(key), RunResult))
        row["also_read_by"] = list(dict.fromkeys([*row["also_read_by"], *readers[1:]]))
    for name in study.open_loop_names():
        if name in study.seconds:
            split[name] = {"runs": None, "seconds": study.seconds[name], "compile_s": None,
                           "also_read_by": []}
    shown = sum(row["seconds"] for row in split.values())     # in the order they ran
    return {"experiments": split, "outside_runs_s": wall_s - shown, "wall_s": wall_s}


def time_markdown(report: dict) -> list[str]:
    split = report.get("time") or {}
    rows_in = split.get("experiments") or {}
    wall = split.get("wall_s")
    if not rows_in or not wall:
        return []

    def share(seconds: float) -> str:
        return f"{seconds / wall:.0%}"

    rows = [[name, NO_DATA if row["runs"] is None else str(row["runs"]), fmt_s(row["seconds"]),
             "open loop" if row["compile_s"] is None
             else fmt_s(row["compile_s"]) if row["compile_s"] else "none",
             share(row["seconds"]), ", ".join(row["also_read_by"]) or "—"]
            for name, row in rows_in.items()]
    outside = split["outside_runs_s"]
    rows.append(["outside the runs", "", fmt_s(outside), "", share(outside),
                 "the model's load, the roofline's machine measurement, the report"])
    compiling = sum(row["compile_s"] or 0.0 for row in rows_in.values())
    runs = sum(row["runs"] or 0 for row in rows_in.values())
    rows.append(["**the study**", str(runs), fmt_s(wall), fmt_s(compiling), "100%", ""])
    return ["## Where the time went", "",
            "Each run is counted once, under the first experiment that reads it (the study "
            "runs them in that order); later readers are named. Compiling is the seconds its "
            "graphs took to compile or load from the caches, inside its seconds.", "",
            table(COLUMNS, rows), ""]
