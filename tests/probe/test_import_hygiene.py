"""The engine and the workloads must run without the UI (harlequin's import-hygiene test)."""

import subprocess
import sys


def test_domain_packages_do_not_import_textual():
    code = ("import sys, probe.engine, probe.engine_process, probe.headless, workloads.replayer; "
            "bad = [m for m in sys.modules if m == 'textual' or m.startswith(('textual.', 'tui'))]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
