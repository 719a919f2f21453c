"""A stopped search's tune.json read back for `tune --resume DIR`: the flags it ran with, its
mode and its trials, every field checked before anything is measured again (the trials'
ranges: probe/session_store/record_ranges.py). A damaged file is one BadInput line naming the
file and the field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from probe.common.errors import BadInput, TraceError
from probe.common.shown import shown
from probe.common.textio import JsonProblem, parse_json, read_text
from probe.tune.trials import Trial, saved_trial

MODES = ("quick", "exhaustive")
MAX_TRIALS = 100_000


@dataclass(frozen=True)
class SavedSearch:
    argv: tuple[str, ...]           # the command line it ran with (`tune …`)
    mode: str
    trials: tuple[Trial, ...]


def saved_search(folder: str) -> SavedSearch:
    """FOLDER/tune.json of a --search quick|exhaustive; BadInput naming what is wrong."""
    path = Path(folder) / "tune.json"
    where = f"--resume {folder}: {path}"
    try:
        document = parse_json(read_text(path))
    except TraceError as exc:       # missing, unreadable, not UTF-8 text
        raise BadInput(f"--resume {folder}: no tune.json of a --search quick|exhaustive "
                       f"there ({exc})") from None
    except JsonProblem as exc:
        raise BadInput(f"--resume {folder}: {exc.located(path)}: {exc}") from None
    if type(document) is not dict:
        raise BadInput(f"{where}: expected an object, got {shown(document)}")
    settings, search = document.get("settings"), document.get("search")
    argv = settings.get("argv") if type(settings) is dict else None
    if type(argv) is not list or any(type(a) is not str for a in argv):
        raise BadInput(f"{where}: settings.argv: expected the command line as a list of "
                       f"strings, got {shown(argv)}")
    mode = search.get("mode") if type(search) is dict else None
    if mode not in MODES:
        raise BadInput(f"{where}: search.mode: expected one of {', '.join(MODES)} (greedy "
                       f"cannot resume), got {shown(mode)}")
    raw = document.get("trials") or []
    if type(raw) is not list or len(raw) > MAX_TRIALS:
        raise BadInput(f"{where}: trials: expected a list of at most {MAX_TRIALS:,} trials, "
                       f"got {shown(raw)}")
    trials = tuple(saved_trial(trial, f"{where}: trials[{index}]")
                   for index, trial in enumerate(raw))
    numbers = [t.number for t in trials]
    if len(set(numbers)) != len(numbers):
        twice = next(n for n in numbers if numbers.count(n) > 1)
        raise BadInput(f"{where}: trials: trial number {twice} appears twice")
    return SavedSearch(tuple(argv), mode, trials)
