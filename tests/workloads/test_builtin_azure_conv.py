"""The built-in production trace: the Azure conversation trace, shipped in the package with its
attribution, loadable by name, the dashboard's default, fitted by scaling (its shape kept)."""

from __future__ import annotations

import filecmp
from pathlib import Path

import numpy as np
import pytest

from workloads.trace import DEFAULT_TRACE, REAL_TRACES, builtin_path, load_trace

SOURCE = Path(__file__).resolve().parents[3] / "shared" / "data" / "AzureLLMInferenceTrace_conv.csv"


def test_it_loads_by_name_whole_and_within_what_t5_serves():
    trace = load_trace("azure-conv")
    assert len(trace) == 19366
    inputs, outputs = np.array(trace.input_lengths()), np.array(trace.output_lengths())
    assert inputs.max() <= 512 and outputs.max() <= 512 and min(inputs.min(), outputs.min()) >= 1
    # scaled at the 99th percentile: only the top 1% sit at the limit
    assert (inputs == 512).mean() < 0.02 and (outputs == 512).mean() < 0.02
    times = [r.timestamp_ms for r in trace.requests]
    assert times == sorted(times) and 3400e3 < times[-1] < 3600e3     # about an hour


def test_its_attribution_and_license_ship_beside_it_and_the_package_includes_both():
    notice = builtin_path("azure-conv").with_name("azure-conv.ATTRIBUTION.md").read_text()
    for needed in ("CC-BY-4.0", "Splitwise", "Patel", "ISCA 2024", "--scale-quantile 0.99"):
        assert needed in notice
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"builtin/*.md"' in pyproject and '"builtin/*.jsonl"' in pyproject


def test_it_is_the_default_trace_of_the_dashboard_and_replay():
    from infertop.cli import build_parser
    assert DEFAULT_TRACE in REAL_TRACES
    parser = build_parser()
    assert parser.parse_args([]).trace == "azure-conv"
    assert parser.parse_args(["replay", "--out", "x.json"]).trace == "azure-conv"


def test_nothing_in_the_package_reads_the_shared_data_folder():
    root = Path(__file__).resolve().parents[2]
    for folder in ("infertop", "probe", "workloads", "tui"):
        for path in (root / folder).rglob("*.py"):
            assert "shared/data" not in path.read_text(), path


@pytest.mark.skipif(not SOURCE.exists(), reason="the original CSV is not beside this checkout")
def test_the_shipped_file_is_what_the_documented_import_makes(tmp_path):
    from infertop.cli import main as trace_main
    out = tmp_path / "azure-conv.jsonl"
    assert trace_main(["trace", "import", str(SOURCE), "--format", "azure", "--fit", "scale",
                       "--scale-quantile", "0.99", "-o", str(out)]) == 0
    assert filecmp.cmp(out, builtin_path("azure-conv"), shallow=False)
