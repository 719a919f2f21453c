"""The figures and the doctor, computed from a session's raw records: statistics and the one
percentile definition, the SLO's goodput, steady state, attribution of the tail, findings,
the next step and the readiness checklist, and the live view's figures. Torch-free; it
returns the values probe/contract/ defines, and every view prints those.

Exports, by module: `summary` (summarize: the one percentile definition), `stats`
(session_segments, segment_stats, throughput_rps, tokens_per_s), `live_figures` (build_live,
offered_rps, capacity_rps), `diagnosis` and `session_diagnosis` (the doctor), `next_step`,
`checklist`, `ab_compare` (the A/B's comparison), `compile_ledger` (LedgerBook), `slo`
(goodput), `energy`, `drift`."""
