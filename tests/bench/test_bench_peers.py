"""The peers experiment's pure parts on synthetic runs (no model, no CTranslate2), and one slow
end-to-end on t5-tiny that skips when ctranslate2 is not installed."""

from __future__ import annotations

import statistics
import sys
from importlib.util import find_spec

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.bench.experiments.peers import (
    PATHS,
    PEER_INPUT_TOKENS,
    PEER_OUTPUT_TOKENS,
    QUICK_PATHS,
    build,
    chart,
    checks,
    measure,
    not_installed_section,
    peer_requests,
    peer_spec,
    roofline_ms,
)
from probe.bench.peer_figures import (
    INFERTOP,
    PEER,
    PathRun,
    agreement,
    family,
    precision_rows,
)

ROOF = {"fp32": 10.0, "int8": 3.0}


def run(name, engine, precision, pass_ms, alongside="", request_ms=None) -> PathRun:
    return PathRun(name, engine, precision, name, tuple(pass_ms),
                   tuple(request_ms or pass_ms), 1.0, 1.0, alongside)


def paths() -> list[PathRun]:
    return [run("hf eager", INFERTOP, "fp32", [30, 31, 33]),
            run("best fp32", INFERTOP, "fp32", [14, 15, 16]),
            run("best int8", INFERTOP, "int8", [9, 9.5, 12]),
            run("ctranslate2 float32", PEER, "fp32", [14, 15, 16], alongside="hf eager"),
            run("ctranslate2 float32", PEER, "fp32", [11, 12, 12.5], alongside="best fp32"),
            run("ctranslate2 int8", PEER, "int8", [7, 8, 8], alongside="best int8"),
            run("ctranslate2 int8_float32", PEER, "int8_float32", [8, 8, 8],
                alongside="best int8")]


def test_each_peer_precision_is_held_against_the_fastest_infertop_path_of_its_family() -> None:
    rows = precision_rows(paths(), ROOF)
    assert set(rows) == {"fp32", "int8", "int8_float32"}
    fp32 = rows["fp32"]
    # the peer's median over every float32 pass of the run, those beside hf eager too
    assert fp32["peer_ms"] == pytest.approx(13.25) and fp32["peer_passes"] == 6
    assert fp32["best_ms"] == 15 and fp32["best_path"] == "best fp32"
    assert fp32["ratio_to_peer"] == pytest.approx(15 / 13.25)
    # the passes beside the best path alone are kept apart
    assert fp32["peer_ms_alongside"] == 12 and fp32["ratio_to_peer_alongside"] == pytest.approx(1.25)
    assert fp32["roofline_ms"] == 10 and fp32["ratio_to_roofline"] == pytest.approx(1.5)
    assert rows["int8_float32"]["best_ms"] == 9.5 and rows["int8_float32"]["roofline_ms"] == 3
    assert rows["int8"]["ratio_to_peer"] == pytest.approx(9.5 / 8)


def test_section_keeps_the_report_json_keys_and_the_checks_read_them() -> None:
    section = build(paths(), ROOF, loads=[[1.5, 1, 1], [3.0, 2, 1]], model="t5-tiny",
                    requests=3, repeats=3)
    for row in section["precisions"].values():
        assert {"peer_ms", "best_ms", "best_config", "ratio_to_peer", "roofline_ms"} <= set(row)
    names = [row[1] for row in section["table"]["rows"]]
    assert names.count("ctranslate2 float32") == 1       # the peer's passes merged, one row
    assert any("1.50–3.00" in line for line in section["observed"])
    found = checks(section)
    assert found["peers_ratio_to_peer"]["fp32"] == pytest.approx(15 / 13.25)
    assert found["peers_fp32_ratio_to_roofline"] == pytest.approx(1.5)
    assert len(section["chart"]) == len(section["table"]["rows"])


def test_without_ctranslate2_the_section_says_how_to_install_it() -> None:
    section = not_installed_section()
    assert "pip install" in section["observed"][0] and section["precisions"] == {}
    assert checks(section) == {}


def test_roofline_is_bytes_over_bandwidth() -> None:
    roof = {"bandwidth": {"read_gb_s": 20.0},
            "step_bytes_by_precision": {"fp32": 200_000_000, "int8": "not here"}}
    assert roofline_ms(roof) == {"fp32": pytest.approx(10.0)}
    assert roofline_ms({}) == {}


@given(st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=6), min_size=1, max_size=5))
def test_agreement_is_one_against_itself_and_falls_with_each_changed_token(seqs) -> None:
    assert agreement(seqs, seqs) == (1.0, 1.0)
    changed = [list(s) for s in seqs]
    changed[0][0] += 1
    share, exact = agreement(changed, seqs)
    assert share == pytest.approx(1 - 1 / sum(len(s) for s in seqs))
    assert exact == pytest.approx(1 - 1 / len(seqs))


def test_family_and_chart() -> None:
    assert family("int8_float32") == "int8" and family("fp32") == "fp32"
    bars = chart([run("a", INFERTOP, "fp32", [10]), run("b", PEER, "fp32", [5])], width=10)
    assert bars[0].count("█") == 10 and bars[1].count("█") == 5


@pytest.mark.slow
@pytest.mark.skipif(find_spec("ctranslate2") is None, reason="ctranslate2 is not installed")
def test_peers_end_to_end_on_t5_tiny(tmp_path) -> None:
    import torch

    from probe.engine.model.loading import load_model
    from probe.runs.openloop import OpenLoopStudy
    from probe.runs.plan import make_plan
    from probe.runs.runs import RunContext

    loaded = load_model("t5-tiny")
    plan = make_plan(model="t5-tiny", trace_name="chat", device="cpu", quick=True, requests=3,
                     bucket_count=1, seed=0)
    context = RunContext(model="t5-tiny", device="cpu", loaded=loaded, max_input=64, repeats=2)
    study = OpenLoopStudy(context, plan, {})
    results, section = measure(study)
    by_name = {p["name"]: p for p in results["paths"]}
    assert by_name["ctranslate2 float32"]["ms_per_token"]["n"] == 2
    # same weights, fp32: the peer's greedy tokens are the reference's
    assert by_name["ctranslate2 float32"]["token_agreement"] >= 0.9
    assert by_name["lean step"]["token_agreement"] >= 0.9
    assert set(by_name) >= set(QUICK_PATHS)
    assert "fp32" in section["precisions"]
    assert section["precisions"]["fp32"]["peer_ms"] > 0
    assert statistics.median(by_name["hf eager"]["pass_ms"]) > 0
    assert torch.get_num_threads() >= 1
    assert "ctranslate2" not in sys.modules      # the peer ran in a process of its own


def test_every_request_has_the_issue_s_shape_and_compiles_one_shape() -> None:
    from probe.runs.plan import make_plan
    requests = peer_requests(3)
    assert {(r.input_length, r.output_length) for r in requests} == {
        (PEER_INPUT_TOKENS, PEER_OUTPUT_TOKENS)}
    assert len({r.id for r in requests}) == 3
    plan = make_plan(model="t5-tiny", trace_name="chat", device="cpu", quick=True, requests=3,
                     bucket_count=2, seed=0)
    for _, _, options in PATHS:
        spec = peer_spec(plan, options, requests)
        assert spec.requests == requests
        assert spec.edges == ((PEER_INPUT_TOKENS,) if options.bucketing == "on" else ())
    assert set(QUICK_PATHS) <= {name for name, _, _ in PATHS}
    # every precision the peer is held against has a path of its own in --quick too
    assert {p for name, p, _ in PATHS if name in QUICK_PATHS} == {p for _, p, _ in PATHS}


def test_peers_runs_only_when_asked_for_by_name() -> None:
    from probe.bench.experiments import select_experiments
    assert "peers" not in select_experiments(None)
    assert select_experiments("peers") == ("peers",)
