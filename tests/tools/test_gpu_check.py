"""`make gpu-check` runs anywhere: without a CUDA device it says so and succeeds; its promises
are read from its report, so what makes it exit 1 is tested here on made-up reports."""

import torch

from tools.gpu_check.check import judge_decode, main, memory_agrees, promises
from tools.gpu_check.decode_matrix import matrix
from tools.gpu_check.kernel_profile import closer_bound


def test_without_a_gpu_it_says_so_and_writes_nothing(tmp_path, capsys):
    if torch.cuda.is_available():
        return      # on a GPU machine the check itself runs (minutes): `make gpu-check`
    assert main(["--out", str(tmp_path / "out")]) == 0
    assert "no CUDA device here" in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_the_warm_ms_per_token_is_the_median_of_the_served_requests():
    """One output token each leaves every tpot None: the median is None, not a TypeError from
    sorting Nones; a failed request is not counted."""
    from tests.conftest import synthetic_record
    from tools.gpu_check.decode_run import warm_tpot_ms

    one_token = [synthetic_record(f"g{i}", i, latency_ms=10.0, output_tokens=1) for i in range(4)]
    assert warm_tpot_ms(one_token) is None
    served = [synthetic_record(f"g{i}", i, latency_ms=v, output_tokens=5)
              for i, v in enumerate([900.0, 40.0, 20.0])]
    failed = synthetic_record("g4", 4, latency_ms=1.0, output_tokens=1, error="boom")
    assert warm_tpot_ms(served + [failed]) == sorted(r.tpot_ms for r in served)[1]


def test_the_matrix_covers_every_mode_and_precision_for_both_paths():
    names = {c.name for c in matrix()}
    for mode in ("off", "default", "reduce-overhead", "max-autotune"):
        for precision in ("fp32", "fp16", "bf16"):
            assert f"fullgraph {precision} compile={mode}" in names
    assert "hf-generate fp32 compile=reduce-overhead" in names   # to see it refused
    assert "fullgraph fp32 tf32 compile=reduce-overhead" in names
    # default mode's host levers beside it, per precision: half precision's host time
    for precision in ("fp32", "fp16", "bf16"):
        assert f"fullgraph {precision} compile=default guards=lean wrapper=cpp" in names


def test_a_configs_extra_options_reach_its_engine():
    """What decode_matrix passes (--opts) is what decode_run's engine is given."""
    from tools.gpu_check.decode_matrix import LEAN, DecodeConfig
    from tools.gpu_check.decode_run import config_options, parser

    config = DecodeConfig("fullgraph", "bf16", "default", extra=LEAN)
    args = parser().parse_args(["--precision", "bf16", "--compile", "default",
                                "--opts", ",".join(config.extra), "--lock", "l", "--out", "o"])
    options = config_options(args)
    assert (options.guards, options.wrapper, options.precision) == ("lean", "cpp", "bf16")
    assert config_options(parser().parse_args(["--lock", "l", "--out", "o"])).guards == "full"


def row(ms, failed=0, equal=True, kernels=117.0):
    return {"ms_per_token": ms, "failed": failed, "tokens_equal_fp32_eager": equal,
            "kernels_per_token": kernels}


def good_decode():
    decode = {}
    for mode, fp32, half in (("off", 6.2, 6.0), ("default", 2.1, 2.0),
                             ("reduce-overhead", 0.53, 0.38)):
        decode[f"fullgraph fp32 compile={mode}"] = row(fp32)
        decode[f"fullgraph fp16 compile={mode}"] = row(half, equal=False)
        decode[f"fullgraph bf16 compile={mode}"] = row(half, equal=False)
    return decode


def test_a_report_that_keeps_every_promise_passes():
    report = {"decode": good_decode(), "sigterm": {"seconds": 4.2},
              "nvml": {"idle_memory_agrees": True, "load_memory_agrees": True}}
    checks = promises(report)
    assert checks and all(checks.values()), checks


def test_each_broken_promise_fails_the_check():
    for breaking in ("failure", "slow half", "slow graphs", "sigterm", "memory"):
        report = {"decode": good_decode(), "sigterm": {"seconds": 3.0},
                  "nvml": {"idle_memory_agrees": True}}
        decode = report["decode"]
        if breaking == "failure":
            decode["fullgraph fp32 compile=reduce-overhead"] = row(None, failed=6, equal=False)
        elif breaking == "slow half":
            decode["fullgraph fp16 compile=default"] = row(3.7, equal=False)   # today's 1.5x
        elif breaking == "slow graphs":
            for half in ("fp16", "bf16"):
                decode[f"fullgraph {half} compile=reduce-overhead"] = row(0.46, equal=False)
        elif breaking == "sigterm":
            report["sigterm"] = {"seconds": 131.0}
        else:
            report["nvml"]["idle_memory_agrees"] = False
        assert not all(promises(report).values()), breaking


def test_nvml_memory_agrees_within_its_tolerance_only():
    reading = {"infertop": {"memory.used": 3.25}, "nvidia_smi": {"memory.used": 4.0}}
    assert memory_agrees(reading)
    # the version-1 figure of the same moment on the H200 (reserved counted as used)
    assert not memory_agrees({"infertop": {"memory.used": 618.3},
                              "nvidia_smi": {"memory.used": 4.0}})
    assert memory_agrees({"infertop": {"memory.used": 3.0}, "nvidia_smi": "not found"}) is None


def test_each_config_is_placed_against_both_floors():
    """The H200's t5-small figures: 117 kernels at ~1 µs each (0.117 ms) lie above the bf16
    roofline (0.032 ms): the kernel count is the closer bound."""
    assert closer_bound(0.46, 0.032, 117, 0.98) == "kernels"
    assert closer_bound(0.05, 0.032, 10, 0.98) == "bytes"
    decode = {"fullgraph bf16 compile=reduce-overhead": row(0.46)}
    judge_decode(decode, {"roofline_ms": {"bf16": 0.032}}, 0.98)
    judged = decode["fullgraph bf16 compile=reduce-overhead"]
    assert judged["closer_to"] == "kernels"
    assert abs(judged["kernel_floor_ms"] - 117 * 0.98e-3) < 1e-12
    assert abs(judged["x_roofline"] - 0.46 / 0.032) < 1e-9


def test_the_matrix_times_its_configs_only_once_every_one_compiled(tmp_path):
    """The orchestration on a CPU (eager, t5-tiny): each config in its own process, timing
    released when all are ready, tokens compared with fp32 eager's."""
    from tools.gpu_check.decode_matrix import run_matrix
    lines: list[str] = []
    results = run_matrix("t5-tiny", 2, 4, ready_s=120, timeout_s=240, log=lines.append,
                         modes=("off",), paths=("fullgraph",), device="cpu")
    assert set(results) == {"fullgraph fp32 compile=off", "fullgraph fp16 compile=off",
                            "fullgraph bf16 compile=off"}
    assert all("crashed" not in r and r["failed"] == 0 for r in results.values()), results
    assert results["fullgraph fp32 compile=off"]["tokens_equal_fp32_eager"] is True
    assert any("timing starts: 3 of 3 configs compiled" in line for line in lines)


def test_the_host_section_times_the_loop_at_each_slot_count():
    """gpu-check's `host` section, run on this CPU: the loop's own µs a step at each slot
    count (the model's step replaced by nothing) and each piece it reads a step; without a
    counter, the reason in the counter's place."""
    from probe.engine.model.loading import load_model
    from probe.engine.observe.device_probe import DeviceProbe
    from probe.engine.observe.energy_counter import Unavailable
    from tools.gpu_check.host_cost import host_costs

    lines: list[str] = []
    report = host_costs(load_model("t5-tiny"), torch.device("cpu"), (2, 6), steps=6,
                        repeats=1, log=lines.append)
    assert set(report["loop_us_by_slots"]) == {2, 6}
    assert all(us > 0 for us in report["loop_us_by_slots"].values())
    assert report["growth"] == report["loop_us_by_slots"][6] / report["loop_us_by_slots"][2]
    read = report["calls_us"]["energy counter read (twice a step)"]
    counter = DeviceProbe(torch.device("cpu")).energy_counter()
    if isinstance(counter, Unavailable):
        assert read == counter.reason
    else:
        assert isinstance(read, float) and read > 0
    assert any("at 6 slots" in line for line in lines)
    assert report["calls_us"]["compile ledger's timer, added to a wrapped call"] >= 0.0


def test_the_paged_layout_is_held_to_the_static_layouts_tokens():
    """gpu-check's layout comparison on this CPU (t5-tiny, a few azure-conv requests), and
    its promise read from made-up reports."""
    from probe.engine.model.loading import load_model
    from tools.gpu_check.layouts import layouts_agree

    found = layouts_agree(load_model("t5-tiny"), torch.device("cpu"), requests=6, slots=3,
                          max_new_tokens=8)
    assert found["equal"] is True and found["failed"] == {"static": 0, "paged": 0}
    assert found["requests"] == 6 and found["differ"] == []
    name = "continuous batching's paged layout serves the static layout's tokens"
    assert promises({"layouts": found})[name] is True
    assert promises({"layouts": {**found, "equal": False, "differ": ["l3"]}})[name] is False
    assert name not in promises({})
