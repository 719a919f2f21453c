"""`infertop bench`: the seed study, one variable at a time against a control. `experiments/`
holds one module per experiment; `study` plans and serves them (`runner`, `tasks`, Ray's
`ray_executor` and `nodes`), `report` and the `*_section` modules write report.md/report.json,
`progress` the progress line, here or on a cluster."""
