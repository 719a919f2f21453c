"""The bench and the snapshot reports are library code: importing them loads no UI."""

from tests.import_check import roots_loaded


def test_importing_the_bench_loads_no_ui() -> None:
    loaded = roots_loaded("probe.session_store.snapshot_report", packages=("probe.bench",))
    assert not loaded & {"textual", "tui"}
