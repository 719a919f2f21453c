"""Which stage of torch.compile a running compile is in, read off the compiling thread's call
stack: dynamo reports a compile's split only when it ends, and a CPU compile of HF generate()
runs for a minute. The stages nest — dynamo's frame conversion calls inductor's compile_fx,
which runs AOTAutograd, which hands each graph to inductor's inner compile, which waits on its
kernel compiles — so the innermost stage entry on the stack names the stage running. Read from
torch's own module paths and function names; a torch that renames them reads None, never a
wrong stage."""

from __future__ import annotations

import sys
from types import FrameType

ANY = None
# (stage, file path fragment, the functions that enter it there: ANY for every function)
ENTRIES: tuple[tuple[str, str, frozenset[str] | None], ...] = (
    ("kernel compile", "torch/_inductor/async_compile.py", frozenset({"wait", "_wait_futures"})),
    ("kernel compile", "torch/_inductor/cpp_builder.py", ANY),
    ("inductor", "torch/_inductor/compile_fx.py",
     frozenset({"compile_fx_inner", "_compile_fx_inner", "fx_codegen_and_compile",
                "codegen_and_compile"})),
    ("aot", "torch/_functorch/_aot_autograd/", ANY),
    ("aot", "torch/_functorch/aot_autograd.py", ANY),
    ("tracing", "torch/_dynamo/convert_frame.py", ANY),
)
MAX_DEPTH = 2000    # a dynamo stack is a few hundred frames deep


def _entry(frame: FrameType) -> str | None:
    path = frame.f_code.co_filename.replace("\\", "/")
    for stage, fragment, functions in ENTRIES:
        if fragment in path and (functions is ANY or frame.f_code.co_name in functions):
            return stage
    return None


def stage_of(frame: FrameType | None) -> str | None:
    """The compile stage a thread whose innermost frame is `frame` is in; None outside one."""
    for _ in range(MAX_DEPTH):
        if frame is None:
            return None
        stage = _entry(frame)
        if stage is not None:
            return stage
        frame = frame.f_back
    return None


def thread_stage(thread_id: int | None) -> str | None:
    """The compile stage of a running thread (None when it is gone or not compiling)."""
    if thread_id is None:
        return None
    return stage_of(sys._current_frames().get(thread_id))
