"""The dashboard is a thin view over the torch-free contract: importing every tui module, and
reopening a saved session (--load), loads no torch; the CLI's light parts load no Textual."""

from tests.import_check import roots_loaded


def test_light_modules_import_neither_textual_nor_torch():
    loaded = roots_loaded("tui", "tests.fake_engine", "tui.format", "tui.snapshot_files")
    assert not {"textual", "torch"} & loaded


def test_every_tui_module_imports_without_torch():
    assert "torch" not in roots_loaded(packages=("tui",))


def test_load_reads_a_saved_session_without_torch(tmp_path):
    import json
    from dataclasses import asdict

    from tests.conftest import synthetic_record
    path = tmp_path / "saved.json"
    records = [asdict(synthetic_record(f"r{i}", i, latency_ms=20.0 + i)) for i in range(3)]
    for record in records:
        record["tokens"] = None
    path.write_text(json.dumps({"schema_version": 1, "configs": {"c1": {}},
                                "requests": records}))
    loaded = roots_loaded("tui.launch", then=f"import pathlib, tui.launch\n"
                                              f"tui.launch.saved_view(pathlib.Path({str(path)!r}))")
    assert "torch" not in loaded and "textual" not in loaded
