import numpy as np
import pytest

from probe.common.errors import TraceError
from workloads.generator import PROFILES, generate, write_builtin
from workloads.trace import GENERATED_TRACES, builtin_path, load_trace, trace_lines, write_trace


@pytest.mark.parametrize("profile", list(PROFILES))
def test_same_seed_gives_a_byte_identical_file(tmp_path, profile: str) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    write_trace(generate(profile, 500, seed=7, rate=2.0), first)
    write_trace(generate(profile, 500, seed=7, rate=2.0), second)
    assert first.read_bytes() == second.read_bytes()
    other = tmp_path / "c.jsonl"
    write_trace(generate(profile, 500, seed=8, rate=2.0), other)
    assert other.read_bytes() != first.read_bytes()


def test_the_committed_builtin_files_are_what_the_generator_makes(tmp_path) -> None:
    fresh = {path.stem: path.read_bytes() for path in write_builtin(tmp_path)}
    assert set(fresh) == set(GENERATED_TRACES)      # azure-conv is imported, not generated
    for name in GENERATED_TRACES:
        assert builtin_path(name).read_bytes() == fresh[name], "regenerate with: infertop trace generate --builtin"


def test_fewer_requests_give_a_prefix() -> None:
    assert list(trace_lines(generate("chat", 300, 1))) == list(trace_lines(generate("chat", 1000, 1)))[:300]


@pytest.mark.parametrize("name", GENERATED_TRACES)
def test_builtin_traces_are_t5_sized_and_at_their_rate(name: str) -> None:
    trace = load_trace(name)
    inputs, outputs = np.array(trace.input_lengths()), np.array(trace.output_lengths())
    assert len(trace) == 2000
    assert inputs.min() >= 1 and inputs.max() <= 512
    assert outputs.min() >= 1 and outputs.max() <= 256
    rate = (len(trace) - 1) / trace.duration_s()
    assert rate == pytest.approx(PROFILES[name].default_rate_rps, rel=0.1)


def test_chat_outputs_mostly_16_to_128_with_median_near_48() -> None:
    outputs = np.array(load_trace("chat").output_lengths())
    assert 40 <= np.median(outputs) <= 56
    assert np.mean((outputs >= 16) & (outputs <= 128)) >= 0.8


def test_profiles_have_their_character() -> None:
    def cv(trace):
        gaps = np.diff(trace.timestamps_ms())
        return gaps.std() / gaps.mean()

    chat, summarize, translate, batch = (load_trace(n) for n in ("chat", "summarize", "translate", "batch"))
    # summarize: long inputs; chat: the widest input spread; batch: narrow lengths in bursts.
    assert np.median(summarize.input_lengths()) > 2 * np.median(chat.input_lengths())
    spread = {t.name: np.std(np.log(t.input_lengths())) for t in (chat, summarize, translate, batch)}
    assert max(spread, key=spread.get) == "chat" and min(spread, key=spread.get) == "batch"
    assert cv(batch) > 3 > cv(chat) > 1.2 > cv(summarize) > 0.8
    # translate: output length tracks input length.
    assert np.corrcoef(translate.input_lengths(), translate.output_lengths())[0, 1] > 0.9
    assert abs(np.corrcoef(chat.input_lengths(), chat.output_lengths())[0, 1]) < 0.1


def test_rate_override_scales_time() -> None:
    slow, fast = generate("summarize", 2000, 0, rate=0.5), generate("summarize", 2000, 0, rate=5.0)
    assert slow.input_lengths() == fast.input_lengths()
    assert slow.duration_s() / fast.duration_s() == pytest.approx(10.0, rel=0.01)


@pytest.mark.parametrize("args, option", [(("nope", 10, 0), "--profile"), (("chat", 0, 0), "-n"),
                                          (("chat", 10, 0, -1.0), "--rate"), (("batch", 100, 0, 100.0), "--rate")])
def test_bad_generator_arguments_name_the_option(args, option: str) -> None:
    with pytest.raises(TraceError, match=f"^{option}:"):
        generate(*args)
