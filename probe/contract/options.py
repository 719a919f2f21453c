"""The optimization switchboard's options, each declared once, and the value that holds them.

`OPTIONS` is the registry: every option's key, values (the first is the default), dashboard
hotkey, status-bar label, help, and the one place in the engine that applies it. `--opt`
parsing, the dashboard's key bindings, its status bar and help screen, and the README table
are all made from it. `OptConfig` is frozen: the engine swaps it whole between requests, never
inside one, and every request record carries the id of the config that served it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Iterable

from probe.common.errors import BadConfig


@dataclass(frozen=True)
class Option:
    key: str
    values: tuple[str, ...]     # in cycling order; the first is the default
    hotkey: str
    label: str                  # the status bar's and footer's short name
    hint: str                   # the help screen's line
    help: str                   # the README's: what the engine does with it
    applied_by: str             # where it acts: module.function, one hop for a reader
    in_footer: bool = True      # refinements live in the help screen only
    # What acts on it when it only shapes compiled code: "inductor" or "dynamo"; without compile
    # such an option is served at its default.
    compiler: str = ""

    @property
    def default(self) -> str:
        return self.values[0]

    @property
    def needs_compile(self) -> bool:
        return bool(self.compiler)


OPTIONS: tuple[Option, ...] = (
    Option("compile", ("off", "default", "reduce-overhead", "max-autotune"), "c", "compile",
           "torch.compile mode",
           "torch.compile with that mode; each new config starts cold (torch._dynamo.reset), "
           "as a fresh deployment would", "probe/engine/switchboard.py: Switchboard._wrap"),
    Option("decode", ("hf-generate", "fullgraph"), "g", "decode",
           "HF generate() or the graph-break-free greedy loop",
           "HF generate() (under compile the whole call is compiled: the graph breaks live "
           "there) or our greedy loop over a static KV cache whose encode, prefill_step and "
           "decode_step compile with fullgraph=True: zero breaks",
           "probe/engine/switchboard.py: Switchboard._build"),
    Option("dynamic", ("off", "on"), "d", "dyn",
           "Dynamic shapes for compiled code",
           "dynamic=False (every new shape recompiles) or dynamic=True",
           "probe/engine/switchboard.py: Switchboard._wrap"),
    Option("bucketing", ("off", "on"), "b", "bucket",
           "Pad inputs up to bucket edges so few shapes compile",
           "pad inputs up to the next bucket edge (--buckets, or the planner's exact best 4 "
           "for the trace) so few shapes compile", "probe/engine/engine.py: Engine.rows_for"),
    Option("kv_cache", ("on", "off"), "k", "kv",
           "KV cache (off recomputes every step)",
           "off: the decoder recomputes the whole prefix for every token",
           "probe/engine/switchboard.py: Switchboard._build"),
    Option("precision", ("fp32", "bf16", "fp16"), "p", "prec",
           "Weights and activations",
           "model and cache dtype (variants are derived from an fp32 master copy)",
           "probe/engine/switchboard.py: Switchboard._model"),
    Option("quant", ("off", "int8", "int4"), "i", "quant",
           "int8 (CPU: int8 GEMM) or int4 weight-only quantization",
           "int8: on a CPU, int8 weights and activations quantized per call through the CPU's "
           "int8 GEMM (torch's x86/fbgemm kernel, wrapped as a custom op so it compiles), or "
           "with gemv=inductor int8 weight-only, each batch-1 product inductor's own GEMV over "
           "the int8 values (the faster one compiled); elsewhere torchao's weight-only int8. "
           "int4: torchao's weight-only. Where it cannot run the engine says why and serves "
           "with quant off",
           "probe/engine/switchboard.py: quantize"),
    Option("prewarm", ("off", "on"), "w", "warm",
           "Compile the bucket shapes before serving",
           "compile every bucket shape before serving, so no request waits on a compile",
           "probe/engine/serving.py: ServingLoop._apply_options"),
    Option("batching", ("off", "dynamic", "continuous"), "B", "batch",
           "Batching",
           "dynamic: up to max_batch requests within a 50 ms window, padded together, all "
           "returned when the longest is done; continuous: iteration-level scheduling, each "
           "request leaves its slot the step it is done", "probe/engine/serving.py: ServingLoop.run"),
    Option("freezing", ("off", "on"), "f", "freeze",
           "Inductor freezing (needs compile)",
           "inductor freezing: weights become constants the compiled graph folds (prepacked "
           "CPU GEMMs); needs compile", "probe/engine/switchboard.py: inductor_arguments",
           in_footer=False, compiler="inductor"),
    Option("gemv", ("library", "inductor"), "m", "gemv",
           "Batch-1 matmuls: BLAS/oneDNN, or inductor's reductions (needs compile)",
           "batch-1 matrix-vector products (M = 1, K and N ≤ 65,536: every t5 decoder linear "
           "and lm_head): the library's GEMM call, or inductor's decompose_mm_pass, which "
           "makes each a multiply-and-sum it generates and fuses itself; with quant=int8 on a "
           "CPU, int8 weights (one scale per output channel) that GEMV converts as it reads "
           "them, activations unquantized, instead of the int8 GEMM; needs compile",
           "probe/engine/switchboard.py: inductor_arguments", in_footer=False,
           compiler="inductor"),
    Option("wrapper", ("python", "cpp"), "W", "wrapper",
           "Kernels launched from C++, not Python (needs compile)",
           "inductor's cpp_wrapper: the compiled graph's kernels are launched from generated C++ "
           "instead of generated Python, which saves the per-kernel Python calls of every step "
           "for a longer first compile; needs compile",
           "probe/engine/switchboard.py: inductor_arguments", in_footer=False,
           compiler="inductor"),
    Option("guards", ("full", "lean"), "G", "guards",
           "Dynamo checks only the inputs before each call (needs compile)",
           "lean: before each compiled call dynamo checks only the inputs' tensors (shapes, "
           "dtypes, strides) and the global state, not the model's module attributes and the "
           "libraries' globals it also guarded; a new input length still recompiles. Unsafe "
           "for code that changes module attributes or globals between calls (this engine "
           "does not); needs compile", "probe/engine/observe/guards.py: lean_guards", in_footer=False,
           compiler="dynamo"),
    Option("attention", ("sdpa", "inductor"), "a", "attn",
           "Decode attention: SDPA, or inductor's own kernel (needs compile)",
           "the decode step's attention (one query against the cache): PyTorch's "
           "scaled_dot_product_attention, an external call per layer inductor cannot look "
           "inside, or the same product written as multiply, sum and softmax, which inductor "
           "generates and fuses with its neighbours; longer queries (the encoder, the uncached "
           "decoder) keep SDPA; needs compile",
           "probe/engine/decode/attention.py: one_query_attention", in_footer=False,
           compiler="inductor"),
    Option("parallel", ("all", "large"), "t", "par",
           "Only large kernels split across threads (needs compile)",
           "inductor's CPU kernels split their loop across the threads when each thread gets "
           "at least 512 elements of work (its default, all); large: only above 65,536, so a "
           "decode step's many small kernels (norms, attention, residual adds) run on one "
           "thread without entering an OpenMP region each, and its matrix products still split; "
           "needs compile",
           "probe/engine/switchboard.py: inductor_arguments", in_footer=False,
           compiler="inductor"),
    Option("qkv", ("separate", "fused"), "F", "qkv",
           "Self-attention q/k/v as one GEMM",
           "fused: each self-attention's q, k and v weights concatenated into one matrix when "
           "the model is built, as CTranslate2's converter lays them out, so a step runs one "
           "GEMM over the three; any precision, eager or compiled. It pays where a call costs "
           "more than its bytes (int8's per-call activation quantization); gemv=inductor "
           "already fuses the three products into one kernel. The cross-attention's k and v "
           "run once per request (the first step fills the cache) and stay separate",
           "probe/engine/decode/fused_qkv.py: fuse_qkv", in_footer=False),
    Option("kv_layout", ("static", "paged"), "l", "layout",
           "Continuous batching's KV cache, region per slot or blocks",
           "continuous batching's KV cache: a static region per slot, or blocks of one pool "
           "taken as tokens come (PagedAttention-style), same memory budget",
           "probe/engine/switchboard.py: Switchboard.slot_batcher", in_footer=False),
    Option("compile_cache", ("off", "on"), "C", "cache",
           "Restarts load this config's compiled code from disk (needs compile)",
           "on: each fullgraph-compiled function is compiled ahead of time (dynamo's "
           "aot_compile) and saved in infertop's state folder, keyed by everything that changes "
           "the code (model, weights, options, shapes, torch, CPU); a restart of the same config "
           "loads it instead of tracing and compiling again. A stale or corrupt file is "
           "recompiled, never served; needs compile",
           "probe/engine/switchboard.py: Switchboard._wrap", in_footer=False, compiler="dynamo"),
    Option("tf32", ("off", "on"), "T", "tf32",
           "fp32 matrix products on TF32 tensor cores (NVIDIA GPUs from Ampere on)",
           "on: fp32 matrix products run on the GPU's TF32 tensor cores (10-bit mantissa "
           "inputs, fp32 accumulation: torch.set_float32_matmul_precision('high')), the "
           "weights and activations stay fp32; drift is measured as for bf16. Off everywhere "
           "else: a device without TF32 serves tf32=off and says so",
           "probe/engine/switchboard.py: apply_tf32", in_footer=False),
)
OPTION_BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS}
CHOICES: dict[str, tuple[str, ...]] = {option.key: option.values for option in OPTIONS}
# Options that only shape compiled code, with the value they are served at without compile.
COMPILE_ONLY: dict[str, str] = {option.key: option.default for option in OPTIONS
                                if option.needs_compile}


def _default(key: str) -> str:
    return OPTION_BY_KEY[key].default


@dataclass(frozen=True)
class OptConfig:
    """One value per option in OPTIONS (frozen; swapped whole between requests). The fields are
    spelled out for editors and type checkers; each default is the registry's first value, and
    a test keeps the fields equal to the registry's keys, in its order."""

    compile: str = _default("compile")
    decode: str = _default("decode")
    dynamic: str = _default("dynamic")
    bucketing: str = _default("bucketing")
    kv_cache: str = _default("kv_cache")
    precision: str = _default("precision")
    quant: str = _default("quant")
    prewarm: str = _default("prewarm")
    batching: str = _default("batching")
    freezing: str = _default("freezing")
    gemv: str = _default("gemv")
    wrapper: str = _default("wrapper")
    guards: str = _default("guards")
    attention: str = _default("attention")
    parallel: str = _default("parallel")
    qkv: str = _default("qkv")
    kv_layout: str = _default("kv_layout")
    compile_cache: str = _default("compile_cache")
    tf32: str = _default("tf32")

    def __post_init__(self) -> None:
        for key, value in asdict(self).items():
            if value not in CHOICES[key]:
                raise BadConfig(
                    f"option {key}={value!r} is not valid; choose one of: {', '.join(CHOICES[key])}"
                )

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def with_option(self, key: str, value: str) -> OptConfig:
        if key not in CHOICES:
            raise BadConfig(f"unknown option {key!r}; valid keys: {', '.join(CHOICES)}")
        return replace(self, **{key: value})

    def cycled(self, key: str) -> OptConfig:
        """The next value of `key` in its cycling order, wrapping: what a hotkey does."""
        values = CHOICES[key]
        return self.with_option(key, values[(values.index(getattr(self, key)) + 1) % len(values)])

    def label(self) -> str:
        """Only what differs from the defaults, e.g. `compile=default decode=fullgraph`."""
        changed = [f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                   if getattr(self, f.name) != OPTION_BY_KEY[f.name].default]
        return " ".join(changed) or "baseline"

    @property
    def compiled(self) -> bool:
        return self.compile != "off"


def parse_opts(pairs: Iterable[str], base: OptConfig | None = None) -> OptConfig:
    """Apply `KEY=VALUE` strings to `base`; a bad one raises BadConfig naming it and the choices."""
    config = base or OptConfig()
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise BadConfig(f"--opt {pair!r} is not KEY=VALUE; valid keys: {', '.join(CHOICES)}")
        config = config.with_option(key, value.strip())
    return config


def markdown_table() -> str:
    """The README's table of options, made from the registry (a test keeps them equal)."""
    rows = ["| key | values | hotkey | what the engine does | applied in |",
            "|---|---|---|---|---|"]
    rows += [f"| `{o.key}` | {' '.join(f'`{v}`' for v in o.values)} | `{o.hotkey}` | "
             f"{o.help}. | `{o.applied_by}` |" for o in OPTIONS]
    return "\n".join(rows)
