"""The layers stay as light as they promise: the contract loads neither torch nor a UI, the
engine and the workloads load no UI, and the command line's own module loads neither."""

from tests.import_check import roots_loaded


def test_the_contract_and_the_session_store_import_neither_torch_nor_a_ui():
    loaded = roots_loaded(packages=("probe.contract", "probe.session_store"))
    assert not {"torch", "transformers", "textual", "tui"} & loaded


def test_domain_packages_do_not_import_textual():
    loaded = roots_loaded(packages=("probe.engine",), then="import workloads.replayer")
    assert not {"textual", "tui"} & loaded


def test_the_command_line_module_loads_neither_torch_nor_textual():
    """`infertop --help` and every bad-input message come from here in well under a second."""
    assert not {"torch", "textual"} & roots_loaded("infertop.cli")
