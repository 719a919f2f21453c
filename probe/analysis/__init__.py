"""The figures and the doctor, computed from a session's raw records: statistics and the one
percentile definition, the SLO's goodput, steady state, attribution of the tail, findings,
the next step and the readiness checklist, and the live view's figures. Torch-free; it
returns the values probe/contract/ defines, and every view prints those.

Exports, by module: `summary` (summarize: a sample's percentiles, by the one definition),
`stats` (session_segments, segment_stats, throughput_rps, tokens_per_s), `live_figures`
(build_live, offered_rps), `steady_state` (warm_stats, ColdChain, capacity_rps,
capacity_from_service_s: the one capacity), `diagnosis` (diagnose, SegmentDiagnosis,
DoctorContext: the doctor, one config), `session_diagnosis` (diagnose_session: every config),
`next_step` (next_step, NextStep), `checklist` (checklist, ChecklistItem), `ab_compare`
(compare, Comparison: the A/B's comparison), `compile_ledger` (LedgerBook), `slo` (goodput),
`energy` (energy_stats), `drift` (drift_stats)."""
