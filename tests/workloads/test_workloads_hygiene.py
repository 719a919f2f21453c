"""workloads/ is a library: importing all of it pulls in no UI, no engine and no torch; of
probe/ only the shared utilities below it (probe/common)."""

from tests.import_check import roots_loaded


def test_importing_workloads_loads_no_ui_engine_or_torch() -> None:
    loaded = roots_loaded(packages=("workloads",), then=(
        "probe_modules = [m for m in sys.modules if m.startswith('probe.')]\n"
        "assert all(m.startswith('probe.common') for m in probe_modules), probe_modules"))
    assert not {"textual", "tui", "torch", "transformers"} & loaded
