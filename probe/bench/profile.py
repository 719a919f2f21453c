"""`--profile`: a torch.profiler Chrome trace of a few warm requests of one run, and its top
operators as text."""

from __future__ import annotations

from dataclasses import replace

from probe.common.atomic import write_atomic
from probe.runs.plan import RunSpec
from probe.runs.results import ProfileFiles
from probe.runs.runs import Extra, RunContext, RunHooks, serve_pass

PROFILED_REQUESTS = 3


def profile_requests(engine, spec: RunSpec, context: RunContext,
                     hooks: RunHooks) -> ProfileFiles | None:
    from torch.profiler import ProfilerActivity, profile

    if context.out_dir is None:
        return None
    activities = [ProfilerActivity.CPU]
    if engine.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    few = replace(spec, requests=spec.requests[:PROFILED_REQUESTS])
    folder = context.out_dir / "profile"
    folder.mkdir(parents=True, exist_ok=True)
    with profile(activities=activities) as prof:
        serve_pass(engine, few, 200, "profile", hooks.on_request)
    trace_path = folder / "trace.json"
    prof.export_chrome_trace(str(trace_path))
    sort = "self_cuda_time_total" if engine.device.type == "cuda" else "self_cpu_time_total"
    top_ops = folder / "top_ops.txt"
    write_atomic(top_ops, [prof.key_averages().table(sort_by=sort, row_limit=15), "\n"])
    return ProfileFiles(chrome_trace=str(trace_path.relative_to(context.out_dir)),
                        top_ops=str(top_ops.relative_to(context.out_dir)),
                        requests=len(few.requests))


PROFILE = Extra("profile", profile_requests)
