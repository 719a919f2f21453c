"""workloads/ is a library: importing all of it pulls in no UI, no engine and no torch."""

from tests.import_check import roots_loaded


def test_importing_workloads_loads_no_ui_engine_or_torch() -> None:
    loaded = roots_loaded(packages=("workloads",))
    assert not {"textual", "tui", "probe", "torch", "transformers"} & loaded
