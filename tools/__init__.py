"""Scripts around the product, not part of it: the saved sessions' screenshots, the docs'
charts, a look at a report in headless Chromium, the peer check, and the GPU acceptance
(`gpu_check/`, `make gpu-check`) with the dashboard's walk it runs. Each is
`python -m tools.NAME`; nothing in infertop, probe, tui or workloads imports them
(tests/test_layers_run_down.py)."""
