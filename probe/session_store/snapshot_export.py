"""`infertop snapshot export`: a saved session's per-request records and its segments as two
tables pandas reads in one call (`pd.read_csv` / `pd.read_parquet`).

Columns are the record's fields as the JSON has them; a segment's nested figures are
flattened with dots (`latency_ms.p95`, `drift.token_agreement`). Token ids, where kept, are one
space-separated string in CSV and a list column in Parquet.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

from probe.analysis.stats import session_segments
from probe.checks.output_lock import OutputLock
from probe.common.atomic import atomic_write_lines, check_output_file, replace_atomically
from probe.common.errors import BadInput
from probe.contract.records import RequestRecord
from probe.session_store.snapshot import read_document, saved_session

FORMATS = ("csv", "parquet")
RECORD_COLUMNS = tuple(f.name for f in fields(RequestRecord))
MEETS_SLO = "meets_slo"


def _flatten(value: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            flat.update(_flatten(item, f"{name}."))
        else:
            flat[name] = item
    return flat


def tables(path: str | os.PathLike) -> tuple[list[dict], list[dict]]:
    """(request rows, segment rows) of a saved session; segments recomputed from its records."""
    data = saved_session(read_document(path), f"snapshot {path}")  # as show and doctor say it
    requests = [{name: getattr(r, name) for name in RECORD_COLUMNS} for r in data.records]
    for row, record in zip(requests, data.records):
        if row["tokens"] is not None:
            row["tokens"] = list(row["tokens"])
        if data.slo is not None:        # the session's SLO: whether this request met it
            row[MEETS_SLO] = data.slo.meets(record)
    labels = {cid: entry.options.label() for cid, entry in data.configs.items()}
    segments = [{"config_id": s.config_id, "label": labels.get(s.config_id, ""),
                 **_flatten({k: v for k, v in s.as_dict().items() if k != "config_id"})}
                for s in session_segments(data)]
    return requests, _same_columns(segments)


def _same_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row with every column, in first-seen order. A figure that is an object in one
    segment and None in another (compile_phases of a compiled and an eager config, drift, the
    paged pool) flattens to `name.part` columns in the one and to `name` in the other: the
    bare column goes, and the None segment reads empty in the parts. Without this the CSV
    writer refused a session that served an eager config first, and parquet took its columns
    from the first row alone."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    nested = {key.split(".", 1)[0] for key in columns if "." in key}
    columns = [key for key in columns
               if key not in nested or any(row.get(key) is not None for row in rows)]
    return [{key: row.get(key) for key in columns} for row in rows]


def output_paths(stem: str | os.PathLike, fmt: str) -> tuple[Path, Path]:
    stem = Path(stem)
    return (stem.with_name(f"{stem.name}.requests.{fmt}"),
            stem.with_name(f"{stem.name}.segments.{fmt}"))


def export(path: str | os.PathLike, stem: str | os.PathLike, fmt: str) -> tuple[Path, Path]:
    """Write `<stem>.requests.<fmt>` and `<stem>.segments.<fmt>`, each atomically; the
    outputs are checked before anything is read or written."""
    if fmt not in FORMATS:
        raise BadInput(f"export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    targets = output_paths(stem, fmt)
    for target in targets:
        check_output_file(target, "--out", inputs=(path,))
    if fmt == "parquet":
        _pyarrow()
    with OutputLock(stem, "--out"):     # one writer of STEM.* at a time, as every --out
        requests, segments = tables(path)
        write = _write_csv if fmt == "csv" else _write_parquet
        write(targets[0], requests, list(requests[0]) if requests else list(RECORD_COLUMNS))
        write(targets[1], segments, list(segments[0]) if segments else ["config_id"])
    return targets


def _write_csv(target: Path, rows: list[dict], columns: list[str]) -> None:
    def lines():
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (" ".join(map(str, v)) if isinstance(v, list) else v)
                             for k, v in row.items()})
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        yield buffer.getvalue()
    atomic_write_lines(target, lines())


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise BadInput("--parquet needs pyarrow: pip install 'infertop[export]' "
                          "(or use --csv)") from None
    return pyarrow


def _write_parquet(target: Path, rows: list[dict], columns: list[str]) -> None:
    pyarrow = _pyarrow()
    table = pyarrow.Table.from_pylist(rows) if rows else pyarrow.table(
        {c: pyarrow.array([], pyarrow.null()) for c in columns})
    replace_atomically(target, lambda path: pyarrow.parquet.write_table(table, path))
