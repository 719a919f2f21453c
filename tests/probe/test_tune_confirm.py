"""`tune --confirm`: after the search, the chosen config, each of its changes alone and the
default replayed again, alternated, and the combination confirmed only when it beats every
other arm beyond the noise. The issue's case on a fake replay table: on a ladder of input
lengths compile alone recompiles, bucketing alone pads, and the two together win. No
engine."""

from __future__ import annotations

import argparse
import json
import threading
from dataclasses import replace

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from probe.contract.objective import parse_slo
from probe.contract.options import OptConfig
from probe.runs.spread import Spread
from probe.tune.combo import EXHAUSTIVE
from probe.tune.confirm import ArmRun, arms_for, confirm
from probe.tune.runner import _combo
from probe.tune.search import Measured
from probe.tune.space import config_of, dimensions
from probe.tune.tuned_settings import Setup, TunedSettings

DIMS = dimensions("cpu", ("compile", "bucketing", "bucket_count", "wrapper"))
DEFAULT = config_of(OptConfig(), {}, DIMS)


def ladder_goodput(setup: Setup) -> float:
    """On a ladder of lengths: compile alone recompiles at every new length (less goodput
    than eager), bucketing alone pads (a little less), both together compile K shapes once
    and win; the cpp wrapper adds a little, compiled."""
    compiled, bucketed = setup.options.compiled, setup.options.bucketing == "on"
    value = 2.0 if compiled and bucketed else 0.6 if compiled else 0.9 if bucketed else 1.0
    return value * (1.1 if setup.options.wrapper == "cpp" else 1.0)


def fake_run(table=ladder_goodput, calls=None):
    """Each run: the table's goodput, ±1% by the run's place (the machine's noise)."""
    count = [0]

    def run_once(setup: Setup, role: str, repeat: int) -> ArmRun:
        count[0] += 1
        if calls is not None:
            calls.append(setup)
        noise = 1 + 0.01 * ((count[0] % 3) - 1)
        return ArmRun(table(setup) * noise, 100.0 / table(setup), f"run{count[0]}.json")
    return run_once


CHOSEN = config_of(OptConfig(compile="default", bucketing="on", wrapper="cpp"),
                   {"bucket_count": 4}, DIMS)


def test_the_arms_are_the_default_each_change_alone_and_the_chosen():
    arms, skipped = arms_for(DEFAULT, CHOSEN, DIMS)
    assert [a.role for a in arms] == ["default", "part", "part", "chosen"]
    assert [a.change for a in arms[1:3]] == ["compile=default", "bucketing=on"]
    assert arms[2].setup == Setup(OptConfig(bucketing="on"), TunedSettings(bucket_count=4))
    # the cpp wrapper needs compile: not served alone, and said
    assert len(skipped) == 1 and skipped[0].startswith("wrapper=cpp: not served alone")


def test_the_combination_whose_parts_each_lose_alone_is_confirmed():
    arms, skipped = arms_for(DEFAULT, CHOSEN, DIMS)
    result = confirm(arms, skipped, fake_run(), repeats=3)
    document = result.as_dict()
    assert result.confirmed and document["confirmed"]
    assert [v["verdict"] for v in document["verdicts"]] == ["more goodput"] * 3
    by_change = {a["change"] or a["role"]: a for a in document["arms"]}
    assert by_change["compile=default"]["goodput"]["median"] < by_change["default"][
        "goodput"]["median"]                                   # compile alone loses
    assert by_change["bucketing=on"]["goodput"]["median"] < by_change["default"][
        "goodput"]["median"]                                   # bucketing alone loses
    assert all(len(a["sessions"]) == 3 for a in document["arms"])


def test_a_part_that_beats_the_combination_leaves_it_unconfirmed():
    def table(setup: Setup) -> float:
        return 3.0 if setup.options.label() == "bucketing=on" else ladder_goodput(setup)
    arms, skipped = arms_for(DEFAULT, CHOSEN, DIMS)
    result = confirm(arms, skipped, fake_run(table), repeats=2)
    assert not result.confirmed
    verdict = next(v for v in result.verdicts() if v["against"].startswith("bucketing=on"))
    assert verdict["verdict"] == "less goodput"


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.lists(st.sampled_from(["compile", "bucketing", "wrapper"]),
                                   min_size=1, max_size=3, unique=True))
def test_every_arm_runs_repeats_times_each_repeat_starting_elsewhere(repeats, changed):
    chosen = config_of(OptConfig(**{"compile": "default", "bucketing": "on", "wrapper": "cpp"}
                                 | {k: OptConfig().as_dict()[k] for k in
                                    {"compile", "bucketing", "wrapper"} - set(changed)}),
                       {}, DIMS)
    assume(chosen != DEFAULT)           # the cpp wrapper alone is served as the default
    arms, skipped = arms_for(DEFAULT, chosen, DIMS)
    calls: list[Setup] = []
    confirm(arms, skipped, fake_run(calls=calls), repeats=repeats)
    for arm in arms:
        assert calls.count(arm.setup) == repeats
    n = len(arms)
    places = [calls[r * n:(r + 1) * n] for r in range(repeats)]
    # each repeat starts one arm later: over n repeats every arm has held every place
    for r in range(1, repeats):
        assert places[r] == places[r - 1][1:] + places[r - 1][:1]


def test_a_stop_leaves_it_interrupted_and_unconfirmed():
    stop = threading.Event()
    calls: list[Setup] = []
    run = fake_run(calls=calls)

    def stopping(setup, role, repeat):
        if len(calls) == 2:
            stop.set()
        return run(setup, role, repeat)
    arms, skipped = arms_for(DEFAULT, CHOSEN, DIMS)
    result = confirm(arms, skipped, stopping, repeats=2, stop=stop)
    assert result.interrupted and not result.confirmed and len(calls) == 3


def test_tune_json_and_tune_md_carry_the_confirmation(tmp_path):
    """Through the runner's _combo: an exhaustive search on the fake table, then --confirm."""
    def evaluate(setup, label, control):
        def side(s):
            value = ladder_goodput(s)
            return Measured(Spread.of([value * 0.99, value * 1.01]), value, 1.0, 100 / value,
                            None)
        result = side(setup)
        return result if control is None else replace(result, control=side(control))
    args = argparse.Namespace(search=EXHAUSTIVE, objective=("goodput",), trials=4,
                              find_capacity=False, slo_target=0.9, max_memory=None,
                              max_drift=0.05, amortize=None, max_joules_per_token=None,
                              slo=parse_slo("latency=1s"), budget=30.0, confirm=True,
                              repeats=2)
    settings_ = {"model": "t5-tiny", "trace": "ladder", "requests": 3, "repeats": 2,
                 "command": "infertop tune …"}
    dims = dimensions("cpu", ("compile", "bucketing"))
    assert _combo(args, OptConfig(), dims, [], evaluate, threading.Event(), tmp_path,
                  {"settings": settings_}, None, fake_run()) == 0
    saved = json.loads((tmp_path / "tune.json").read_text())
    assert saved["final"]["options"]["bucketing"] == "on"
    confirmation = saved["confirmation"]
    assert confirmation["confirmed"] and [a["role"] for a in confirmation["arms"]] == [
        "default", "part", "part", "chosen"]
    text = (tmp_path / "tune.md").read_text()
    assert "## Confirmation" in text and "**Confirmed**" in text


@pytest.mark.parametrize("flags", [["--search", "greedy"], ["--search", "quick"]])
def test_confirm_outside_a_combination_search_at_a_rate_is_one_line(flags, capsys, tmp_path,
                                                                    monkeypatch):
    from infertop.cli import main
    monkeypatch.chdir(tmp_path)
    rate = ["--rate", "1"] if flags[1] == "greedy" else ["--find-capacity"]
    assert main(["tune", "--out", "o", "--slo", "ttft=1s", *rate, *flags, "--confirm"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--confirm is for --search quick|exhaustive at a --rate" in err and "\n" not in err
    assert not (tmp_path / "o").exists()
