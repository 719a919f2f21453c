"""`make gpu-check`'s J/token, on this CPU: how its entries are built from records and the
ledger (against sums done here), that the batching entry is the figure `snapshot show`
prints, that no counter gives a reason and never a number, what the issue expects (reported,
never a promise), and one decode config run on t5-tiny through the engine's own NVML reader
fed by a fake pynvml."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

import pytest

from probe.contract.figures import ConfigEnergy
from probe.contract.options import OptConfig
from probe.contract.records import EnergyPhases
from probe.contract.session import ConfigEntry, SessionData
from probe.session_store.snapshot import session_data, snapshot_document
from probe.session_store.snapshot_report import show
from tests.conftest import synthetic_record
from tools.gpu_check.check import promises
from tools.gpu_check.energy import (
    NO_SERVED,
    energy_text,
    expectations,
    session_energy,
    timed_energy,
)

NVML = "NVML energy counter"


def measured(i: int, joules: float, tokens: int = 8, error: str | None = None):
    record = synthetic_record(f"g{i}", i, latency_ms=50.0 + i, output_tokens=tokens, error=error)
    return replace(record, energy_j=joules, energy_phases_j=EnergyPhases(0.1, joules - 0.1))


def test_timed_j_per_token_is_the_requests_joules_over_their_served_tokens() -> None:
    timed = [measured(1, 1.25), measured(2, 0.75, tokens=4), measured(3, 0.5, error="boom")]
    before = ConfigEnergy(source=NVML, idle_j=40.0, idle_s=9.0, busy_s=30.0)  # warm-up's
    after = ConfigEnergy(source=NVML, idle_j=40.3, idle_s=9.1, busy_s=30.2)
    entry = timed_energy(timed, before, after)
    # a failed request's joules count (the GPU spent them), its tokens do not
    assert entry["j_per_token"] == pytest.approx((1.25 + 0.75 + 0.5) / (8 + 4))
    assert entry["request_j"] == pytest.approx(2.5)
    assert entry["tokens"] == 12
    assert entry["window_idle_j"] == pytest.approx(0.3)
    assert entry["timed_s"] == pytest.approx((51 + 52 + 53) / 1000)
    assert entry["source"] == NVML
    assert energy_text(entry) == f"{2.5 / 12:.4g} J/token ({NVML})"


def test_no_counter_is_a_reason_never_a_number() -> None:
    why = "NVML is not available for this GPU"
    timed = [synthetic_record("g1", 1, latency_ms=50.0)]        # energy_j None
    entry = timed_energy(timed, None, ConfigEnergy(unavailable=why))
    assert entry == {"unavailable": why}
    assert energy_text(entry) == f"J/token: not measurable here ({why})"
    failed = [measured(1, 0.5, error="boom")]
    entry = timed_energy(failed, None, ConfigEnergy(source=NVML))
    assert entry["unavailable"] == NO_SERVED and "j_per_token" not in entry
    assert "not measured" in energy_text(None)


def saved(energy: ConfigEnergy) -> dict:
    records = tuple(measured(i, 0.2 + 0.1 * i, tokens=6 + i) for i in range(4))
    data = SessionData(records=records,
                       configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig())}),
                       energy=MappingProxyType({"c1": energy}))
    return json.loads(json.dumps(snapshot_document(data, environment={}, model={}, trace={})))


def test_the_batching_entry_is_the_figure_snapshot_show_prints(tmp_path: Path) -> None:
    document = saved(ConfigEnergy(source="NVML integrated power", idle_j=5.0, idle_s=2.0,
                                  busy_s=8.0))
    entry = session_energy(session_data(document))
    assert entry["j_per_token"] == pytest.approx(
        sum(0.2 + 0.1 * i for i in range(4)) / sum(6 + i for i in range(4)))
    assert entry["j_per_token"] == pytest.approx(document["segments"][0]["energy"]["j_per_token"])
    assert entry["source"] == "NVML integrated power"       # the report says it integrated
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert f"{entry['j_per_token']:.3g}" in show(str(path))


def test_a_batching_run_without_a_counter_says_why() -> None:
    why = "this GPU reports neither an energy counter nor its power"
    entry = session_energy(session_data(saved(ConfigEnergy(unavailable=why))))
    assert entry == {"unavailable": why}


def batching(slots: int | str, j: float | None, graphs: bool = True) -> dict:
    options = ["batching=continuous", "precision=bf16"]
    if graphs:
        options.append("compile=reduce-overhead")
    energy = {"unavailable": "no counter"} if j is None else {"j_per_token": j, "source": NVML}
    return {"max_batch": slots, "slots": 256 if slots == "sized" else slots,
            "options": options, "energy": energy}


def decode_rows(off: float, default: float, graphs: float) -> dict:
    return {f"fullgraph {p} compile={m}": {"ms_per_token": 1.0, "failed": 0,
                                            "energy": {"j_per_token": j, "source": NVML}}
            for p in ("fp32", "bf16") for m, j in (("off", off), ("default", default),
                                                  ("reduce-overhead", graphs))}


def test_what_the_issue_expects_is_judged_and_never_a_promise() -> None:
    report = {"decode": decode_rows(0.9, 0.5, 0.2),
              "batching": [batching(16, 0.08), batching(64, 0.03), batching("sized", 0.01),
                           batching("sized", 0.02, graphs=False)]}
    met = expectations(report)
    assert met["J/token falls as slots grow (16 → 64 → 256)"] is True
    assert met["J/token lower with CUDA graphs than without, continuous batching at the "
               "default sizing"] is True
    assert met["J/token lower under CUDA graphs than compile=default, fullgraph bf16"] is True
    assert len(met) == 2 * 2 + 2 and all(met.values())
    report["batching"][1] = batching(64, 0.09)          # 64 slots cost more than 16
    report["decode"] = decode_rows(0.9, 0.1, 0.2)        # graphs above default
    missed = expectations(report)
    assert not missed["J/token falls as slots grow (16 → 64 → 256)"]
    assert not missed["J/token lower under CUDA graphs than compile=default, fullgraph fp32"]
    assert missed["J/token lower under CUDA graphs than compile=off, fullgraph fp32"]
    assert not any(name.startswith("J/token") for name in promises(report))


def test_a_figure_that_is_missing_is_left_out_not_judged() -> None:
    report = {"decode": {"fullgraph fp32 compile=reduce-overhead": {"crashed": "exit 1"},
                         "fullgraph fp32 compile=off": {"energy": {"unavailable": "x"}}},
              "batching": [batching(16, None), batching(64, 0.03),
                           batching("sized", 0.01), batching("sized", None, graphs=False)]}
    assert expectations(report) == {"J/token falls as slots grow (64 → 256)": True}
    assert expectations({}) == {}


class CountingNvml:
    """pynvml's two energy calls, the counter 1 J (1000 mJ) higher at every reading."""

    def __init__(self) -> None:
        self.reads = 0

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: object) -> int:
        self.reads += 1
        return 7_000_000_000 + 1000 * self.reads

    def nvmlDeviceGetPowerUsage(self, handle: object) -> int:
        raise AssertionError("the counter exists: power is never integrated")


def test_a_decode_config_reports_j_per_token_through_the_engines_nvml_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """decode_run on t5-tiny (CPU, eager) with the GPU's reader (`open_counter("cuda", …)`,
    NVML's counter) over a fake pynvml: batch 1 reads the counter the same number of times
    a request, so the timed window's joules are that count × the timed requests, and
    J/token is the requests' share of them over the tokens asked for."""
    from probe.engine.observe.device_probe import DeviceProbe
    from probe.engine.observe.energy_counter import open_counter
    from tools.gpu_check import decode_run

    nvml = CountingNvml()
    opening: list[int] = []

    def opened(self: DeviceProbe):
        counter = open_counter("cuda", nvml, "gpu0")
        opening.append(nvml.reads)      # its reads to see the counter exists, and the first
        return counter
    monkeypatch.setattr(DeviceProbe, "energy_counter", opened)
    lock = tmp_path / "gpu.lock"
    Path(f"{lock}.go").touch()
    requests, tokens = 3, 4
    args = decode_run.parser().parse_args([
        "--model", "t5-tiny", "--device", "cpu", "--requests", str(requests),
        "--input-tokens", "8", "--output-tokens", str(tokens), "--lock", str(lock),
        "--out", str(tmp_path / "one.json")])
    result = decode_run.run(args)
    entry = result["energy"]
    assert result["failed"] == 0 and entry["source"] == NVML
    assert entry["tokens"] == requests * tokens
    assert len(opening) == 1
    per_request = (nvml.reads - opening[0]) / (requests + 1)      # the warm-up, the timed
    assert per_request == int(per_request) and per_request >= 2
    window_j = entry["request_j"] + entry["window_idle_j"]
    assert window_j == pytest.approx(per_request * requests)
    assert entry["j_per_token"] == pytest.approx(entry["request_j"] / (requests * tokens))
    assert entry["request_j"] > 0
