"""The decode step against the memory roofline: bytes of weights one step reads, the bandwidth
at which this machine re-reads that many bytes (timed, not looked up), and what that makes the
fastest possible ms/token at batch 1.

At batch 1 a decoder step is a chain of matrix-vector products: every weight it touches is read
once and used for 2 FLOPs per element, so the step cannot be faster than `bytes / bandwidth`.
The bandwidth that bounds it is the one of the memory level its weights live in between two
tokens: a model whose step reads less than the last-level cache (t5-small in fp32, 154 MB, on a
CPU with a 260 MiB L3) is re-read from that cache, about twice as fast as from DRAM. So the
roofline's bandwidth is measured on a buffer the size of the step's working set
(`measure_bandwidth(device, buffer_bytes=step bytes)`); a buffer many times the cache measures
DRAM, shown beside it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel

from probe.common.units import fmt_ratio
from probe.engine.measure.timing import mark

DEFAULT_L3_BYTES = 32 * 2**20
MIN_BUFFER_BYTES = 256 * 2**20
MAX_BUFFER_BYTES = 2 * 2**30


@dataclass(frozen=True)
class StepBytes:
    """Weights one cached decode step reads, by part (bytes)."""
    decoder_layers: int        # self-attention, cross-attention q/o, feed-forward, norms
    cross_kv_skipped: int      # cross-attention k/v projections: computed once at the first step
    lm_head: int               # the output projection (the tied embedding, read once)
    total: int                 # decoder_layers + lm_head

    def as_dict(self) -> dict:
        return asdict(self)


def _tensor_bytes(tensor: torch.Tensor) -> int:
    """Storage bytes, also for tensor subclasses (torchao int8 keeps data + scales inside)."""
    flatten = getattr(tensor, "__tensor_flatten__", None)
    if flatten is not None and type(tensor) not in (torch.Tensor, torch.nn.Parameter):
        names, _ = flatten()
        return sum(_tensor_bytes(getattr(tensor, name)) for name in names)
    return tensor.numel() * tensor.element_size()


def weight_bytes(model: PreTrainedModel) -> int:
    """Bytes of every distinct parameter and buffer (a tied weight counted once)."""
    seen: set[int] = set()
    total = 0
    for tensor in list(model.parameters()) + list(model.buffers()):
        key = id(tensor) if tensor.device.type == "meta" else tensor.data_ptr()
        if key in seen:
            continue
        seen.add(key)
        total += _tensor_bytes(tensor)
    return total


def is_cached_cross_projection(module_name: str) -> bool:
    """A decoder module applied once per request with a KV cache: the cross-attention k and v
    projections of the encoder's output (their results are cached for every later step)."""
    return "EncDecAttention" in module_name and module_name.rsplit(".", 1)[-1] in ("k", "v")


def decode_step_bytes(model: PreTrainedModel, *, kv_cache: bool = True) -> StepBytes:
    """Bytes a greedy T5 decode step reads. The decoder's input embedding reads one row (not
    counted); with a KV cache the cross-attention k/v projections were applied at the first
    step and are not read again; lm_head is the full vocab × d_model matrix, tied or not."""
    decoder = model.get_decoder()
    layers = skipped = 0
    for name, param in decoder.named_parameters(remove_duplicate=False):
        if "embed_tokens" in name:
            continue
        size = _tensor_bytes(param)
        if kv_cache and is_cached_cross_projection(name.rsplit(".", 1)[0]):
            skipped += size
            continue
        layers += size
    head = _tensor_bytes(model.get_output_embeddings().weight)
    return StepBytes(decoder_layers=layers, cross_kv_skipped=skipped, lm_head=head,
                     total=layers + head)


def l3_bytes() -> int:
    """The last-level cache size from sysfs, or a guess when it cannot be read."""
    for index in range(5, 0, -1):
        base = Path(f"/sys/devices/system/cpu/cpu0/cache/index{index}")
        try:
            if (base / "level").read_text().strip() != "3":
                continue
            text = (base / "size").read_text().strip().upper()
        except OSError:
            continue
        units = {"K": 2**10, "M": 2**20, "G": 2**30}
        try:
            return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)
        except ValueError:
            break
    return DEFAULT_L3_BYTES


@dataclass(frozen=True)
class Bandwidth:
    # bytes of the matrix / the best time of whichever reads it faster: a matrix-vector product
    # (N×K)@(K) or a plain sum. The library's GEMV alone understates what the memory gives (on
    # the AVX2 EPYC torch.mv read 19–21 GB/s, a sum 26–27, inductor's own GEMV 23–25), and a
    # roofline a decode step can beat is no roofline.
    read_gb_s: float
    copy_gb_s: float            # (read + write) bytes / best time of a copy
    buffer_bytes: int
    l3_bytes: int
    repeats: int
    device: str

    def as_dict(self) -> dict:
        return asdict(self)


def _available_memory_bytes() -> int:
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except Exception:  # psutil is a dependency, but a guess is better than a crash here
        return 4 * 2**30


def best_seconds(fn, repeats: int, device: torch.device) -> float:
    """The best of `repeats` timed calls of `fn` after one untimed one, synchronised on CUDA."""
    fn()  # first touch: page faults and lazy init are not bandwidth
    best = float("inf")
    for _ in range(repeats):
        start = mark(device)
        fn()
        best = min(best, mark(device) - start)
    return best


def measure_bandwidth(device: torch.device | str = "cpu", *, buffer_bytes: int | None = None,
                      repeats: int = 5) -> Bandwidth:
    """Best-of-`repeats` read bandwidth (a matrix-vector product, the access pattern of a batch-1
    decode step, or a sum, whichever is faster) re-reading `buffer_bytes`; by default a matrix
    several times the last-level cache, i.e. DRAM's bandwidth."""
    device = torch.device(device)
    l3 = l3_bytes() if device.type == "cpu" else 0
    if buffer_bytes is None:
        buffer_bytes = max(MIN_BUFFER_BYTES, 8 * l3)
        if device.type == "cpu":
            buffer_bytes = min(buffer_bytes, MAX_BUFFER_BYTES, _available_memory_bytes() // 4)
        else:
            buffer_bytes = 2 * 2**30
    cols = 4096
    rows = max(1, buffer_bytes // (4 * cols))
    with torch.inference_mode():
        matrix = torch.ones((rows, cols), dtype=torch.float32, device=device)
        vector = torch.ones(cols, dtype=torch.float32, device=device)
        gemv_s = best_seconds(lambda: torch.mv(matrix, vector), repeats, device)  # noqa: F821
        sum_s = best_seconds(lambda: matrix.sum(), repeats, device)  # noqa: F821
        target = torch.empty_like(matrix)
        copy_s = best_seconds(lambda: target.copy_(matrix), repeats, device)  # noqa: F821
        nbytes = matrix.numel() * matrix.element_size()
        del matrix, target, vector      # after the closures above ran (hence their F821)
    return Bandwidth(read_gb_s=nbytes / min(gemv_s, sum_s) / 1e9,
                     copy_gb_s=2 * nbytes / copy_s / 1e9, buffer_bytes=nbytes, l3_bytes=l3,
                     repeats=repeats, device=str(device))


def measure_matmul_gflops(device: torch.device | str = "cpu", *, size: int = 1024,
                          repeats: int = 5) -> float:
    """Best-of-`repeats` fp32 GEMM throughput: the compute roof."""
    device = torch.device(device)
    with torch.inference_mode():
        a = torch.randn(size, size, device=device)
        b = torch.randn(size, size, device=device)
        seconds = best_seconds(lambda: torch.mm(a, b), repeats, device)
    return 2 * size**3 / seconds / 1e9


@dataclass(frozen=True)
class RooflineVerdict:
    roofline_ms: float          # memory roofline per token
    compute_ms: float | None    # compute roofline per token (2 FLOPs per weight read)
    ratio: float | None         # measured / roofline_ms
    bound: str                  # "memory" | "compute" | "overhead"
    explanation: str


def classify(measured_ms: float | None, step_bytes: int, bandwidth_gb_s: float,
             gflops: float | None, *, element_bytes: int = 4) -> RooflineVerdict:
    """Where the measured step sits. By the roofline model a batch-1 step does 2 FLOPs per
    weight element (arithmetic intensity 2/element_bytes FLOP/byte): it is memory-bound when
    that is below the machine balance (GFLOP/s ÷ GB/s). A measured time far above both roofs is
    neither: the step is paying per-operation overhead (dispatch, launches, Python)."""
    roof_ms = step_bytes / (bandwidth_gb_s * 1e9) * 1e3
    flops = 2 * step_bytes / element_bytes
    compute_ms = flops / (gflops * 1e9) * 1e3 if gflops else None
    intensity = 2 / element_bytes
    balance = (gflops / bandwidth_gb_s) if gflops else None
    model_bound = "memory" if balance is None or intensity < balance else "compute"
    roof = max(roof_ms, compute_ms or 0.0)
    if measured_ms is None:
        return RooflineVerdict(roof_ms, compute_ms, None, model_bound,
                               "no measured step to place against the roofline")
    ratio = measured_ms / roof_ms
    balance_text = f"{balance:.1f}" if balance is not None else "?"
    kind = (f"by the roofline model a batch-1 step is {model_bound}-bound (intensity "
            f"{intensity:.2f} FLOP/byte vs machine balance {balance_text} FLOP/byte)")
    if measured_ms <= 1.5 * roof:
        bound = model_bound
        why = (f"within 1.5× of the {model_bound} roof — {kind}, and the step streams its "
               f"weights about as fast as this machine can")
    elif ratio <= 4:
        bound = model_bound
        why = (f"{fmt_ratio(ratio)} the memory roofline: {kind}, and it is, in kind; the other "
               f"{1 - 1 / ratio:.0%} of its time is per-operation overhead (dispatch, small "
               f"kernels, Python between them)")
    else:
        bound = "overhead"
        why = (f"{fmt_ratio(ratio)} the memory roofline: {kind}, but the measured step is far above "
               f"both roofs — its time goes to per-operation overhead, not to moving bytes or "
               f"FLOPs")
    return RooflineVerdict(roof_ms, compute_ms, ratio, bound, why)


WORKING_SET_REPEATS = 30


def working_set_bandwidth(device: torch.device | str, step_bytes: int,
                          repeats: int = WORKING_SET_REPEATS) -> Bandwidth:
    """The bandwidth at which this machine re-reads a decode step's weights, token after token:
    measured on a buffer of exactly `step_bytes` (from the cache when they fit in it). A buffer
    takes several passes to settle in the cache: on this project's 2-core VM (260 MiB L3, 147
    MiB buffer) the best of 5 passes read 37–48 GB/s, of 20 passes 55–56 GB/s, run after run."""
    return measure_bandwidth(device, buffer_bytes=step_bytes, repeats=repeats)
