"""The seam between the dashboard and the engine: every value that crosses a thread or a
process, and nothing else. Read top to bottom: `protocol` (the commands and events), `options`
(OptConfig), `settings` and `prepared_workload` (what an engine is started with), `records`
(what each request, compile and graph break cost), `session` (the records of one run),
`objective` (the SLO), `figures` and `device_sample` (the computed values a view shows),
`live` (the LiveView the engine publishes), `engine_link` (the dashboard's one way to an
engine, whatever the transport: the asks, what it hears, the EngineLink Protocol).
Torch-free. How the figures are computed is probe/analysis/, which sits above it.

Exports, by module: `options` (OptConfig, OPTIONS, OPTION_BY_KEY, parse_opts), `records`
(RequestRecord, CompileEvent, GraphBreakRecord, LedgerEntry, Notice, KVPool, BatchSteps),
`session` (Session, SessionData, ConfigEntry), `figures` (Summary, SegmentStats, DriftStats,
EnergyStats, Goodput), `live` (LiveView, ReplayStatus, BatchStatus, KVStatus), `protocol`
(EngineHandle, SetOptions, SaveSnapshot, Shutdown, EngineLive, EngineFailed, SnapshotSaved,
ReplayFinished, EngineExit: the engine's commands and events), `engine_link` (EngineLink, Ask,
Heard, LinkFacts), `objective` (Slo, slo_argument), `settings` (EngineSettings),
`prepared_workload` (PreparedWorkload), `device_sample` (DeviceSample)."""
