"""`serve --from FILE`: the configuration to start from, read from what `tune` chose
(tune.json's `final`: its options and settings) or from a session (the config of its last
served request, and the slots and window it ran with). Torch-free; a file it cannot read is
one BadInput line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from probe.common.errors import BadConfig, BadInput
from probe.contract.options import CHOICES, OptConfig


@dataclass(frozen=True)
class Start:
    options: OptConfig
    settings: dict[str, int | float] = field(default_factory=dict)   # max_batch, batch_window_ms
    said: str = ""


def read_start(path: str) -> Start:
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except OSError as exc:
        raise BadInput(f"--from {path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BadInput(f"--from {path}: not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise BadInput(f"--from {path}: neither a tune.json nor a session")
    try:
        if "final" in document and "trials" in document:
            return _from_tune(path, document)
        if "requests" in document and "configs" in document:
            return _from_session(path, document)
    except BadConfig as exc:
        raise BadInput(f"--from {path}: {exc}") from None
    except BadInput:
        raise
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise BadInput(f"--from {path}: not a tune.json or session as infertop writes them "
                       f"({type(exc).__name__}: {exc})") from None
    raise BadInput(f"--from {path}: neither a tune.json (no `final`) nor a session "
                   f"(no `requests`)")


def _options(raw: dict) -> OptConfig:
    return OptConfig(**{k: str(v) for k, v in raw.items() if k in CHOICES})


def _from_tune(path: str, document: dict) -> Start:
    final = document["final"]
    if not final:
        raise BadInput(f"--from {path}: tune chose no config (no trial met the SLO)")
    settings = {k: final.get("settings", {})[k] for k in ("max_batch", "batch_window_ms")
                if k in final.get("settings", {})}
    options = _options(final["options"])
    return Start(options, settings, f"tune's choice (trial {final.get('trial')}): "
                                    f"{options.label()}")


def _from_session(path: str, document: dict) -> Start:
    records = document["requests"]
    if not records:
        raise BadInput(f"--from {path}: the session served no request")
    config_id = records[-1]["config_id"]
    options = _options(document["configs"][config_id])
    saved = document.get("settings") or {}
    settings = {k: saved[k] for k in ("max_batch", "batch_window_ms")
                if isinstance(saved.get(k), (int, float))}
    return Start(options, settings, f"the session's last served config ({config_id}): "
                                    f"{options.label()}")
