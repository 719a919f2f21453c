"""The one output rule: never an input nor inside one, never in /dev /proc /sys nor in the
built-in traces, the holding folder must exist — the same answer for every kind of output."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from probe.common.errors import TraceError
from probe.common.output_rule import builtin_traces_folder, check_output_file, check_output_folder

CHECKS = (check_output_file, check_output_folder)
names = st.text(st.characters(categories=("L", "N"), include_characters="-_."), min_size=1,
                max_size=12).filter(lambda n: n not in (".", ".."))


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("path", ["/dev/full", "/dev/shm/x", "/proc/self/x", "/sys/x/y"])
def test_system_folders_are_refused_by_every_check(check, path):
    with pytest.raises(TraceError, match=r"is a system folder"):
        check(path, "-o")


def test_a_symlink_into_dev_is_followed(tmp_path):
    (tmp_path / "link").symlink_to("/dev")
    with pytest.raises(TraceError, match="/dev is a system folder"):
        check_output_file(tmp_path / "link" / "x.csv", "-o")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(names, min_size=1, max_size=3), check=st.sampled_from(CHECKS))
def test_anything_inside_an_input_folder_is_refused(tmp_path, parts, check):
    model = tmp_path / "checkpoint"
    model.mkdir(exist_ok=True)
    target = model.joinpath(*parts)
    with pytest.raises(TraceError, match="inside the input folder"):
        check(target, "--out", inputs=[str(model)])


@pytest.mark.parametrize("spelling", ["in.jsonl", "./in.jsonl", "sub/../in.jsonl", "link.jsonl",
                                      "hard.jsonl"])
def test_the_input_itself_is_refused_however_it_is_spelled(tmp_path, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    Path("in.jsonl").write_text("{}\n")
    Path("sub").mkdir()
    Path("link.jsonl").symlink_to("in.jsonl")
    os.link("in.jsonl", "hard.jsonl")
    with pytest.raises(TraceError, match="it is the input in.jsonl"):
        check_output_file(spelling, "-o", inputs=["in.jsonl"])


def test_a_preset_name_is_no_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert check_output_file("chat", "--out", inputs=["chat", "t5-tiny"]) == Path("chat")


@pytest.mark.parametrize("check", CHECKS)
def test_the_builtin_traces_are_never_an_output(check):
    with pytest.raises(TraceError, match="infertop's own built-in traces"):
        check(builtin_traces_folder() / "chat.jsonl", "-o")


@pytest.mark.parametrize("check", CHECKS)
def test_one_folder_rule_the_holding_folder_must_exist(tmp_path, check):
    with pytest.raises(TraceError, match=f"folder {tmp_path / 'no'} does not exist"):
        check(tmp_path / "no" / "out", "--out")
    assert check(tmp_path / "out", "--out") == tmp_path / "out"   # one level: the output
    assert not (tmp_path / "out").exists()                        # checked, never made
