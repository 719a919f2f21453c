"""Result files of the load generators users already run, read as infertop sessions
(`infertop snapshot import`): AIPerf's profile_export.jsonl and profile_export_aiperf.json,
guidellm's benchmarks.json, vLLM's `bench serve --save-result` JSON and inference-perf's
per_request_lifecycle_metrics.json; one module a tool, each naming what its figures mean."""

from probe.session_store.peer_imports.importing import import_peer_file, read_peer_file

__all__ = ["import_peer_file", "read_peer_file"]
