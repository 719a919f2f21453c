"""The per-step overhead levers: `guards=lean` (dynamo's guard_filter_fn) and `wrapper=cpp`
(inductor's cpp_wrapper) — what torch.compile is given, that every compiled function gets it,
and that a lean compiled step still recompiles for a new input length and decodes the same
tokens."""

from types import SimpleNamespace

import pytest

from probe.contract.options import OptConfig
from probe.engine.observe import guards
from probe.engine.observe.guards import lean_guards
from probe.engine.switchboard import inductor_arguments
from tests.conftest import serve, tokens_of
from tests.probe.test_compile_probes import compiles


def entry(guard_type: str, *, is_global: bool = False, module: bool = False):
    source = SimpleNamespace(is_unspecialized_nn_module=lambda: module)
    return SimpleNamespace(guard_type=guard_type, is_global=is_global,
                           orig_guard=SimpleNamespace(source=source))


def test_lean_keeps_the_inputs_guards_and_drops_modules_globals_and_dimension_marks():
    entries = [entry("TENSOR_MATCH"),                          # an input tensor: kept
               entry("GRAD_MODE"),                              # global state: kept
               entry("CONSTANT_MATCH"),                         # an int argument: kept
               entry("TENSOR_MATCH", module=True),              # a parameter: dropped
               entry("TYPE_MATCH", module=True),                # a module attribute: dropped
               entry("TYPE_MATCH", is_global=True),             # a library global: dropped
               entry("DIMENSION_DYNAMIC_MARKING_GUARD")]        # never marked here: dropped
    assert lean_guards(entries) == [True, True, True, False, False, False, False]


def test_wrapper_cpp_and_guards_lean_reach_torch_compile_in_a_fresh_dict_each_time():
    lean = OptConfig(compile="default", wrapper="cpp", guards="lean")
    first = inductor_arguments(lean)["options"]
    assert first["cpp_wrapper"] is True and first["guard_filter_fn"] is lean_guards
    first.pop("guard_filter_fn")                  # what torch.compile does to the dict it gets
    assert inductor_arguments(lean)["options"]["guard_filter_fn"] is lean_guards
    assert "guard_filter_fn" not in inductor_arguments(OptConfig(compile="default",
                                                                 wrapper="cpp"))["options"]


def test_without_compile_the_step_levers_are_off_with_a_note(make_engine):
    engine = make_engine("decode=fullgraph")
    variant = engine.switchboard.resolve(OptConfig(decode="fullgraph", wrapper="cpp",
                                                   guards="lean"))
    assert variant.options.wrapper == "python" and variant.options.guards == "full"
    assert "wrapper is an inductor option: it does nothing without compile" in variant.notes
    assert "guards is a dynamo option: it does nothing without compile" in variant.notes


def guard_times_are_dynamos(engine, kind=None) -> None:
    """The feed's "guards" figure is dynamo's CompilationMetrics.guard_latency_us of that very
    compile (which of full and lean is lower is a timing: the bench's job)."""
    import torch

    metrics = {str(m.compile_id): m for m in torch._dynamo.utils.get_compilation_metrics()}
    events = compiles(engine, kind)
    assert {e.function for e in events} >= {"encode", "prefill_step", "decode_step"}
    for event in events:
        assert event.guard_us == metrics[event.compile_id].guard_latency_us > 0


def spy_on_the_lean_filter(monkeypatch) -> list[int]:
    """How many guards each call of the lean filter was given, one entry a compiled frame."""
    filtered: list[int] = []

    def spy(entries):
        filtered.append(len(entries))
        return lean_guards(entries)
    monkeypatch.setattr(guards, "lean_guards", spy)
    return filtered


def test_lean_guards_still_recompile_for_a_new_length_and_decode_the_same_tokens(
        make_engine, monkeypatch):
    """And every compiled function gets the lean filter: torch.compile pops guard_filter_fn
    from its options, so with one dict shared by the decoder's compiled functions only the
    first (encode) would be filtered; each compile carries dynamo's own guard check time."""
    filtered = spy_on_the_lean_filter(monkeypatch)
    shapes = [(8, 4), (8, 4), (11, 4), (14, 3)]
    lean = make_engine("decode=fullgraph", "compile=default", "guards=lean")
    assert all(r.ok for r in serve(lean, shapes))
    assert len(filtered) >= 3          # encode, prefill_step and decode_step
    guard_times_are_dynamos(lean, "compile")
    recompiles = compiles(lean, "recompile", "encode")
    assert len(recompiles) == 2 and "expected 8, actual 11" in recompiles[0].reason
    eager = make_engine("decode=fullgraph")     # after: the compile probes are process-wide
    serve(eager, shapes)
    assert tokens_of(lean) == tokens_of(eager)


def test_full_guards_carry_dynamos_own_guard_check_time_and_no_filter(make_engine,
                                                                      monkeypatch):
    """As the lean step's compiles do (the test above)."""
    filtered = spy_on_the_lean_filter(monkeypatch)
    engine = make_engine("decode=fullgraph", "compile=default", "guards=full")
    assert serve(engine, [(9, 4)])[0].ok
    assert filtered == []              # full guards: no filter reaches torch.compile
    guard_times_are_dynamos(engine)


@pytest.mark.slow
def test_the_lean_step_under_inductor_decodes_the_same_tokens(make_engine):
    """cpp_wrapper, lean guards, the one-query attention and inductor's own batch-1 matmuls
    together, as the roofline's `+all` row serves them (its `+lean step` minus gemv: one
    inductor compile covers both, the suite's slowest kind; tests/probe/test_decode_attention.py
    checks attention=inductor's tokens on every decode path under dynamo)."""
    shapes = [(7, 4), (7, 4)]
    lean = make_engine("compile=default", "decode=fullgraph", "wrapper=cpp", "guards=lean",
                       "attention=inductor", "gemv=inductor", backend="inductor",
                       max_new_tokens=4)
    records = serve(lean, shapes)
    assert all(r.ok for r in records), records[0].error
    assert lean.switchboard.is_compiled(lean.options)        # no fallback to eager
    eager = make_engine("decode=fullgraph", max_new_tokens=4)
    serve(eager, shapes)
    assert tokens_of(lean) == tokens_of(eager)


# Lean guards on hf-generate (generate()'s frames read the output length from an argument: a
# guard lean keeps, so a request of another length is never served a graph traced for the
# first): in tests/probe/test_decode_attention.py::test_one_query_attention_decodes_sdpas_tokens,
# which compiles generate() with them (the suite's slowest compile, once).
