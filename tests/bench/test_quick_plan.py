"""`bench --quick` from its plan alone (no engine): every acceptance check still has the runs it
reads, nothing is compiled that no check needs, each compiled run is shared, what quick leaves
out is said, and the full study keeps everything."""

from __future__ import annotations

import pytest

from probe.analysis.stats import MIN_BREAK_EVEN_REQUESTS
from probe.bench.experiments import EXPERIMENTS, acceptance_checks, left_out
from probe.bench.experiments.base import LEAN_STEP, REFERENCE, Experiment
from probe.bench.experiments.e5_kv_cache import requests_by_class
from probe.bench.experiments.e6_combined import QUICK_STEPS, STEPS
from probe.bench.experiments.e7_batching import FULL_SCENARIOS, QUICK_SCENARIOS
from probe.bench.experiments.e8_kv_layout import TRACE as E8_TRACE
from probe.bench.experiments.roofline import LEVERS
from probe.runs.plan import (
    DEFAULT_BUCKETS,
    DEFAULT_REQUESTS,
    QUICK_BUCKETS,
    QUICK_REPEATS,
    QUICK_REQUESTS,
    Plan,
    make_plan,
)
from tests.bench.test_bench_report import STUDY, _results, _sections

# The runs each experiment's acceptance check reads (its `checks` over its section), by role.
# test_each_check_needs_the_roles_named_here keeps this list honest.
CHECK_ROLES = {
    "E2": ("hf-generate", "fullgraph"),
    "E3": ("off",),
    "E4": ("planner",),                  # the powers-of-two row may be computed instead
    "E5": ("long/on", "long/off"),
}


def quick_plan() -> Plan:
    return make_plan(model="t5-tiny", trace_name="chat", device="cpu", quick=True,
                     requests=QUICK_REQUESTS, bucket_count=QUICK_BUCKETS, seed=0)


def full_plan() -> Plan:
    return make_plan(model="t5-tiny", trace_name="chat", device="cpu", quick=False,
                     requests=DEFAULT_REQUESTS, bucket_count=DEFAULT_BUCKETS, seed=0)


def check_roles(plan: Plan) -> dict[str, tuple[str, ...]]:
    """CHECK_ROLES, with E6's: its check reads every step it has."""
    return {**CHECK_ROLES, "E6": tuple(EXPERIMENTS["E6"].runs(plan))}


def compiled_runs(plan: Plan) -> dict[str, set[tuple[str, str]]]:
    """Every distinct compiled run of the back-to-back experiments, with who reads it."""
    users: dict[str, set[tuple[str, str]]] = {}
    for name in STUDY:
        for role, spec in EXPERIMENTS[name].runs(plan).items():
            if spec.options.compiled:
                users.setdefault(spec.key, set()).add((name, role))
    return users


def test_quick_keeps_every_acceptance_check_the_full_study_computes(make_result) -> None:
    quick, full = quick_plan(), full_plan()
    for plan in (quick, full):
        for name, roles in check_roles(plan).items():
            assert set(roles) <= set(EXPERIMENTS[name].runs(plan)), (name, plan.quick)
    checks = {plan.quick: acceptance_checks(_sections(plan, _results(plan, make_result)))
              for plan in (quick, full)}
    assert set(checks[True]) == set(checks[False])
    assert all(checks[True][key] for key in checks[True] if key.endswith("_ok"))
    # the checks read quick's own runs: broken runs fail them
    broken = acceptance_checks(_sections(quick, _results(quick, make_result, fail=True)))
    assert not any(broken[f"{name}_ok"] for name in ("e2", "e3", "e4", "e5"))


@pytest.mark.parametrize("name", sorted(CHECK_ROLES))
def test_each_check_needs_the_roles_named_here(make_result, name) -> None:
    """Take one run a check reads away and the check no longer passes."""
    plan = quick_plan()
    results = _results(plan, make_result)
    specs = EXPERIMENTS[name].runs(plan)
    for role in CHECK_ROLES[name]:
        outcomes = {r: results.get(s.key) for r, s in specs.items() if r != role}
        section = EXPERIMENTS[name].build(plan, outcomes, {"device": "cpu"})
        checks = acceptance_checks({name: section})
        assert not checks.get(f"{name.lower()}_ok"), (name, role)


def test_quick_compiles_only_what_a_check_reads_and_shares_it() -> None:
    plan = quick_plan()
    needed = {EXPERIMENTS[name].runs(plan)[role].key
              for name, roles in CHECK_ROLES.items() for role in roles
              if EXPERIMENTS[name].runs(plan)[role].options.compiled}
    users = compiled_runs(plan)
    assert set(users) == needed
    # the compiled reference is read by every experiment that holds it fixed
    assert {name for name, _ in users[plan.spec(REFERENCE).key]} == {
        "E1", "E2", "E4", "E6", "roofline", "observer"}
    # E6 compiles nothing of its own: its compiled steps are E2's two runs
    e6 = {spec.key for spec in EXPERIMENTS["E6"].runs(plan).values() if spec.options.compiled}
    assert e6 == {spec.key for spec in EXPERIMENTS["E2"].runs(plan).values()}
    assert len(compiled_runs(full_plan())) > len(users)


def test_e6_steps_change_one_option_at_a_time() -> None:
    """E6's chain, the cache first; --quick keeps its first five steps."""
    assert [name for name, _ in QUICK_STEPS] == [
        "baseline", "+KV cache", "+bucketing", "+compile", "+graph-break removal"]
    assert QUICK_STEPS == STEPS[:len(QUICK_STEPS)]
    # no compiled step without the cache: it recompiles as its outputs grow
    assert all(options.kv_cache == "on" for _, options in STEPS if options.compiled)
    for (_, before), (name, after) in zip(STEPS, STEPS[1:]):
        changed = {k for k, v in after.as_dict().items() if before.as_dict()[k] != v}
        assert len(changed) == 1 or changed == {k for k, _ in LEAN_STEP}, (name, changed)


def test_quick_sample_still_shows_each_phenomenon() -> None:
    plan = quick_plan()
    lengths = {r.input_length for r in plan.requests}
    assert len(lengths) > plan.bucket_count >= 2      # E4: the planner bounds the shapes below
    assert len(plan.planner_edges) <= plan.bucket_count
    assert plan.pow2_edges != plan.planner_edges
    # noise-aware verdicts need two repeats a side; E1's break-even its warm requests
    assert QUICK_REPEATS >= 2
    assert QUICK_REQUESTS * QUICK_REPEATS >= MIN_BREAK_EVEN_REQUESTS
    e5 = {name: requests[0].output_length for name, requests in requests_by_class(plan).items()}
    assert set(e5) == {"short", "long"} and e5["short"] < e5["long"]
    assert QUICK_SCENARIOS and {trace for trace, _ in QUICK_SCENARIOS} == {E8_TRACE}


def test_what_quick_leaves_out_is_said_per_experiment_with_the_way_back(make_result) -> None:
    quick, full = quick_plan(), full_plan()
    everything = tuple(EXPERIMENTS)
    assert left_out(full, everything) == []
    for note in left_out(quick, everything):
        experiment = note.split(":", 1)[0]
        assert experiment in EXPERIMENTS and "without --quick" in note, note
    differs = {name for name in STUDY
               if {r: s.options for r, s in EXPERIMENTS[name].runs(quick).items()}
               != {r: s.options for r, s in EXPERIMENTS[name].runs(full).items()}}
    differs |= {"E7"} if QUICK_SCENARIOS != FULL_SCENARIOS else set()
    assert differs <= {note.split(":", 1)[0] for note in left_out(quick, everything)}
    sections = _sections(quick, _results(quick, make_result))
    for name in ("E1", "E3", "E5", "E6", "roofline"):
        notes = EXPERIMENTS[name].left_out(quick)
        assert notes and all(n.startswith(f"{name}:") for n in notes), name
        assert set(notes) <= set(sections[name]["notes"]), name


def test_the_full_study_keeps_everything() -> None:
    plan = full_plan()
    roles = {name: set(EXPERIMENTS[name].runs(plan)) for name in STUDY}
    assert roles["E1"] == {"off", "default", "reduce-overhead", "max-autotune"}
    assert roles["E3"] == {"off", "on"}
    assert roles["E4"] == {"none", "planner"}            # powers of two: computed, as in quick
    assert {role.split("/")[0] for role in roles["E5"]} == {"short", "medium", "long"}
    assert [name for name, _ in STEPS] == list(EXPERIMENTS["E6"].runs(plan))
    assert len(roles["roofline"]) == 2 + 3 * len(LEVERS)


def test_a_plan_built_by_hand_is_the_one_make_plan_builds() -> None:
    """The plan carries no experiment's shape: each experiment reads `quick` and picks its own."""
    plan = full_plan()
    bare = Plan(model=plan.model, trace=plan.trace, device=plan.device, quick=False,
                requests=plan.requests, bucket_count=plan.bucket_count,
                planner_edges=plan.planner_edges, pow2_edges=plan.pow2_edges,
                trace_input_lengths=plan.trace_input_lengths,
                trace_output_lengths=plan.trace_output_lengths)
    assert bare == plan
    assert all(isinstance(EXPERIMENTS[name], Experiment) for name in STUDY)
