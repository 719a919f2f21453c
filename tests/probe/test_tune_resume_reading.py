"""`tune --resume DIR` reads DIR/tune.json before anything loads: every field of every trial,
the saved command line and the mode checked, a damaged file one line naming the file and the
field, exit 2 (issue 50: an unknown option key, a trial that is a string and an unknown flag
were a TypeError traceback, another and argparse's 13-line usage). No engine."""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infertop.cli import main
from infertop.commands.tune import resumed
from probe.common.errors import BadInput
from probe.contract.objective import parse_slo
from probe.tune.combo import QUICK
from probe.tune.combo_report import write_combo
from probe.tune.saved_search import saved_search
from tests.probe.saved_sessions import one_error_line
from tests.probe.test_reader_fuzz import _mutated, _one_line_or_nothing
from tests.probe.test_tune_combo import fake, search, settings_for_report


def stopped_search(folder: Path) -> Path:
    """A quick search's tune.json as the search writes it, stopped after its trials."""
    evaluate, _ = fake()
    state = search(evaluate, trials=3)
    argv = ["tune", "--model", "t5-tiny", "--rate", "2", "--slo", "latency=1s",
            "--search", "quick", "--trials", "3", "--out", str(folder)]
    write_combo(folder, state, search={"mode": QUICK, "objectives": ["goodput"]},
                slo_text=parse_slo("latency=1s").text(),
                settings={**settings_for_report(), "argv": argv}, done=False)
    return folder / "tune.json"


_REAL_FOLDER = "/nowhere/tune-out"


@functools.lru_cache(maxsize=1)
def _real_tune_json() -> str:
    """One search's tune.json (its charts take a second to draw: written once), its folder
    spelled _REAL_FOLDER."""
    with tempfile.TemporaryDirectory() as folder:
        return stopped_search(Path(folder)).read_text().replace(folder, _REAL_FOLDER)


def damaged(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def test_an_undamaged_tune_json_resumes_with_its_flags_and_trials(tmp_path):
    path = stopped_search(tmp_path)
    saved = saved_search(str(tmp_path))
    assert len(saved.trials) == len(json.loads(path.read_text())["trials"]) == 4
    args = resumed(argparse.Namespace(resume=str(tmp_path)))
    assert args.search == "quick" and args.trials == 3 and args.model == "t5-tiny"


def _set_option(document):
    document["trials"][1]["options"]["warp_drive"] = "on"


def _trial_string(document):
    document["trials"][2] = "trial"


def _unknown_flag(document):
    document["settings"]["argv"].append("--warp")


def _bad_value(document):
    document["trials"][0]["options"]["compile"] = "fast"


def _negative(document):
    document["trials"][1]["goodput_rps"] = -3


def _attainment(document):
    document["trials"][1]["slo_attainment"] = 7


def _ratio(document):
    document["trials"][1]["vs_default"]["goodput"] = {"ratio": "x", "interval": [1, 2]}


def _setting(document):
    document["trials"][1]["settings"] = {"max_batch": 10 ** 9}


def _mode(document):
    document["search"]["mode"] = "greedy"


def _bad_rate(document):
    document["settings"]["argv"][4] = "nan"


@pytest.mark.parametrize("change, said", [
    (_set_option, "trials[1].options: unknown option 'warp_drive'; valid keys: compile, "),
    (_trial_string, "trials[2]: expected an object, got 'trial'"),
    (_unknown_flag, "settings.argv: unrecognized arguments: --warp"),
    (_bad_value, "trials[0].options: option compile='fast' is not valid; choose one of: "),
    (_negative, "trials[1].goodput_rps: expected a rate per second from 0 to 1e+12, got -3"),
    (_attainment, "trials[1].slo_attainment: expected a share from 0 to 1, got 7"),
    (_ratio, "trials[1].vs_default['goodput'].ratio: expected a finite number, got 'x'"),
    (_setting, "trials[1].settings.max_batch: expected a whole number from 1 to 4,096, "
               "got 1000000000"),
    (_mode, "search.mode: expected one of quick, exhaustive (greedy cannot resume), got "
            "'greedy'"),
    (_bad_rate, "settings.argv: argument --rate: expected a finite number > 0, got 'nan'"),
])
def test_a_damaged_tune_json_is_one_line_naming_the_file_and_field(tmp_path, capsys, change,
                                                                      said):
    path = stopped_search(tmp_path)
    damaged(path, change)
    assert main(["tune", "--resume", str(tmp_path)]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert line.startswith(f"infertop: error: --resume {tmp_path}: {path}: "), line
    assert said in line, line


def test_a_missing_or_torn_tune_json_is_one_line(tmp_path, capsys):
    assert main(["tune", "--resume", str(tmp_path)]) == 2
    assert "no tune.json of a --search quick|exhaustive there" in \
        one_error_line(capsys.readouterr().err)
    path = stopped_search(tmp_path)
    path.write_text(path.read_text()[:200])
    assert main(["tune", "--resume", str(tmp_path)]) == 2
    assert f"{path}:" in one_error_line(capsys.readouterr().err)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_damage_to_a_real_tune_json_resumes_or_is_one_bad_input_line(tmp_path_factory,
                                                                         data):
    folder = tmp_path_factory.mktemp("tune")
    path = folder / "tune.json"
    document = json.loads(_real_tune_json().replace(_REAL_FOLDER, str(folder)))
    for _ in range(data.draw(st.integers(1, 3))):
        document = _mutated(document, data)
    path.write_text(json.dumps(document))
    try:
        args = resumed(argparse.Namespace(resume=str(folder)))
        saved_search(str(folder))
    except BadInput as exc:
        _one_line_or_nothing(str(exc))
        assert str(folder) in str(exc)
    else:
        assert args.search in ("quick", "exhaustive")


@pytest.mark.parametrize("section", ["constraints", "vs_control"])
def test_a_key_with_a_control_character_is_named_escaped(tmp_path, section):
    """Found by the property above: a damaged trial's own key reached the line raw."""
    from probe.tune.trials import saved_trial
    raw = json.loads(_real_tune_json())["trials"][0]
    raw[section] = {"p95\x9b\x1b[2J": "not an object"}
    with pytest.raises(BadInput) as caught:
        saved_trial(raw, "tune.json: trials[0]")
    _one_line_or_nothing(str(caught.value))
