"""Why a precision or lever is slow on this CPU, from the instructions it has: read from the
CPU's flags (/proc/cpuinfo), never assumed — one machine here had AVX2 only, the next
AVX-512 with AVX512-BF16 and VNNI but no AMX."""

from __future__ import annotations

from pathlib import Path

# precision or quant → (flags any of which gives it native matmuls, what lacking them means)
NEEDS: dict[str, tuple[tuple[str, ...], str]] = {
    "bf16": (("amx_bf16", "avx512_bf16"),
             "bf16: no AVX512-BF16/AMX here"),
    "fp16": (("amx_fp16", "avx512_fp16"),
             "fp16: no AVX512-FP16/AMX here"),
    "int8": (("amx_int8", "avx512_vnni", "avx_vnni"),
             "int8: no VNNI/AMX here"),
}
PARTIAL: dict[str, tuple[str, str]] = {
    # has the vector instructions but not the matrix unit that makes it faster than fp32
    "bf16": ("amx_bf16", "bf16: AVX512-BF16, no AMX here"),
}


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The first processor's flags; empty where there is no /proc/cpuinfo."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def lever_note(precision: str, quant: str, flags: frozenset[str]) -> str | None:
    """What this CPU lacks for the served precision or quantisation; None when it lacks
    nothing (or its flags are unknown: nothing is claimed then)."""
    if not flags:
        return None
    for wanted in (precision, "int8" if quant.startswith("int8") else ""):
        if wanted not in NEEDS:
            continue
        any_of, lacking = NEEDS[wanted]
        if not flags & set(any_of):
            return lacking
        matrix, partial = PARTIAL.get(wanted, ("", ""))
        if matrix and matrix not in flags:
            return partial
    return None
