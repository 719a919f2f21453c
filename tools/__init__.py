"""Scripts around the product, not part of it: the saved sessions' screenshots, the docs'
charts, a look at a report in headless Chromium, and the dashboard's walk that `make gpu-check`
runs. Each is `python -m tools.NAME`; nothing in infertop, probe, tui or workloads imports
them (tests/test_layers_run_down.py)."""
