"""Turns an OptConfig into something that decodes: the model variant (precision, int8) and the
decode path, compiled or not. Variants and compiled callables are built lazily, once per config.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable

import torch

from probe.contract.options import COMPILE_ONLY, OPTION_BY_KEY, OptConfig
from probe.contract.settings import EngineSettings
from probe.engine.compile_cache import (
    CachedCompile,
    CompileEvents,
    ConfigStore,
    cache_root,
    serializable_guards,
    use_own_inductor_folder,
)
from probe.engine.compile_cache_key import config_key, weights_digest
from probe.engine.decode import hf_generate
from probe.engine.decode.attention import set_attention
from probe.engine.decode.batcher import Batcher
from probe.engine.decode.continuous import SlotBatcher
from probe.engine.decode.fused_qkv import fuse_qkv
from probe.engine.decode.kv_cache import position_bytes
from probe.engine.decode.paged import PagedBatcher
from probe.engine.decode.result import DecodeResult
from probe.engine.decode.static_loop import StaticGreedyDecoder
from probe.engine.model.loading import DecoderDims, T5Family
from probe.engine.observe.graph_timer import GraphTimer
from probe.engine.observe.guards import guard_filter

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# The compile modes whose inductor output runs under CUDA graphs on a CUDA device.
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")
HF_GENERATE_GRAPHS_REFUSED = (
    "HF generate() is not compiled under CUDA graphs: its 13 graphs between 12 breaks "
    "(.item() and data-dependent stopping checks) each record a graph per step and input "
    "length, and its first request did not end in 70 s on an H200; compile=default serves "
    "it, and decode=fullgraph (g) runs under CUDA graphs")


def tf32_available(device: torch.device) -> bool:
    """TF32 tensor cores: NVIDIA GPUs of compute capability 8.0 (Ampere) and later."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8


def apply_tf32(options: OptConfig) -> None:
    """Process-wide, like the configs it serves: set whenever the engine changes config, and
    before any compile of it (inductor reads the setting when it generates its matmuls)."""
    torch.set_float32_matmul_precision("high" if options.tf32 == "on" else "highest")


@dataclass(frozen=True)
class Variant:
    """What an OptConfig actually got: int8 may be refused by the device or torchao version."""
    options: OptConfig
    notes: tuple[str, ...]


def _torchao_config(quant: str, device: torch.device):
    from torchao import quantization
    if quant == "int8":
        return quantization.Int8WeightOnlyConfig()
    # int4: torchao's CUDA kernel wants its tile-packed layout; elsewhere its default one
    # (which needs the optional mslk kernels on a CPU and says so when they are missing)
    from torchao.quantization.quantize_.workflows.int4.int4_packing_format import Int4PackingFormat
    packing = (Int4PackingFormat.TILE_PACKED_TO_4D if device.type == "cuda"
               else Int4PackingFormat.PLAIN)
    return quantization.Int4WeightOnlyConfig(group_size=32, int4_packing_format=packing)


# quant=int8 under gemv=inductor on a CPU: int8 weights for inductor's own GEMV
INT8_GEMV = "int8-gemv"


def quant_variant(options: OptConfig, device: torch.device) -> str:
    """The quantized model a config is served on: its quant value, except quant=int8 with
    gemv=inductor on a CPU, which is int8 weight-only for inductor's GEMV (INT8_GEMV)."""
    if options.quant == "int8" and options.gemv == "inductor" and device.type == "cpu":
        return INT8_GEMV
    return options.quant


def quantize(model: torch.nn.Module, quant: str) -> str | None:
    """int8: on a CPU, int8 weights with activations quantized per call through the CPU's int8
    GEMM (probe/engine/decode/int8_dynamic.py: torchao's weight-only int8 kernel measured 7× slower
    than fp32 per matmul there); elsewhere torchao's weight-only int8. INT8_GEMV: int8 weights
    converted inside inductor's own GEMV (probe/engine/decode/int8_weight_only.py). int4:
    torchao's weight-only. Tries one forward pass; returns why it could not (the model is then
    unusable: the caller builds a fresh copy), or None when it did."""
    device = next(model.parameters()).device
    kind = ("dynamic" if quant == "int8" and device.type == "cpu"
            else "weight-only for inductor's GEMV" if quant == INT8_GEMV else "weight-only")
    try:
        from torchao.quantization import quantize_
        if kind == "dynamic":
            from probe.engine.decode.int8_dynamic import quantize_dynamic_int8
            quantize_dynamic_int8(model)
        elif quant == INT8_GEMV:
            from probe.engine.decode.int8_weight_only import quantize_weight_only_int8
            quantize_weight_only_int8(model)
        else:
            quantize_(model, _torchao_config(quant, device))
        probe_ids = torch.ones((1, 2), dtype=torch.long, device=device)
        with torch.inference_mode():    # some layouts fail only when their kernel runs
            model(input_ids=probe_ids, decoder_input_ids=probe_ids[:, :1])
    except Exception as exc:  # any failure means "not here", never a crash
        reason = " ".join(str(exc).split())[:200]
        return (f"{quant} {kind} quantization is not available here "
                f"({type(exc).__name__}: {reason})")
    return None


# The widest batch-1 matmul gemv=inductor decomposes: above t5's vocabulary (32,128), so lm_head
# is one of them (measured: the bf16 t5-small step 3.85 → 3.02 ms/token on the 2-core VM).
GEMV_MAX_DIM = 65536


def widen_gemv_decomposition() -> None:
    """Inductor's decompose_mm_pass takes on the CPU only matmuls with K and N ≤ 2048, a limit
    it reads from a module global (its per-compile option is read once, when the module is
    first imported). Raised here so lm_head is decomposed too. Process-wide, but harmless: the
    pass only runs in compiles that ask for it, and only gemv=inductor does. A torch without
    the global keeps its own limit."""
    try:
        from torch._inductor.fx_passes import decompose_mem_bound_mm as mm_pass
    except ImportError:
        return
    if hasattr(mm_pass, "cpu_max_other_dimension_decomposition"):
        mm_pass.cpu_max_other_dimension_decomposition = max(
            mm_pass.cpu_max_other_dimension_decomposition, GEMV_MAX_DIM)


# parallel=large: the work per thread below which inductor's CPU kernels stay on one thread (its
# cpp.min_chunk_size, 512 by default): above a batch-1 t5-small step's norm, attention and
# residual kernels (≤ 65,536 elements), below its matrix products (≥ 512×512).
LARGE_KERNEL_CHUNK = 65536


def inductor_arguments(options: OptConfig) -> dict:
    """torch.compile's `mode`, or — with an option of ours, since `mode` and `options` exclude
    each other — the mode's own inductor options plus ours: `freezing` (weights become
    constants, so inductor can fold them and use the CPU's prepacked GEMM kernels),
    `gemv=inductor` (its decompose_mm_pass turns each batch-1 matmul into a multiply-and-sum
    it generates itself; on CPU for M = 1 and K, N ≤ GEMV_MAX_DIM), `wrapper=cpp` (kernels
    launched from generated C++), `parallel=large` (a larger cpp.min_chunk_size) and
    `guards=lean` (torch.compile takes a guard_filter_fn in `options`). A fresh dict on every
    call: torch.compile pops `guard_filter_fn` out of the dict it is given, so a dict shared by
    several calls loses it after the first."""
    ours: dict = {}
    if options.freezing == "on":
        ours["freezing"] = True
    if options.wrapper == "cpp":
        ours["cpp_wrapper"] = True
    if options.parallel == "large":
        ours["cpp.min_chunk_size"] = LARGE_KERNEL_CHUNK
    if options.guards != "full":
        ours["guard_filter_fn"] = guard_filter(options.guards)
    if options.gemv == "inductor":
        # The limit here is what the pass would read if this were set before it is imported
        # (see widen_gemv_decomposition); passing it also keys inductor's FX graph cache.
        ours["post_grad_fusion_options"] = {
            "decompose_mm_pass": {"cpu_max_other_dimension_decomposition": GEMV_MAX_DIM}}
    if ours:
        from torch._inductor import list_mode_options
        return {"options": {**list_mode_options(options.compile), **ours}}
    return {} if options.compile == "default" else {"mode": options.compile}


def paged_blocks(model: T5Family, settings: EngineSettings, max_new_tokens: int) -> int:
    """The pool's blocks: the KV budget, by default what the static layout holds for max_batch
    slots (the budget both layouts share)."""
    per_position = position_bytes(DecoderDims.of(model),
                                  model.decoder.final_layer_norm.weight.dtype.itemsize)
    static = settings.max_batch * (max_new_tokens + settings.max_input_tokens) * per_position
    return max(1, (settings.kv_budget_bytes or static) // (settings.kv_block_tokens
                                                            * per_position))


def _sharing_weights(model: T5Family) -> T5Family:
    """A copy with its own config (so its own attention implementation) over the same weight
    tensors: no second copy of the weights in memory, nor in the cache a step reads them from."""
    shared = {id(t): t for t in (*model.parameters(), *model.buffers())}
    return copy.deepcopy(model, memo=shared)


class Switchboard:
    def __init__(self, master: T5Family, device: torch.device, *,
                 max_new_tokens: int, compile_backend: str = "inductor",
                 compile_events: CompileEvents | None = None,
                 graph_timer: GraphTimer | None = None) -> None:
        self.master = master
        self.graph_timer = graph_timer
        self.compile_events = compile_events
        self._master_weights: str | None = None
        self.device = device
        self.max_new_tokens = max_new_tokens
        self.compile_backend = compile_backend
        self._models: dict[tuple[str, str, str, str], T5Family] = {}
        self._decoders: dict[OptConfig, Callable[..., DecodeResult]] = {}
        self._slot_batchers: dict[OptConfig, Batcher] = {}
        self._eager_fallback: set[OptConfig] = set()

    def resolve(self, options: OptConfig) -> Variant:
        """The options that will really be served, and notes on anything refused."""
        notes: list[str] = []
        if options.batching == "continuous":
            # Slots decode at their own positions in one static cache: a cached, graph-break-free
            # step loop by construction.
            if options.decode != "fullgraph":
                notes.append("continuous batching runs its own static-cache step loop: "
                             "decode=fullgraph")
                options = options.with_option("decode", "fullgraph")
            if options.kv_cache != "on":
                notes.append("continuous batching keeps each slot's KV cache: kv_cache=on")
                options = options.with_option("kv_cache", "on")
        for key, off in COMPILE_ONLY.items():
            compiler = OPTION_BY_KEY[key].compiler
            if getattr(options, key) != off and not options.compiled:
                article = "an" if compiler[0] in "aeiou" else "a"
                notes.append(f"{key} is {article} {compiler} option: it does nothing without "
                             "compile")
                options = options.with_option(key, off)
            elif (getattr(options, key) != off and compiler == "inductor"
                  and self.compile_backend != "inductor"):
                notes.append(f"{key} needs the inductor backend (this engine compiles with "
                             f"{self.compile_backend})")
        if options.quant != "off":     # after the compile-only options: gemv picks the int8
            _, refused = self._model(options.precision, quant_variant(options, self.device),
                                     options.qkv)
            if refused:
                notes.append(refused + "; quant stays off")
                options = options.with_option("quant", "off")
        if options.kv_layout == "paged" and options.batching != "continuous":
            notes.append("the paged KV layout is continuous batching's: kv_layout=static")
            options = options.with_option("kv_layout", "static")
        if (options.decode == "hf-generate" and options.compile in CUDA_GRAPH_MODES
                and self.device.type == "cuda"):
            notes.append(HF_GENERATE_GRAPHS_REFUSED)
            options = options.with_option("compile", "default")
        if options.tf32 == "on" and not tf32_available(self.device):
            notes.append("tf32 is a tensor-core mode of NVIDIA GPUs from Ampere on; this "
                         "device has none: tf32=off")
            options = options.with_option("tf32", "off")
        if options.precision == "fp16" and self.device.type == "cpu":
            notes.append("fp16 on a CPU runs through slow emulated kernels; bf16 is the CPU's "
                         "half precision")
        return Variant(options, tuple(notes))

    def _model(self, precision: str, quant: str, qkv: str = "separate",
               attention: str = "sdpa") -> tuple[T5Family, str | None]:
        key = (precision, quant, qkv, attention)
        if key in self._models:
            return self._models[key], None
        if attention != "sdpa":
            weights, refused = self._model(precision, quant, qkv)
            model = _sharing_weights(weights)
            set_attention(model, attention)
            if not refused:
                self._models[key] = model
            return model, refused
        model = copy.deepcopy(self.master)
        module: torch.nn.Module = model     # nn.Module's `to`, as in Engine.__init__
        module.to(device=self.device, dtype=DTYPES[precision])
        if qkv == "fused":      # before quantizing: the fused matrix is quantized as one
            fuse_qkv(model)
        if quant != "off":
            refused = quantize(model, quant)
            if refused:
                return self._model(precision, "off", qkv)[0], refused
        self._models[key] = model
        return model, None

    def model_for(self, options: OptConfig) -> T5Family:
        return self._model(options.precision, quant_variant(options, self.device),
                           options.qkv, options.attention)[0]

    def fall_back_to_eager(self, options: OptConfig) -> None:
        self._eager_fallback.add(options)
        self._decoders.pop(options, None)
        batcher = self._slot_batchers.get(options)
        if batcher is not None:  # its slots may hold running requests: keep them, swap the step
            batcher.rebuild_step(self._wrap(options, True))

    def is_compiled(self, options: OptConfig) -> bool:
        return options.compiled and options not in self._eager_fallback

    def decoder(self, options: OptConfig) -> Callable[..., DecodeResult]:
        """`decode(input_ids, attention_mask, new_tokens) -> DecodeResult` for these options."""
        if options not in self._decoders:
            self._decoders[options] = self._build(options)
        return self._decoders[options]

    def _wrap(self, options: OptConfig, fullgraph: bool) -> Callable[[Callable], Callable]:
        """What each decode path applies to the functions it calls: compiled or not, and
        timed into the engine's compile ledger (the one place a callable is handed out)."""
        compiled = self.is_compiled(options)
        inner = self._compiler(options, fullgraph) if compiled else (lambda fn: fn)
        timer = self.graph_timer
        if timer is None:
            return inner
        return lambda fn: timer.wrap(getattr(fn, "__name__", "?"), inner(fn), compiled=compiled)

    def _compiler(self, options: OptConfig, fullgraph: bool) -> Callable[[Callable], Callable]:
        if self.compile_backend == "inductor" and options.gemv == "inductor":
            widen_gemv_decomposition()
        if fullgraph and options.compile_cache == "on":
            store = self._cache_store(options)
            return lambda fn: CachedCompile(
                fn, torch.compile(fn, **self._compile_arguments(options, fullgraph)), store,
                self.compile_events)
        return lambda fn: torch.compile(fn, **self._compile_arguments(options, fullgraph))

    def _cache_store(self, options: OptConfig) -> ConfigStore:
        """compile_cache=on: this config's folder of compiled functions."""
        root = cache_root()
        use_own_inductor_folder(root)
        if self._master_weights is None:
            self._master_weights = weights_digest(self.master)
        key = config_key(self.model_for(options), self._master_weights, options,
                         backend=self.compile_backend, device=self.device)
        return ConfigStore(key, root)

    def _compile_arguments(self, options: OptConfig, fullgraph: bool) -> dict:
        kwargs: dict = {"fullgraph": fullgraph, "dynamic": options.dynamic == "on",
                        "backend": self.compile_backend}
        if self.compile_backend == "inductor":
            kwargs.update(inductor_arguments(options))
        elif options.guards != "full":     # a dynamo option: any backend takes it
            kwargs["options"] = {"guard_filter_fn": guard_filter(options.guards)}
        if fullgraph and options.compile_cache == "on":   # only savable guards
            if "mode" in kwargs:                          # mode and options exclude each other
                from torch._inductor import list_mode_options
                kwargs["options"] = dict(list_mode_options(kwargs.pop("mode")))
            extra = dict(kwargs.get("options", {}))
            extra["guard_filter_fn"] = serializable_guards(extra.get("guard_filter_fn"))
            kwargs["options"] = extra
        return kwargs

    def batch_graphs(self, options: OptConfig) -> bool:
        """Continuous batching captures a CUDA graph per batch size where the config asks for
        CUDA graphs and the device has them (slot_graphs.py: the step stays eager inside)."""
        return (self.device.type == "cuda" and options.compile in CUDA_GRAPH_MODES
                and options.kv_layout == "static")

    def pads_batches(self, options: OptConfig) -> bool:
        """Dynamic batches are padded to the ladder's sizes where each size records a CUDA graph
        (the fullgraph loop under compile=reduce-overhead or max-autotune, on a GPU)."""
        return (self.device.type == "cuda" and options.compile in CUDA_GRAPH_MODES
                and options.decode == "fullgraph")

    def slot_batcher(self, options: OptConfig, settings: EngineSettings) -> Batcher:
        """The continuous-batching slots for these options, built once per config: a region
        per slot (static), or slots over a block pool of the same KV budget (paged)."""
        if options not in self._slot_batchers:
            model, wrap = self.model_for(options), self._wrap(options, True)
            if options.kv_layout == "paged":
                self._slot_batchers[options] = PagedBatcher(
                    model, slots=settings.max_batch * settings.paged_slots_factor,
                    max_new_tokens=self.max_new_tokens,
                    max_input_tokens=settings.max_input_tokens, wrap=wrap,
                    blocks=paged_blocks(model, settings, self.max_new_tokens),
                    block_tokens=settings.kv_block_tokens)
            else:
                self._slot_batchers[options] = SlotBatcher(
                    model, slots=settings.max_batch, max_new_tokens=self.max_new_tokens,
                    max_input_tokens=settings.max_input_tokens, wrap=wrap,
                    graphs=self.batch_graphs(options))
        return self._slot_batchers[options]

    def _build(self, options: OptConfig) -> Callable[..., DecodeResult]:
        model = self.model_for(options)
        use_cache = options.kv_cache == "on"
        if options.decode == "fullgraph":
            decoder = StaticGreedyDecoder(model, max_new_tokens=self.max_new_tokens,
                                          use_cache=use_cache, wrap=self._wrap(options, True))
            return decoder.generate
        generate_fn = self._wrap(options, False)(model.generate)

        def decode(input_ids, attention_mask, new_tokens, stops=frozenset()):
            return hf_generate.generate(generate_fn, model, input_ids, attention_mask, new_tokens,
                                      use_cache, stops)
        return decode
