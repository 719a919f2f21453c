"""The numeric dimensions of `tune --search quick|exhaustive`: bucket_count under bucketing=on,
max_batch under batching dynamic|continuous, batch_window_ms under batching=dynamic. A
setting never appears without the option that makes it act, every config sampled or
enumerated is one the engine can serve, the values reach tune.json and the line that serves
the chosen config again, and bad values are one line. No engine."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.common.errors import BadInput
from probe.contract.options import OptConfig
from probe.runs.spread import Spread
from probe.tune.combo import EXHAUSTIVE, QUICK, run_combo
from probe.tune.combo_report import combo_document
from probe.tune.search import Measured
from probe.tune.space import (
    EXHAUSTIVE_LIMIT,
    LADDERS,
    check_space,
    config_of,
    dimensions,
    every_config,
    space_size,
)
from probe.tune.trials import Bounds, Trial
from probe.tune.tuned_settings import DEFAULTS, PARENTS, Setup, TunedSettings, rerun_flags

OPTION_KEYS = ("compile", "bucketing", "batching", "kv_layout", "quant")
SETTING_KEYS = tuple(DEFAULTS)


def valid(setup: Setup, ladders: dict[str, tuple[int, ...]]) -> None:
    """What the engine can serve: each setting set exactly where its option makes it act,
    within the space's range (tune's default where the space does not vary it)."""
    for key, (parent, acting) in PARENTS.items():
        value = getattr(setup.settings, key)
        if getattr(setup.options, parent) not in acting:
            assert value is None, (key, setup.label())
            continue
        assert value is not None, (key, setup.label())
        ladder = ladders.get(key)
        if ladder is None:
            assert value == DEFAULTS[key]
        else:
            assert min(ladder) <= value <= max(ladder)
    assert setup.options.kv_layout == "static" or setup.options.batching == "continuous"


ladder_st = st.lists(st.integers(1, 64), min_size=1, max_size=4, unique=True).map(
    lambda v: tuple(sorted(v)))
space_st = st.tuples(
    st.lists(st.sampled_from(OPTION_KEYS), min_size=1, max_size=3, unique=True),
    st.dictionaries(st.sampled_from(SETTING_KEYS), st.one_of(st.none(), ladder_st)))


def keys_of(options: list[str], chosen: dict) -> tuple[tuple[str, ...], dict]:
    keys = list(options)
    ladders = {}
    for key, ladder in chosen.items():
        if ladder is None:
            keys.append(key)
            ladders[key] = LADDERS[key]
        else:
            keys.append(f"{key}={'/'.join(str(v) for v in ladder)}")
            ladders[key] = ladder
    return tuple(keys), ladders


def baseline_for(keys: tuple[str, ...]) -> OptConfig:
    """A baseline under which every named setting can act (check_space would refuse one
    that never does)."""
    names = {k.split("=")[0] for k in keys}
    values = {}
    if "bucket_count" in names and "bucketing" not in names:
        values["bucketing"] = "on"
    if names & {"max_batch", "batch_window_ms"} and "batching" not in names:
        values["batching"] = "dynamic"
    return OptConfig(**values)


@settings(max_examples=60, deadline=None)
@given(space_st)
def test_every_enumerated_config_has_each_setting_exactly_under_its_option(space):
    keys, ladders = keys_of(*space)
    baseline = baseline_for(keys)
    dims = dimensions("cpu", keys)
    check_space(baseline, dims)
    configs = list(itertools.islice(every_config(baseline, dims), 2000))
    assert configs and len(set(configs)) == len(configs)
    for setup in configs:
        valid(setup, ladders)
    # every value of a ladder is tried under its option
    for key, ladder in ladders.items():
        parent, acting = PARENTS[key]
        seen = {getattr(s.settings, key) for s in configs
                if getattr(s.options, parent) in acting}
        assert seen == set(ladder)


def fake(goodput):
    """evaluate(setup, label, control) on a steady machine: each side's goodput is
    goodput(setup)."""
    calls: list[Setup] = []

    def side(setup: Setup) -> Measured:
        value = goodput(setup)
        return Measured(Spread.of([value * 0.99, value * 1.01]), value, 1.0, 100 / value, None)

    def evaluate(setup, label, control):
        calls.append(setup)
        result = side(setup)
        return result if control is None else replace(result, control=side(control))
    return evaluate, calls


def slots_pay(setup: Setup) -> float:
    """Continuous batching pays, the more slots the better; a dynamic batch's window costs."""
    value = 1.0
    if setup.options.batching == "continuous":
        value = 1.5 * (1 + (setup.settings.max_batch or 0) / 16)
    elif setup.options.batching == "dynamic":
        value = 1.2 - (setup.settings.batch_window_ms or 0) / 1000
    if setup.options.bucketing == "on":
        value *= 1 + 0.01 * (setup.settings.bucket_count or 0)
    return value


@settings(max_examples=15, deadline=None)
@given(space_st, st.integers(0, 3))
def test_every_config_the_quick_search_samples_is_valid(space, seed):
    keys, ladders = keys_of(*space)
    baseline = baseline_for(keys)
    dims = dimensions("cpu", keys)
    evaluate, calls = fake(slots_pay)
    state = run_combo(baseline, evaluate, mode=QUICK, dims=dims, trials=8,
                      objectives=("goodput",), bounds=Bounds(), seeds=lambda *given: [], seed=seed)
    assert len(calls) == len(set(calls))
    valid(calls[0], {})             # the default: the baseline at tune's own settings
    for setup in calls[1:]:
        valid(setup, ladders)
    for trial in state.trials:
        assert Trial.from_dict(json.loads(json.dumps(trial.as_dict()))).setup == trial.setup


def test_exhaustive_tries_each_slot_count_and_finds_the_most():
    dims = dimensions("cpu", ("batching", "max_batch"))
    evaluate, calls = fake(slots_pay)
    state = run_combo(OptConfig(), evaluate, mode=EXHAUSTIVE, dims=dims, trials=0,
                      objectives=("goodput",), bounds=Bounds(), seeds=lambda *given: [])
    # off, and each of dynamic and continuous at 4, 8 and 16 slots (the window at 50 ms)
    assert len(calls) == 1 + 2 * 3
    document = combo_document(state, search={"mode": EXHAUSTIVE, "objectives": ["goodput"]},
                              slo_text="latency=1s", settings={"model": "t5-tiny",
                                                               "trace": "chat"},
                              done=True, edges_for=lambda k: (16, 64)[:k])
    final = document["final"]
    assert final["options"]["batching"] == "continuous"
    assert final["settings"] == {"max_batch": 16}
    assert final["settings_flags"] == "--max-batch 16"
    assert final["rerun"] == ("infertop replay --model t5-tiny --trace chat "
                              "--opt batching=continuous --max-batch 16")
    saved = {t["number"]: t for t in document["trials"]}
    assert all("settings" in t for t in saved.values())
    assert saved[0]["settings"] == {} and saved[0]["control"] is None


def test_a_small_space_with_its_ladders_stays_under_the_exhaustive_limit():
    """Counted independently: compile's 4 values × (bucketing off, or on at 3 counts)."""
    dims = dimensions("cpu", ("compile", "bucketing", "bucket_count"))
    assert space_size(OptConfig(), dims, EXHAUSTIVE_LIMIT) == 4 * (1 + 3) <= EXHAUSTIVE_LIMIT
    # every option and setting of a CPU: refused, as before the settings
    assert space_size(OptConfig(), dimensions("cpu"), EXHAUSTIVE_LIMIT) > EXHAUSTIVE_LIMIT


def test_a_setting_outside_the_space_is_served_at_tunes_default_where_it_acts():
    dims = dimensions("cpu", ("batching",))
    assert config_of(OptConfig(), {"batching": "dynamic"}, dims).settings == \
        TunedSettings(max_batch=8, batch_window_ms=50)
    assert config_of(OptConfig(), {"batching": "off"}, dims).settings == TunedSettings()


def test_the_rerun_flags_give_the_planners_edges_for_the_bucket_count():
    setup = Setup(OptConfig(bucketing="on", batching="dynamic"),
                  TunedSettings(bucket_count=2, max_batch=4, batch_window_ms=10))
    assert rerun_flags(setup, lambda k: (32, 512)) == \
        "--buckets 32,512 --max-batch 4 --batch-window 10"
    assert setup.label() == ("bucketing=on batching=dynamic bucket_count=2 max_batch=4 "
                             "batch_window_ms=10")


@pytest.mark.parametrize("space,named", [
    (("bucket_count=0",), "bucket_count=0"),
    (("max_batch=4/x",), "max_batch=4/x"),
    (("batch_window_ms=20000",), "batch_window_ms=20000"),
    (("compile=2/4",), "only bucket_count"),
    (("buckets",), "unknown option(s) buckets"),
])
def test_bad_setting_values_are_refused_naming_them(space, named):
    with pytest.raises(BadInput, match=named.replace("(", r"\(").replace(")", r"\)")):
        dimensions("cpu", space)


def test_a_setting_whose_option_never_acts_is_refused():
    with pytest.raises(BadInput, match="bucket_count: acts only with bucketing=on"):
        check_space(OptConfig(), dimensions("cpu", ("compile", "bucket_count")))
    check_space(OptConfig(bucketing="on"), dimensions("cpu", ("compile", "bucket_count")))
    check_space(OptConfig(), dimensions("cpu", ("bucketing", "bucket_count")))
