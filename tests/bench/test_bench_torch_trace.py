"""--torch-trace: the TORCH_TRACE log, tlparse's HTML report of it when tlparse is installed,
and report.md linking it or saying how to get it."""

import os
import stat
from pathlib import Path

import pytest

from probe.bench import torch_trace
from probe.bench.report import render_markdown
from probe.bench.torch_trace import TorchTrace, run_tlparse, tlparse_command

REPORT = {"settings": {}, "environment": {}, "experiments": {}, "wall_s": 1.0}


def _markdown(logs: list[str], tlparse) -> str:
    return render_markdown({**REPORT, "files": {"torch_trace": logs, "tlparse": tlparse}})


def test_without_tlparse_the_report_says_how_to_get_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(torch_trace, "tlparse_command", lambda: None)
    assert run_tlparse([tmp_path / "a.log"], tmp_path) is None
    text = _markdown(["torch_trace/a.log"], None)
    assert "`pip install tlparse`" in text and "tlparse torch_trace/a.log" in text


def _fake_tlparse(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-tlparse"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


def test_tlparse_output_is_linked_from_the_report(tmp_path) -> None:
    log = tmp_path / "torch_trace" / "dedicated_log_torch_trace_x.log"
    log.parent.mkdir()
    log.write_text("{}\n")
    # tlparse LOG -o OUT --overwrite --no-browser
    command = _fake_tlparse(tmp_path, 'mkdir -p "$3" && echo "<html>" > "$3/index.html"\n')
    made = run_tlparse([log], tmp_path, command)
    assert made[0].html == "tlparse/dedicated_log_torch_trace_x/index.html" and not made[0].error
    text = _markdown([made[0].log], [vars(made[0])])
    assert f"[{made[0].html}]({made[0].html})" in text


def test_a_log_tlparse_cannot_read_is_reported_not_fatal(tmp_path) -> None:
    log = tmp_path / "bad.log"
    log.write_text("not a trace")
    made = run_tlparse([log], tmp_path, _fake_tlparse(tmp_path, 'echo "parse error" >&2; exit 3\n'))
    assert made[0].html is None and made[0].error == "parse error"
    assert "tlparse could not read it: parse error" in _markdown(["bad.log"], [vars(made[0])])


@pytest.mark.skipif(tlparse_command() is None, reason="tlparse is not installed")
def test_real_tlparse_renders_a_dynamo_trace(tmp_path) -> None:
    import torch

    trace = TorchTrace(tmp_path / "torch_trace")
    trace.attach()
    try:
        torch._dynamo.reset()
        compiled = torch.compile(lambda x: torch.relu(x) + 1, backend="eager")
        compiled(torch.ones(3))
    finally:
        trace.close()
        torch._dynamo.reset()
    assert trace.logs()
    made = run_tlparse(trace.logs(), tmp_path)
    assert made and all(m.html and (tmp_path / m.html).is_file() for m in made), made
    assert os.path.getsize(tmp_path / made[0].html) > 0
