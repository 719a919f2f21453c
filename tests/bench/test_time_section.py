"""report.md's "Where the time went": each run counted once under its first reader, the open-loop
experiments after, and the parts adding up to the wall."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.bench.study import Study, unit_name
from probe.bench.time_section import time_markdown, time_split
from probe.runs.plan import make_plan
from probe.runs.results import FailedRun
from probe.runs.runs import RunContext


def _study() -> Study:
    plan = make_plan(model="t5-small", trace_name="chat", device="cpu", quick=False,
                     requests=40, bucket_count=4, seed=0)
    context = RunContext(model="t5-small", device="cpu", loaded=None, max_input=512, repeats=3)
    return Study.of(plan, ("E1", "E2", "E4", "E7"), context)


def test_each_run_counts_once_under_its_first_reader(make_result) -> None:
    study = _study()
    study.experiments = ("E1", "E2", "E7", "E4")   # E7 is open loop: it runs after the units
    for i, unit in enumerate(study.units):
        study.seconds[unit_name(unit)] = 10.0 * (i + 1)
        for key in unit:
            study.results[key] = make_result(study.runs[key].spec.options,
                                             pass_latencies=[[50.0] * 3])
    failed = study.units[-1][0]
    study.results[failed] = FailedRun(failed, "x", "boom", "")     # its seconds still count
    study.seconds["E7"] = 100.0
    split = time_split(study, wall_s=1000.0)
    rows = split["experiments"]
    assert list(rows) == ["E1", "E2", "E4", "E7"]
    readers = {unit_name(u): [e for e, _ in study.runs[u[0]].users] for u in study.units}
    for name, row in rows.items():
        if name == "E7":
            assert row == {"runs": None, "seconds": 100.0, "compile_s": None, "also_read_by": []}
            continue
        mine = [u for u, r in readers.items() if r[0] == name]
        assert row["runs"] == len(mine)
        assert row["seconds"] == pytest.approx(sum(study.seconds[u] for u in mine))
    # E1's default is read by E2 and E4 as well, and counted in E1 alone
    assert {"E2", "E4"} <= set(rows["E1"]["also_read_by"])
    shown = sum(row["seconds"] for row in rows.values())
    assert split["outside_runs_s"] == pytest.approx(1000.0 - shown)
    markdown = "\n".join(time_markdown(json.loads(json.dumps({"time": split}))))
    assert "| **the study** |" in markdown and "| outside the runs |" in markdown


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1e4), min_size=1, max_size=12),
       st.floats(min_value=0.0, max_value=1e5), st.integers(min_value=0, max_value=2**31))
def test_the_parts_always_add_up_to_the_wall(seconds, wall, seed) -> None:
    study = _study()
    chosen = random.Random(seed).sample(study.units, min(len(seconds), len(study.units)))
    for unit, value in zip(chosen, seconds):       # units not run (a stop) are not counted
        study.seconds[unit_name(unit)] = value
    split = time_split(study, wall)
    parts = sum(row["seconds"] for row in split["experiments"].values())
    assert parts + split["outside_runs_s"] == pytest.approx(wall, abs=1e-6)
    assert sum(row["runs"] for row in split["experiments"].values()) == sum(
        len(u) for u in chosen)
