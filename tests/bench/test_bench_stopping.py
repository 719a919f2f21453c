"""A run's stopping rule and the paired verdict it settles, on synthetic records."""

from __future__ import annotations

import random
from dataclasses import replace

from probe.bench.experiments.base import HF_EAGER
from probe.bench.runs_section import run_rows
from probe.runs.stopping import (
    GAVE_UP,
    SEQUENTIAL,
    SETTLED,
    PairRounds,
    Stopping,
    StopRule,
    medians,
    paired,
)
from probe.runs.verdict import versus

COUNT = 40


def _latencies(scale: float, passes: int, seed: int, noise: float = 0.03) -> list[list[float]]:
    """Per-request sizes that differ 20× across the list, the same in every run, times a
    config's scale and a little noise."""
    sizes = [50.0 * (1 + 19 * i / COUNT) for i in range(COUNT)]
    rng = random.Random(seed)
    return [[s * scale * (1 + rng.gauss(0, noise)) for s in sizes] for _ in range(passes)]


def test_a_clear_difference_settles_within_one_pass(make_result) -> None:
    control = make_result(pass_latencies=_latencies(1.0, 3, 0))
    treated = make_result(pass_latencies=_latencies(0.5, 3, 1))
    rule = StopRule({"control": medians(control.steady_records)}, min_requests=COUNT)
    assert not rule.stops(treated.steady_records[:COUNT - 1])    # not before a full pass
    assert rule.stops(treated.steady_records[:COUNT])
    (found,) = rule.against(treated.steady_records[:COUNT])
    assert found.verdict == "faster" and 0.45 < (found.ratio or 0) < 0.55


def test_the_same_config_settles_within_noise_and_a_small_one_asks_for_more(
        make_result) -> None:
    control = make_result(pass_latencies=_latencies(1.0, 3, 0, noise=0.01))
    same = make_result(pass_latencies=_latencies(1.0, 3, 2, noise=0.01))
    reference = medians(control.steady_records)
    assert paired("c", same.steady_records, reference).verdict == "within noise"
    near_margin = make_result(pass_latencies=_latencies(1.10, 1, 3, noise=0.08))
    found = paired("c", near_margin.steady_records, reference)
    assert found.verdict == "no difference yet"
    assert found.requests_to_tell is not None and found.requests_to_tell >= COUNT


def test_two_interleaved_configs_stop_together_once_their_verdict_settles(make_result) -> None:
    """E5's cache on and off share an engine: after each round (one pass each) they stop once
    the verdict is settled both ways round; the section's versus() then reads a settled pair."""
    cached, uncached = (make_result(pass_latencies=_latencies(scale, 3, seed))
                        for scale, seed in ((0.4, 0), (1.0, 1)))
    rounds = PairRounds("on", "off", COUNT, 3 * COUNT)

    def served(passes: int) -> dict:
        return {"on": cached.steady_records[:passes * COUNT],
                "off": uncached.steady_records[:passes * COUNT]}
    assert rounds.ending({"on": cached.steady_records[:COUNT - 1],
                          "off": uncached.steady_records[:COUNT - 1]}) is None
    assert rounds.ending(served(1)) == SETTLED
    on, off = (replace(result, steady_records=served(1)[key], stopping=Stopping(
        SEQUENTIAL, COUNT, 3 * COUNT, SETTLED, rounds.against(served(1), key)))
        for key, result in (("on", cached), ("off", uncached)))
    assert [p.verdict for p in on.stopping.against] == ["faster"]
    assert [p.verdict for p in off.stopping.against] == ["slower"]
    assert versus(on, off).verdict == "faster" and "paired over 40 requests" in versus(on, off).text


def test_an_interleaved_pair_that_cannot_settle_gives_up_from_the_second_round(
        make_result) -> None:
    first, second = (make_result(pass_latencies=_latencies(scale, 3, seed, noise=0.25))
                     for scale, seed in ((1.0, 0), (1.08, 1)))
    rounds = PairRounds("a", "b", COUNT, 3 * COUNT)

    def served(passes: int) -> dict:
        return {"a": first.steady_records[:passes * COUNT],
                "b": second.steady_records[:passes * COUNT]}
    assert rounds.ending(served(1)) is None                 # not before the second round
    assert rounds.ending(served(2)) == GAVE_UP
    assert all(not p.decided and p.futile(3 * COUNT) for key in "ab"
               for p in rounds.against(served(2), key))


def test_versus_gives_the_paired_verdict_either_way_round(make_result) -> None:
    control = make_result(pass_latencies=_latencies(1.0, 3, 0))
    treated = make_result(pass_latencies=_latencies(2.0, 1, 1))
    forward = versus(treated, control)
    assert forward.verdict == "slower" and "paired over 40 requests" in forward.text
    # the control ran later and was the one judged: the same verdict, from its side
    judged = replace(control, stopping=Stopping(SEQUENTIAL, 120, 120, "cap", (
        paired(treated.key, control.steady_records, medians(treated.steady_records)),)))
    assert versus(treated, judged).verdict == "slower"
    assert versus(judged, treated).verdict == "faster"


def test_too_few_requests_to_pair_fall_back_to_the_spreads(make_result) -> None:
    fast = make_result(pass_latencies=[[100.0], [101.0]])
    slow = make_result(pass_latencies=[[160.0], [161.0]])
    assert versus(fast, slow).verdict == "faster"
    assert "paired" not in versus(fast, slow).text


def test_the_report_row_says_served_why_and_what_the_cache_gave(make_result) -> None:
    control = make_result(pass_latencies=_latencies(1.0, 3, 0))
    rule = StopRule({"control": medians(control.steady_records)}, min_requests=COUNT)
    treated = make_result(pass_latencies=_latencies(0.5, 1, 1))
    run = replace(treated, run_wall_s=12.5,
                  stopping=Stopping(SEQUENTIAL, COUNT, 3 * COUNT, "settled",
                                    rule.against(treated.steady_records)),
                  cache={"fxgraph_cache_hit": 4, "fxgraph_cache_miss": 1,
                         "autograd_cache_hit": 4, "autograd_cache_miss": 1})
    (row,) = run_rows({run.key: run.as_dict()})
    assert row[1] == "40 of 120" and row[2] == "settled: faster vs control"
    assert row[3] == "12.5 s" and row[4] == "4 / 1" and row[6] == "a whole pass (40)"
    (short,) = run_rows({run.key: replace(run, warmup_rehearsed=39).as_dict()})
    assert short[6] == "1 served, 39 rehearsed at 2 tokens"
    capped = Stopping(SEQUENTIAL, 120, 120, "cap", (
        paired("control", make_result(pass_latencies=_latencies(1.10, 1, 3, 0.08))
               .steady_records, medians(control.steady_records)),))
    assert capped.text().startswith("cap: no difference yet vs control (needs ~")


def test_the_projection_counts_the_passes_the_rules_expect(make_result) -> None:
    from probe.bench.study import Study
    from probe.runs.plan import make_plan
    from probe.runs.runs import RunContext

    plan = make_plan(model="t5-small", trace_name="chat", device="cpu", quick=False,
                     requests=COUNT, bucket_count=4, seed=0)
    context = RunContext(model="t5-small", device="cpu", loaded=None, max_input=512, repeats=3)
    study = Study.of(plan, ("E1",), context)
    off, default = study.units[0][0], study.units[1][0]
    assert study.steady_passes(off) == 3            # the control runs first: nothing to pair
    assert study.steady_passes(default) == 1        # paired with it: one pass expected
    # once a paired run has finished, the rest are projected at the share it served
    served = replace(make_result(pass_latencies=_latencies(0.5, 2, 1)),
                     stopping=Stopping(SEQUENTIAL, 2 * COUNT, 3 * COUNT, "settled", (
                         paired("x", make_result(pass_latencies=_latencies(0.5, 2, 1))
                                .steady_records, {}),)))
    study.results[default] = served
    assert study.steady_passes(default) == 2        # finished: what it served
    assert study.steady_passes(study.units[2][0]) == 2
    fixed = Study.of(plan, ("E1",), replace(context, stopping="fixed"))
    assert fixed.steady_passes(fixed.units[1][0]) == 3


def test_an_interleaved_pair_is_projected_to_stop_as_a_pair(monkeypatch) -> None:
    """A pair stops after a whole round and not before the interval's BURN_IN requests: E5's
    10 requests a pass need two of the three rounds; with 40 a pass, one round can settle it."""
    from probe.analysis.sequential import BURN_IN
    from probe.bench.experiments import e5_kv_cache
    from probe.bench.study import Study
    from probe.runs.plan import make_plan
    from probe.runs.runs import RunContext

    plan = make_plan(model="t5-small", trace_name="chat", device="cpu", quick=False,
                     requests=COUNT, bucket_count=4, seed=0)
    context = RunContext(model="t5-small", device="cpu", loaded=None, max_input=512, repeats=3)

    def projected(study: Study) -> list[float]:
        pairs = [unit for unit in study.units if len(unit) == 2]
        assert len(pairs) == 3
        return [study.steady_passes(key) for unit in pairs for key in unit]
    assert e5_kv_cache.FULL_REQUESTS < BURN_IN <= 2 * e5_kv_cache.FULL_REQUESTS
    assert projected(Study.of(plan, ("E5",), context)) == [2.0] * 6
    monkeypatch.setattr(e5_kv_cache, "FULL_REQUESTS", 8)
    assert projected(Study.of(plan, ("E5",), context)) == [3.0] * 6
    monkeypatch.setattr(e5_kv_cache, "FULL_REQUESTS", COUNT)
    assert projected(Study.of(plan, ("E5",), context)) == [1.0] * 6
    fixed = Study.of(plan, ("E5",), replace(context, stopping="fixed"))
    assert projected(fixed) == [3.0] * 6


def test_a_run_a_p95_verdict_reads_serves_its_cap() -> None:
    from probe.bench.study import Study
    from probe.runs.plan import make_plan
    from probe.runs.runs import RunContext

    plan = make_plan(model="t5-small", trace_name="chat", device="cpu", quick=False,
                     requests=COUNT, bucket_count=4, seed=0)
    context = RunContext(model="t5-small", device="cpu", loaded=None, max_input=512, repeats=3)
    study = Study.of(plan, ("E1", "E4"), context)
    default = study.units[0][0]                 # E1's default is E4's planner run
    assert study.runs[default].whole and study.steady_passes(default) == 3
    # it serves its cap anyway, so it runs before E1's eager control, which then has a
    # finished partner to stop against instead of serving its cap
    off = study.units[1][0]
    assert "compile=" not in off and default in study.runs[off].partners
    assert study.steady_passes(off) == 1
    assert Study.of(plan, ("E1",), context).units[0][0] == off      # without E4: first
    rule = study.stop_rule((default,))
    assert rule is not None and rule.whole and not rule.stops([])
    # the roofline's HF-eager baseline: its table shows it, no verdict reads it: one pass,
    # projected so
    with_roofline = Study.of(plan, ("E1", "E4", "roofline"), context)
    baseline = next(key for key, planned in with_roofline.runs.items()
                    if planned.spec.options == HF_EAGER)
    assert not with_roofline.runs[baseline].partners
    alone = with_roofline.stop_rule((baseline,))
    assert alone is not None and alone.alone and with_roofline.steady_passes(baseline) == 1
    # a paired run's rule gives up against its cap: --repeats passes of the list
    paired_rule = study.stop_rule((study.units[2][0],))
    assert paired_rule is not None and paired_rule.cap == 3 * COUNT


def test_a_run_gives_up_when_the_cap_cannot_settle_it(make_result) -> None:
    """Futility: from the second pass, a verdict whose interval would need over FUTILE × the
    cap stops the run, which says no difference yet with what it would need; a clear verdict
    against another partner does not keep it serving."""
    from probe.runs.stopping import FUTILE, FUTILE_PASSES, GAVE_UP
    control = make_result(pass_latencies=_latencies(1.0, 3, 0, noise=0.01))
    reference = medians(control.steady_records)
    near_margin = make_result(pass_latencies=_latencies(1.10, 3, 3, noise=0.08))
    records = near_margin.steady_records
    two = FUTILE_PASSES * COUNT
    found = paired("control", records[:two], reference)
    assert found.verdict == "no difference yet" and found.requests_to_tell is not None
    small_cap = int(found.requests_to_tell / FUTILE) - 1   # the cap cannot settle it: give up
    big_cap = int(found.requests_to_tell / FUTILE) + 1     # it might: serve on
    assert found.futile(small_cap) and not found.futile(big_cap)
    assert StopRule({"control": reference}, min_requests=COUNT,
                    cap=small_cap).ending(records[:two]) == GAVE_UP
    assert StopRule({"control": reference}, min_requests=COUNT,
                    cap=big_cap).ending(records[:two]) is None
    assert StopRule({"control": reference}, min_requests=COUNT).ending(records[:two]) is None
    # never before the FUTILE_PASSES-th pass, whatever the cap
    assert StopRule({"control": reference}, min_requests=COUNT,
                    cap=1).ending(records[:two - 1]) is None
    # one partner settled, the other futile: it gives up; the text says both
    faster = medians(make_result(pass_latencies=_latencies(3.0, 3, 4)).steady_records)
    rule = StopRule({"control": reference, "slow": faster}, min_requests=COUNT, cap=small_cap)
    assert rule.ending(records[:two]) == GAVE_UP
    text = Stopping(SEQUENTIAL, two, small_cap, GAVE_UP, rule.against(records[:two])).text()
    assert text.startswith("gave up: no difference yet vs control (needs ~")
    assert f"over {FUTILE:g}× the cap of {small_cap}" in text and "faster vs slow" in text


def test_a_run_no_verdict_reads_serves_one_pass(make_result) -> None:
    from probe.runs.stopping import ONE_PASS
    run = make_result(pass_latencies=_latencies(1.0, 3, 0))
    rule = StopRule({}, min_requests=COUNT, alone=True)
    assert rule.ending(run.steady_records[:COUNT - 1]) is None
    assert rule.ending(run.steady_records[:COUNT]) == ONE_PASS
    assert Stopping(SEQUENTIAL, COUNT, 3 * COUNT, ONE_PASS).text() == (
        "one pass: no verdict reads it")
