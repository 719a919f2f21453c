"""`infertop tune`: a search over the options under an SLO. `space` and `candidates` (what may be
tried), `search`, `optuna_study` and `combo` (how), `trials`, `evaluate`, `trial_pool` and the
Ray adapters (each trial measured), `confirm` and `verify_step` (the winner re-measured),
`frontier`, `report` and `combo_report` (tune.json, tune.md and the charts), `salvage` (a
stopped search kept), `tuned_settings` (the chosen config read back)."""
