"""The light parts of tui stay light: `tui` itself, the engine handle and the formatting
import no Textual and no torch (the CLI imports `tui` for every command)."""

import subprocess
import sys


def test_light_modules_import_neither_textual_nor_torch():
    code = ("import sys, tui, tui.engine_handle, tui.format, tui.snapshot_files; "
            "bad = [m for m in ('textual', 'torch') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
