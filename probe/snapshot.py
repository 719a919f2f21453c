"""The session JSON: what `replay --out`, the dashboard's `s` and `bench` write, and what
`--load`, `snapshot show` and `snapshot compare` read. Written atomically."""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from dataclasses import asdict, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

import torch
import transformers

from probe.errors import ConfigError
from probe.options import OptConfig
from probe.records import CompileEvent, GraphBreakRecord, Notice, RequestRecord
from probe.session import ConfigEntry, SessionData

SCHEMA_VERSION = 1


def environment(device: torch.device) -> dict[str, Any]:
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        name = platform.processor() or platform.machine()
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "device": str(device),
            "device_name": name, "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(), "platform": platform.platform()}


def session_document(data: SessionData, *, environment: dict, model: dict, trace: dict,
                     settings: dict | None = None) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "environment": environment,
        "model": model,
        "trace": trace,
        "settings": settings or {},
        "configs": {cid: entry.as_dict() for cid, entry in data.configs.items()},
        "requests": [asdict(r) for r in data.records],
        "segments": [s.as_dict() for s in data.segments()],
        "compile_events": [asdict(e) for e in data.events],
        "graph_breaks": [asdict(b) for b in data.breaks],
        "notices": [asdict(n) for n in data.notices],
    }


def write_json_atomic(path: str | os.PathLike, document: dict) -> Path:
    """Write to a temporary file in the same folder, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only; a saved session is a normal file
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=1)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _build(cls, raw: dict):
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in raw.items() if k in names})


def read_document(path: str | os.PathLike) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"snapshot {path}: cannot be read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"snapshot {path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    version = document.get("schema_version") if isinstance(document, dict) else None
    if version != SCHEMA_VERSION:
        raise ConfigError(f"snapshot {path}: schema_version {version!r} is not supported "
                          f"(this infertop reads {SCHEMA_VERSION})")
    return document


def session_data(document: dict[str, Any]) -> SessionData:
    """Rebuild the raw records of a saved session (for --load, show and compare)."""
    option_names = {f.name for f in fields(OptConfig)}
    configs = {
        cid: ConfigEntry(cid, OptConfig(**{k: v for k, v in raw.items() if k in option_names}),
                         tuple(raw.get("notes", ())))
        for cid, raw in document.get("configs", {}).items()}
    return SessionData(
        records=tuple(_build(RequestRecord, r) for r in document.get("requests", [])),
        events=tuple(_build(CompileEvent, e) for e in document.get("compile_events", [])),
        breaks=tuple(_build(GraphBreakRecord, b) for b in document.get("graph_breaks", [])),
        configs=MappingProxyType(configs),
        notices=tuple(_build(Notice, n) for n in document.get("notices", [])))
