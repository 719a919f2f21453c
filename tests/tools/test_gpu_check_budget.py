"""gpu-check's time budget (tools/gpu_check/budget.py): the sections share it in
order, time one leaves goes to the next, a section that cannot fit is skipped and said,
and a replay that reaches its limit is stopped and measured on what it served."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.gpu_check import check
from tools.gpu_check.budget import MINIMUM, PLAN, Budget, plan


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


section_lists = st.lists(st.sampled_from(list(PLAN)), min_size=1, unique=True).map(
    lambda chosen: [s for s in PLAN if s in chosen])


@settings(max_examples=200, deadline=None)
@given(section_lists, st.floats(60, 3600), st.lists(st.floats(0, 1), min_size=6, max_size=6))
def test_sections_never_take_more_than_is_left_and_the_plan_fills_the_budget(
        sections, total, used):
    """Whatever each section uses of its allowance, the next ones still have their plan
    where time allows, and no section is allowed past the budget's end."""
    assert sum(plan(total, sections).values()) == pytest.approx(total)
    clock = Clock()
    budget = Budget(total, sections, clock)
    for section, share in zip(sections, used):
        allowed = budget.for_section(section)
        assert allowed is not None and 0 <= allowed <= max(0.0, total - clock.now) + 1e-9
        after = sum(budget.planned[s] for s in sections[sections.index(section) + 1:])
        assert allowed + after == pytest.approx(max(after, total - clock.now)) or allowed == 0
        clock.now += share * allowed
    assert clock.now <= total + 1e-6


def test_time_an_early_section_leaves_goes_to_the_later_ones():
    clock = Clock()
    budget = Budget(420, ["nvml", "host", "decode"], clock)
    planned = budget.planned
    first = budget.for_section("nvml")
    assert first == pytest.approx(planned["nvml"])
    clock.now = 1.0                     # nvml took 1 s of its 20
    assert budget.for_section("host") == pytest.approx(420 - 1 - planned["decode"])
    clock.now = 100.0
    assert budget.for_section("decode") == pytest.approx(320)


def test_a_section_below_its_minimum_is_skipped_with_why():
    clock = Clock()
    budget = Budget(100, ["sigterm", "dashboard"], clock)
    clock.now = 100 - MINIMUM["dashboard"] + 1
    reason = budget.skip_reason("dashboard")
    assert reason is not None and "of the 100 s budget" in reason
    assert Budget(None, ["dashboard"]).skip_reason("dashboard") is None
    assert Budget(None, ["dashboard"]).for_section("dashboard") is None


def test_the_check_runs_sections_in_order_within_the_budget_and_lists_what_it_skipped(
        monkeypatch):
    """The orchestration, its runners replaced: the order, each one's allowance, a skip,
    and the report's `unmeasured` lines."""
    clock = Clock()
    monkeypatch.setattr(check, "Budget",
                        lambda total, order: Budget(total, order, clock))
    calls: list[tuple[str, float | None]] = []

    def runner(name: str, takes: float):
        def run(args, device, report, log, save, allowed_s):
            calls.append((name, allowed_s))
            clock.now += takes
            report[name] = {"ran": True}
        return run
    # the decode matrix overruns its plan: the batching runs after it get no time
    monkeypatch.setattr(check, "RUNNERS", {"nvml": runner("nvml", 1), "host": runner("host", 5),
                                           "decode": runner("decode", 400),
                                           "batching": runner("batching", 1)})

    class Args:
        budget = 420.0
    report: dict = {}
    saves: list[int] = []
    check._run_sections(Args(), {"batching", "decode", "host", "nvml"}, torch.device("cpu"),
                        report, lambda line: None, lambda: saves.append(1))
    assert [name for name, _ in calls] == ["nvml", "host", "decode"]
    assert report["skipped"].keys() == {"batching"}
    assert len(saves) == 4
    assert check.unmeasured(report) == [f"batching: {report['skipped']['batching']}"]
    assert report["budget"]["seconds"] == 420.0


def test_unmeasured_decode_configs_are_listed_and_left_out_of_the_promises():
    report = {"decode": {
        "fullgraph bf16 compile=reduce-overhead": {"failed": 0, "ms_per_token": 0.3},
        "fullgraph fp32 compile=reduce-overhead": {"unmeasured": "not done"},
    }}
    assert check.promises(report)["reduce-overhead serves every request"] is True
    assert check.unmeasured(report) == [
        "decode fullgraph fp32 compile=reduce-overhead: not done"]


def test_a_replay_at_its_limit_is_stopped_and_measured_on_what_it_served(tmp_path,
                                                                          monkeypatch):
    """gpu-check's batching run, on this CPU: the replay gets SIGTERM at its limit, saves what
    it served, and is measured on that. The limit is counted from its first served request
    (its journal holds a record), not from its start: loading the model and fitting the trace
    take what the machine's load makes them take, and a limit that came before the first
    request would measure nothing. 3,000 requests of azure-conv at 4 slots are minutes of
    work, so 5 s after the first one the replay is still serving, however fast the machine."""
    import tools.gpu_check.batching as batching

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))      # the replay's journal: here
    real_stop = batching._stop_at_limit

    def limit_from_the_first_request(process, limit_s, stopped, done):
        while not done.wait(0.2):
            if any(b'"kind":"record"' in journal.read_bytes()
                   for journal in (tmp_path / "infertop").glob("**/*.jsonl")):
                real_stop(process, limit_s, stopped, done)
                return
    monkeypatch.setattr(batching, "_stop_at_limit", limit_from_the_first_request)
    lines: list[str] = []
    run = batching.replay_run("t5-tiny", torch.device("cpu"), max_batch=4, requests=3000,
                              options=["batching=continuous"], timeout_s=5, log=lines.append)
    assert run["stopped_at_limit"] and "crashed" not in run, run
    assert 0 < run["served"] < 3000 and run["failed"] == 0
    assert run["tokens_per_s"] and run["tokens_per_s"] > 0
    assert len(lines) == 1 and f"served {run['served']}" in lines[0]


def test_the_batching_runs_share_their_allowance_and_each_gets_a_measurable_limit(
        monkeypatch):
    """The default plan's batching share, four runs: each replay's limit is an equal part of
    what is left less its stop, and none falls below what a run needs."""
    import tools.gpu_check.batching as batching

    limits: list[float] = []
    clock = Clock()

    class FakeTime:
        monotonic = clock

    def replay(model, device, *, max_batch, requests, options, timeout_s, log, at_load=None):
        limits.append(timeout_s)
        clock.now += timeout_s + check.STOP_S       # each run uses all it was given
        return {"max_batch": max_batch, "options": options}
    monkeypatch.setattr(batching, "replay_run", replay)
    monkeypatch.setattr(check, "time", FakeTime)
    import probe.engine.model.loading as loading
    import tools.gpu_check.layouts as layouts
    monkeypatch.setattr(loading, "load_model", lambda name: None)
    monkeypatch.setattr(layouts, "layouts_agree", lambda loaded, device: {
        "requests": 32, "slots": 8, "equal": True, "differ": []})

    class Args:
        slots, batching_opts, batching_contrast = "16,64", "batching=continuous", "b=c"
        batching_timeout, model = 120.0, "t5-small"
    allowed = plan(420, list(PLAN))["batching"]
    report: dict = {}
    check._batching(Args(), torch.device("cpu"), report, print, lambda: None, allowed)
    assert len(limits) == 4 and all(limit >= check.MIN_BATCHING_RUN_S for limit in limits)
    assert sum(limit + check.STOP_S for limit in limits) == pytest.approx(allowed, rel=0.01)
    assert check.unmeasured(report) == []


@pytest.mark.parametrize("flags, said", [
    (["--budget", "-5"], "--budget -5: seconds must be 0 (no budget) or a finite number above 0"),
    (["--budget", "nan"], "--budget nan: seconds must be 0 (no budget) or a finite number"),
    (["--budget", "inf"], "--budget inf: seconds must be 0 (no budget) or a finite number"),
    (["--config-timeout", "nan"], "--config-timeout nan: seconds must be a finite number above 0"),
    (["--batching-timeout", "0"], "--batching-timeout 0: seconds must be a finite number above 0"),
    (["--requests", "0"], "--requests 0: must be 1 or more"),
])
def test_a_budget_or_limit_out_of_range_is_one_line_and_exit_2(capsys, flags, said):
    """NaN used to be taken (and would skip every section on a GPU), infinity too, while -1
    was refused: finite, and above 0 (the budget: 0 is none)."""
    assert check.main(flags) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"gpu-check: {said}"), err
