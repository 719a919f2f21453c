"""The seam between the dashboard and the engine: every value that crosses a thread or a
process, and nothing else. Read top to bottom: `protocol` (the commands and events), `options`
(OptConfig), `settings` and `prepared_workload` (what an engine is started with), `records`
(what each request, compile and graph break cost), `session` (the records of one run),
`objective` (the SLO), `figures` and `device_sample` (the computed values a view shows),
`live` (the LiveView the engine publishes). Torch-free. How the figures are computed is
probe/analysis/, which sits above it."""
