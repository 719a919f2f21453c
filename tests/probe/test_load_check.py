"""Contention (the machine busy beyond the engine) and the offered load's live share."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from probe.analysis.load_check import CONTENTION_CORES, contention
from probe.analysis.load_figures import LIVE_SCOPE, Load
from probe.contract.device_sample import DeviceSample
from tui.widgets.device import device_detail, device_headline


def cpu(machine_pct: float, engine_pct: float, cores: int = 2) -> DeviceSample:
    return DeviceSample(kind="CPU", name=f"{cores} cores", util_pct=machine_pct,
                        mem_used_bytes=1, mem_total_bytes=2, mem_free_bytes=1,
                        process_cpu_pct=engine_pct, cpu_cores=cores)


@given(st.floats(0, 100), st.floats(0, 200), st.integers(1, 64))
def test_contention_is_the_machines_busy_cores_beyond_the_engines(machine, engine, cores):
    found = contention(cpu(machine, engine, cores))
    others = machine / 100 * cores - engine / 100
    assert (found is not None) == (others > CONTENTION_CORES)
    if found is not None:
        assert abs(found.others_cores - others) < 1e-9 and found.cores == cores


def test_the_device_panel_says_when_figures_are_unreliable():
    busy = cpu(100.0, 60.0)                      # 2 cores busy, the engine 0.6 of one
    assert "others use 1.4 of 2 cores: figures unreliable" in device_detail(
        busy).plain
    assert "contended" in device_headline(busy, width=80).plain
    calm = cpu(50.0, 95.0)
    assert contention(calm) is None and "unreliable" not in device_detail(calm).plain
    gpu = DeviceSample(kind="GPU", name="x", util_pct=100.0, mem_used_bytes=1,
                       mem_total_bytes=2, mem_free_bytes=1, process_cpu_pct=0.0, cpu_cores=2)
    assert contention(gpu) is None


def test_the_offered_share_is_read_against_the_live_capacity():
    def load_share(offered_rps, capacity_rps):
        return Load(offered_rps, capacity_rps, LIVE_SCOPE).share
    assert load_share(0.33, 0.26) > 1.0 and load_share(0.5, 1.0) == 0.5
    assert load_share(None, 1.0) is None and load_share(0.5, None) is None
