"""The run machinery that bench and tune share: a planned run and its results, cold start,
spread and verdicts, the open-loop study, the capacity search under an SLO, and the Ray
cluster and its workers. Below both, so neither imports the other.

Exports, by module: `plan` (BenchSettings, Plan, RunSpec, make_plan), `runs` (RunContext,
serve_pass, make_engine), `results` (RunResult, FailedRun), `spread` (Spread, fmt_spread),
`verdict` (compare, versus), `openloop` (OpenLoopStudy, open_loop_figures), `capacity`
(capacity_search, find_capacity), `cluster` (Cluster, connect, require_ray)."""
