"""Every reader of a saved session checks every range of what it reads, in one line naming
the file and the field: the requests' figures (issue 37), the environment and the
config-keyed sections (issue 50); `snapshot`, `doctor` and `--load` alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infertop.cli import main
from probe.common.errors import BadInput
from tests.probe.saved_sessions import one_error_line, saved


@pytest.mark.parametrize("changed, said", [
    ({"batch_size": 0}, "requests[1].batch_size: expected a number of rows above 0"),
    ({"latency_ms": 1e308}, "requests[1].latency_ms: expected a duration in ms from 0 to 1e+12, got 1e+308"),
    ({"latency_ms": -5.0}, "requests[1].latency_ms: expected a duration in ms from 0 to 1e+12, got -5"),
    ({"arrival_s": -1.0}, "requests[1].arrival_s: expected a time in seconds"),
])
@pytest.mark.parametrize("command", [["snapshot", "show"], ["doctor"], ["doctor", "--json"],
                                     ["snapshot", "export", "--csv", "-o", "EXPORT"],
                                     ["snapshot", "compare", "SAME"]])
def test_every_reader_refuses_a_figure_out_of_range_in_the_same_line(tmp_path, capsys, changed,
                                                                      said, command):
    path = saved(tmp_path, **changed)
    argv = [str(tmp_path / "e") if a == "EXPORT" else str(path) if a == "SAME" else a
            for a in command]
    argv = argv[:2] + [str(path)] + argv[2:] if argv[0] == "snapshot" else argv + [str(path)]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line == f"infertop: error: snapshot {path}: not an infertop session: {said}" or \
        line.startswith(f"infertop: error: snapshot {path}: not an infertop session: {said}")


def test_load_refuses_it_the_same_way(tmp_path):
    from tui.launch import saved_session_app
    path = saved(tmp_path, batch_size=0)
    with pytest.raises(BadInput, match=r"requests\[1\]\.batch_size: expected a number of rows"):
        saved_session_app(str(path), None)


def _session_with(tmp_path: Path, **sections) -> Path:
    path = saved(tmp_path)
    document = json.loads(path.read_text())
    for name, value in sections.items():
        document[name] = value
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize("environment, said", [
    ({"device": "cpu", "torch_threads": 1000000000},
     "environment.torch_threads: expected a number of threads from 1 to 1024, got 1000000000"),
    ({"device": "cpu", "torch_threads": 1e9},
     "environment.torch_threads: expected a whole number from 1 to 1024, got 1000000000.0"),
    ({"device": "cpu", "torch_threads": 0}, "environment.torch_threads: expected a number of "
                                            "threads from 1 to 1024, got 0"),
    ({"device": "cpu", "cpu_count": -2}, "environment.cpu_count: expected a number of CPUs from 1 to 65536, got -2"),
    ({"device": 7}, "environment.device: expected a string, got 7"),
])
@pytest.mark.parametrize("command", [["doctor"], ["doctor", "--verify"], ["snapshot", "show"]])
def test_a_session_environment_out_of_range_is_one_line_before_anything_loads(
        tmp_path, capsys, environment, said, command):
    path = _session_with(tmp_path, environment=environment)
    argv = [*command[:2], str(path), *command[2:]] if command[0] == "snapshot" \
        else [*command, str(path)]
    assert main(argv) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.endswith(said) and str(path) in line, line


@pytest.mark.parametrize("section, value, said", [
    ("settings", {"bucket_edges": ["x"]},
     "settings.bucket_edges[0]: expected a whole number from 1 to 65536, got 'x'"),
    ("settings", {"bucket_edges": 5}, "settings.bucket_edges: expected a list of whole numbers"),
    ("settings", {"max_batch": "8"}, "settings.max_batch: expected a whole number from 0 to "
                                     "1e+06, got '8'"),
    ("settings", {"compile_backend": 3}, "settings.compile_backend: expected a string, got 3"),
    ("model", {"name": 5}, "model.name: expected a string, got 5"),
])
def test_what_the_doctor_and_load_serve_or_show_with_is_checked_too(tmp_path, capsys, section,
                                                                      value, said):
    """--load built its view with int(edge) and int(max_batch): a ValueError traceback."""
    path = _session_with(tmp_path, **{section: value})
    for command in (["snapshot", "show", str(path)], ["doctor", str(path)]):
        assert main(command) == 2
        assert said in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("energy, said", [
    ({"c1": {"source": "RAPL", "idle_j": -100.0}},
     "energy.c1.idle_j: expected joules from 0 to 1e+12, got -100"),
    ({"c9": {"source": "RAPL", "idle_j": 1.0}},
     "energy.'c9' is not one of the session's configs (c1)"),
    ({"c1": {"source": "RAPL", "busy_s": 1e300}},
     "energy.c1.busy_s: expected a time in seconds from 0 to 1e+09, got 1e+300"),
])
def test_the_energy_section_is_refused_as_the_compile_ledger_is(tmp_path, capsys, energy, said):
    path = _session_with(tmp_path, energy=energy)
    for command in (["snapshot", "show", str(path)], ["doctor", str(path)]):
        assert main(command) == 2
        assert one_error_line(capsys.readouterr().err).endswith(said)


def test_a_kv_pool_of_an_undeclared_config_or_past_its_total_is_refused(tmp_path, capsys):
    pool = {"layout": "paged", "block_tokens": 16, "blocks_total": 4, "blocks_peak": 9,
            "block_bytes": 1024}
    path = _session_with(tmp_path, kv_pools={"c1": pool})
    assert main(["snapshot", "show", str(path)]) == 2
    assert one_error_line(capsys.readouterr().err).endswith(
        "kv_pools.c1.blocks_peak: expected at most blocks_total (4), got 9")
    path = _session_with(tmp_path, kv_pools={"c2": {**pool, "blocks_peak": 1}})
    assert main(["snapshot", "show", str(path)]) == 2
    assert "kv_pools.'c2' is not one of the session's configs" in \
        one_error_line(capsys.readouterr().err)
