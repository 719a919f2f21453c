"""`bench --slo`: every run's goodput and SLO attainment (and the SLO) in report.json, per run
and per config, and in report.md beside the throughput — equal to a recomputation from the
records its saved session holds. Synthetic sessions: no model."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from probe.bench.goodput_section import goodput_markdown
from probe.common.atomic import write_json_atomic
from probe.common.units import fmt_fraction, fmt_num
from probe.contract.objective import Slo
from probe.contract.options import OptConfig
from probe.runs.plan import BenchRequest, RunSpec
from probe.runs.results import PassResult, section_figures, summarize_run
from probe.session_store.snapshot import read_document, snapshot_document
from tests.bench.conftest import record


def a_run(latencies: list[float], failed: set[int], slo: Slo | None, make_session):
    """A run as the bench makes one (a warm-up pass, then one pass), its session saved."""
    count = len(latencies)
    spec = RunSpec(OptConfig(), tuple(BenchRequest(f"r{i}", 10, 5) for i in range(count)),
                   "replayed")
    warm = [record(f"r{i}@warm-up", i, latency_ms=latencies[i]) for i in range(count)]
    steady = [record(f"r{i}@pass 1", count + i, latency_ms=latencies[i], start_s=100.0 + i,
                     error="RuntimeError: boom" if i in failed else None)
              for i in range(count)]
    data = replace(make_session(warm + steady), slo=slo)
    result = summarize_run(spec, data, PassResult(tuple(warm), 1.0),
                           [PassResult(tuple(steady), 1.0)])
    return result, data


def recomputed(document: dict, bound_ms: float) -> tuple[float, float, float]:
    """goodput req/s, good tokens/s, attainment by their definitions, from the saved records:
    good = served within the bound; over first start to last end of every record."""
    records = document["requests"]
    good = [r for r in records if not r["error"] and r["latency_ms"] <= bound_ms]
    span = max(r["end_s"] for r in records) - min(r["start_s"] for r in records)
    return (len(good) / span, sum(r["output_tokens"] for r in good) / span,
            len(good) / len(records))


@given(latencies=st.lists(st.floats(10.0, 3000.0), min_size=1, max_size=8),
       failed=st.sets(st.integers(0, 7), max_size=3), bound=st.floats(20.0, 2500.0))
def test_each_runs_goodput_is_its_saved_records_own(tmp_path_factory, make_session, latencies,
                                                    failed, bound):
    slo = Slo(latency_ms=bound)
    result, data = a_run(latencies, failed, slo, make_session)
    path = tmp_path_factory.mktemp("run") / "run.json"
    write_json_atomic(path, snapshot_document(data, environment={}, model={}, trace={}))
    goodput, tokens, attainment = recomputed(read_document(path), bound)
    run = result.as_dict()                                   # report.json `runs.<key>`
    config = section_figures(result)                         # `experiments.<id>.configs.<key>`
    for figures in (run, config):
        assert figures["slo"] == slo.as_dict()
        assert abs(figures["goodput_rps"] - goodput) <= 1e-9 * max(goodput, 1.0)
        assert abs(figures["goodput_tokens_per_s"] - tokens) <= 1e-9 * max(tokens, 1.0)
        assert abs(figures["slo_attainment"] - attainment) <= 1e-12
        assert figures["goodput_rps"] <= figures["throughput_rps"] + 1e-12
    markdown = "\n".join(goodput_markdown({"slo": slo.as_dict(), "runs": {"e1": run}}))
    row = next(line for line in markdown.splitlines() if line.startswith("| `e1`"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[2:] == [fmt_num(run["throughput_rps"], 3), fmt_num(goodput, 3),
                         fmt_num(tokens, 1), fmt_fraction(attainment)]
    assert slo.text() in markdown


def test_without_an_slo_nothing_is_added(make_session):
    result, _ = a_run([100.0, 200.0], set(), None, make_session)
    run = result.as_dict()
    assert run["slo"] is None and run["goodput_rps"] is None
    assert goodput_markdown({"slo": None, "runs": {"e1": run}}) == []
