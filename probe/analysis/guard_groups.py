"""Recompiles grouped by the guard that failed, each group with the fix that would have avoided
it and that fix's predicted effect on the session's own traffic.

Dynamo writes a recompile's reason as one failure per cached entry, newest first
("0/1: tensor 'input_ids' size mismatch at index 1. expected 69, actual 29; 0/0: …"); the
first names the guard that sent this call to a new compile. One dimension of the traffic shows
up under several guards, one per compiled function (the encoder's `input_ids` dim 1, the
decoder's cross-attention keys dim 2): guards that saw the same new size on the same requests
are one dimension, so "the input's length changed 7 times across 3 functions" is one row, not
21 events. Torch-free."""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping, Sequence

from probe.common.units import fmt_s
from probe.contract.records import CompileEvent, RequestRecord

_SIZE = re.compile(r"tensor '(?P<tensor>[^']+)' size mismatch at index (?P<index>\d+)\. "
                   r"expected (?P<expected>\d+), actual (?P<actual>\d+)")
_ENTRY = re.compile(r"^\d+/\d+: ")
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True)
class GuardFailure:
    """The guard that sent one recompile to a new compile."""
    guard: str                  # "input_ids.size(1)", or the failure's text with numbers as N
    size: int | None            # the new size, for a size guard


@dataclass(frozen=True)
class GuardFix:
    change: Mapping[str, str]   # the option change, e.g. {"bucketing": "on"}
    text: str                   # what it does to this traffic
    avoided_recompiles: int
    avoided_s: float


@dataclass(frozen=True)
class GuardGroup:
    dimension: str              # "the input's length", or the one guard
    guards: tuple[str, ...]
    functions: tuple[str, ...]
    recompiles: int
    sizes: tuple[int, ...]      # the distinct new sizes, in order of first sight
    seconds: float              # the group's recompile seconds
    fix: GuardFix | None = None

    def text(self) -> str:
        """ "the input's length changed 7 times across 3 functions: 21 recompiles, 33.2 s" """
        count = len(self.sizes) if self.sizes else self.recompiles
        times = "once" if count == 1 else f"{count} times"
        changed = f"changed {times}" if self.sizes else f"failed {times}"
        across = (f" across {len(self.functions)} functions" if len(self.functions) > 1
                  else f" in {self.functions[0]}")
        return (f"{self.dimension} {changed}{across}: {self.recompiles} recompiles, "
                f"{fmt_s(self.seconds)}")

    def as_dict(self) -> dict:
        return {"dimension": self.dimension, "guards": list(self.guards),
                "functions": list(self.functions), "recompiles": self.recompiles,
                "sizes": list(self.sizes), "seconds": self.seconds,
                "fix": None if self.fix is None else asdict(self.fix)}


def first_failure(reason: str | None) -> GuardFailure | None:
    """The failure of the newest cached entry: the guard this call failed first."""
    if not reason:
        return None
    first = _ENTRY.sub("", reason.split("; ")[0]).strip()
    size = _SIZE.search(first)
    if size:
        return GuardFailure(f"{size['tensor']}.size({size['index']})", int(size['actual']))
    return GuardFailure(_NUMBER.sub("N", first), None)


def guard_groups(events: Sequence[CompileEvent], records: Sequence[RequestRecord],
                 bucket_edges: Sequence[int] = (), *, bucketed: bool = False
                 ) -> tuple[GuardGroup, ...]:
    """The recompiles of one config's `events`, grouped by dimension, most seconds first.
    `bucket_edges`: the planner's; `bucketed`: the config already pads to them."""
    failed = [(e, f) for e in events if e.kind == "recompile"
              if (f := first_failure(e.reason)) is not None]
    dimension_of = _dimensions(failed)
    inputs = {r.id: {r.input_tokens, r.padded_tokens} for r in records}
    groups: dict[str, list[tuple[CompileEvent, GuardFailure]]] = {}
    for event, failure in failed:
        groups.setdefault(dimension_of[failure.guard], []).append((event, failure))
    built = [_group(members, inputs, bucket_edges, bucketed) for members in groups.values()]
    return tuple(sorted(built, key=lambda g: -g.seconds))


def _dimensions(failed: list[tuple[CompileEvent, GuardFailure]]) -> dict[str, str]:
    """guard → its dimension's representative guard: two size guards are one dimension when
    they failed on a common request and every request they share saw one new size in both."""
    seen: dict[str, dict[str | None, int | None]] = {}
    for event, failure in failed:
        seen.setdefault(failure.guard, {})[event.request_id] = failure.size
    parent = {guard: guard for guard in seen}

    def root(guard: str) -> str:
        while parent[guard] != guard:
            guard = parent[guard]
        return guard
    guards = list(seen)
    for i, a in enumerate(guards):
        for b in guards[i + 1:]:
            shared = (set(seen[a]) & set(seen[b])) - {None}
            if shared and all(seen[a][r] is not None and seen[a][r] == seen[b][r]
                              for r in shared):
                parent[root(b)] = root(a)
    return {guard: root(guard) for guard in guards}


def _group(members: list[tuple[CompileEvent, GuardFailure]], inputs: Mapping[str, set[int]],
           bucket_edges: Sequence[int], bucketed: bool) -> GuardGroup:
    guards = tuple(dict.fromkeys(f.guard for _, f in members))
    functions = tuple(dict.fromkeys(e.function for e, _ in members))
    sizes = tuple(dict.fromkeys(f.size for _, f in members if f.size is not None))
    seconds = sum(e.duration_s or 0.0 for e, _ in members)
    is_input = bool(sizes) and all(
        f.size in inputs.get(e.request_id or "", set()) for e, f in members if f.size is not None)
    dimension = "the input's length" if is_input else guards[0]
    fix = _fix(len(members), len(functions), seconds, sizes, is_input,
               () if bucketed else bucket_edges)
    if is_input and bucketed:
        fix = GuardFix({"prewarm": "on"},
                       f"prewarm=on: the {len(sizes)} bucket shapes compile before the first "
                       f"request: {len(members)} recompiles ({fmt_s(seconds)}) leave serving",
                       len(members), seconds)
    return GuardGroup(dimension, guards, functions, len(members), sizes, seconds, fix)


def buckets_reached(lengths: Iterable[int], edges: Sequence[int]) -> int:
    """How many of the planner's buckets these lengths fall in (the shapes bucketing compiles)."""
    edges = sorted(edges)
    return len({bisect_left(edges, n) for n in lengths})


def bucketing_saving(recompiles: int, functions: int, buckets: int,
                     mean_s: float) -> tuple[int, float]:
    """(recompiles avoided, their seconds) by bucketing=on: each function compiles one shape a
    bucket the traffic reaches, its first not a recompile, so (buckets − 1) a function remain.
    The one formula the guard groups' fix and the next step both print (saving_text)."""
    avoided = max(recompiles - (buckets - 1) * functions, 0)
    return avoided, avoided * mean_s


def saving_text(avoided: int, seconds: float) -> str:
    return f"about {avoided} recompiles ({fmt_s(seconds)}) avoided"


def fix_saving(groups: Sequence[GuardGroup], change: Mapping[str, str]
               ) -> tuple[int, float] | None:
    """What `change` avoids over every group it fixes (None: it fixes none)."""
    fixed = [g.fix for g in groups if g.fix is not None and dict(g.fix.change) == dict(change)]
    if not fixed:
        return None
    return sum(f.avoided_recompiles for f in fixed), sum(f.avoided_s for f in fixed)


def _fix(recompiles: int, functions: int, seconds: float, sizes: tuple[int, ...],
         is_input: bool, bucket_edges: Sequence[int]) -> GuardFix | None:
    if not sizes:
        return None         # a guard on a Python value or an object: no option changes it
    mean_s = seconds / recompiles
    if is_input and bucket_edges:
        edges = sorted(bucket_edges)
        buckets = buckets_reached(sizes, edges)
        avoided, avoided_s = bucketing_saving(recompiles, functions, buckets, mean_s)
        if not avoided:
            return None
        return GuardFix({"bucketing": "on"},
                        f"bucketing=on: the planner's {len(edges)} buckets "
                        f"({', '.join(map(str, edges))}) hold these {len(sizes)} lengths in "
                        f"{buckets} shapes: {saving_text(avoided, avoided_s)}", avoided,
                        avoided_s)
    # one dynamic compile a function replaces its static shapes (dynamo marks the dimension
    # dynamic on the second size it sees: that recompile stays)
    avoided = max(recompiles - functions, 0)
    if not avoided:
        return None
    how = "dynamic=on" if is_input else "dynamic=on (or torch._dynamo.mark_dynamic on it)"
    return GuardFix({"dynamic": "on"},
                    f"{how}: one dynamic-shape compile a function instead of one a size: "
                    f"{saving_text(avoided, avoided * mean_s)}",
                    avoided, avoided * mean_s)
