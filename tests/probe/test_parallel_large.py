"""parallel=large: what inductor is given, and that in its generated C++ a small kernel leaves
its OpenMP region while a large one keeps it."""

import pytest
import torch

from probe.contract.options import OptConfig
from probe.engine.switchboard import LARGE_KERNEL_CHUNK, inductor_arguments

THREADS = 2     # inductor splits a loop by its thread count; fixed so the test reads the same


def test_parallel_large_raises_inductors_chunk_size_and_all_leaves_it():
    large = OptConfig(compile="default", parallel="large")
    assert inductor_arguments(large)["options"]["cpp.min_chunk_size"] == LARGE_KERNEL_CHUNK
    assert inductor_arguments(large.with_option("parallel", "all")) == {}


def _generated_code(options: OptConfig, x: torch.Tensor) -> str:
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    compiled = torch.compile(lambda a: (a.relu() * 2).sum(-1), **inductor_arguments(options))
    with torch._inductor.config.patch({"cpp.threads": THREADS, "fx_graph_cache": False}):
        result, code = run_and_get_code(compiled, x)
    torch.testing.assert_close(result, (x.relu() * 2).sum(-1))
    return "\n".join(code)


@pytest.mark.slow
@pytest.mark.parametrize("parallel, small_split", [("all", True), ("large", False)])
def test_only_large_kernels_split_across_threads_under_large(parallel, small_split):
    options = OptConfig(compile="default", parallel=parallel)
    small = torch.randn(8, 2 * LARGE_KERNEL_CHUNK // 8 - 8)      # just under the chunk a thread
    large = torch.randn(64, 4 * LARGE_KERNEL_CHUNK // 64)         # twice the chunk a thread
    assert ("omp parallel" in _generated_code(options, small)) == small_split
    assert "omp parallel" in _generated_code(options, large)
