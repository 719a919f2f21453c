"""ShareGPT JSON: a list of {"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}.

Each human turn followed directly by a model turn is one request, with the human text kept so
the engine can re-tokenize; output length = the reply's token count. ShareGPT has no
timestamps: arrivals come from a Poisson process at `rate` with `seed`, and the report says so.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from probe.common.errors import TraceError, file_error
from probe.common.textio import JsonProblem, parse_json, read_text
from workloads.arrivals import Poisson, arrival_times_s
from workloads.rng import Draws
from workloads.rows import TraceBuilder, counted_tokens, optional_str, optional_text, row_error
from workloads.tokens import TokenCounter, estimate_tokens
from workloads.trace_records import LoadReport, Trace, TraceRequest

HUMAN_ROLES = frozenset({"human", "user"})
MODEL_ROLES = frozenset({"gpt", "chatgpt", "assistant", "bard", "bing"})


def read_sharegpt(
    path: Path,
    *,
    skip_bad: bool = False,
    count_tokens: TokenCounter | None = None,
    rate: float = 1.0,
    seed: int = 0,
) -> tuple[Trace, LoadReport]:
    if not (math.isfinite(rate) and rate > 0):
        raise file_error(f"--rate: must be a finite number > 0 requests per second, got {rate:g}")
    counter = count_tokens or estimate_tokens
    data = _load_json(path)
    builder = TraceBuilder(str(path), skip_bad=skip_bad)
    pairs: list[tuple[str, str, str, int, int]] = []  # (where, id, text, input, output)
    empty = 0
    for index, item in enumerate(data):
        builder.rows_read += 1
        where = f"{path}: conversation {index}"
        try:
            conversation = optional_str(item.get("id"), where, "id") if isinstance(item, dict) else None
            for turn, human, reply in _pairs(item, where):
                text = optional_text(human.get("value"), f"{where} turn {turn}", "value") or ""
                answer = optional_text(reply.get("value"), f"{where} turn {turn + 1}", "value") or ""
                input_tokens = counted_tokens(counter(text), f"{where} turn {turn}", "value")
                output_tokens = counted_tokens(counter(answer), f"{where} turn {turn + 1}", "value")
                if input_tokens <= 0 or output_tokens <= 0:
                    empty += 1
                    continue
                request_id = f"{index if conversation is None else conversation}:{turn}"
                pairs.append((f"{where} turn {turn}", request_id, text, input_tokens, output_tokens))
        except TraceError as error:
            builder.skip_or_raise(error)
    draws = Draws(np.random.SeedSequence(seed))
    times_s = arrival_times_s(Poisson(), draws, len(pairs), rate)
    for (where, request_id, text, input_tokens, output_tokens), time_s in zip(pairs, times_s):
        builder.add(where, TraceRequest(
            round(time_s * 1000.0, 3), input_tokens, output_tokens, text=text, id=request_id, tag="sharegpt"
        ))
    counted_by = "the given tokenizer" if count_tokens else "the whitespace/byte estimate"
    notes = [
        f"{len(pairs)} human→model pairs from {builder.rows_read} conversations; "
        f"token counts by {counted_by}",
        f"no timestamps in ShareGPT: arrivals are Poisson at {rate:g} rps, seed {seed}",
    ]
    if empty:
        notes.append(f"dropped {empty} pairs with an empty prompt or reply")
    return builder.finish(path.stem, str(path), notes)


def _load_json(path: Path) -> list[Any]:
    try:
        data = parse_json(read_text(path))
    except JsonProblem as exc:
        raise file_error(f"{exc.located(path)}: {exc}") from None
    if not isinstance(data, list):
        raise file_error(f"{path}: expected a JSON list of conversations, got {type(data).__name__}")
    return data


def _pairs(item: Any, where: str):
    if not isinstance(item, dict) or not isinstance(item.get("conversations"), list):
        raise row_error(where, "conversations", "expected an object with a list 'conversations'")
    turns = item["conversations"]
    for index, turn in enumerate(turns):
        if not isinstance(turn, dict) or not isinstance(turn.get("from"), str):
            raise row_error(f"{where} turn {index}", "from", "expected {\"from\": \"human\", \"value\": ...}")
    for index in range(len(turns) - 1):
        first, second = turns[index], turns[index + 1]
        if first["from"].lower() in HUMAN_ROLES and second["from"].lower() in MODEL_ROLES:
            yield index, first, second
