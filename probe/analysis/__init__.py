"""The figures and the doctor, computed from a session's raw records: statistics and the one
percentile definition, the SLO's goodput, steady state, attribution of the tail, findings,
the next step and the readiness checklist, and the live view's figures. Torch-free; it
returns the values probe/contract/ defines, and every view prints those."""
