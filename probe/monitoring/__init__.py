"""infertop in the monitoring stack: a Prometheus endpoint over the engine's raw records."""
