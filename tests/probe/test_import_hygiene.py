"""The engine and the workloads run without the UI."""

from tests.import_check import roots_loaded


def test_domain_packages_do_not_import_textual():
    loaded = roots_loaded("probe.engine", "probe.engine_process", "probe.headless",
                          "workloads.replayer")
    assert not {"textual", "tui"} & loaded
