"""`trace import` flags that only some formats or fit policies read: given where they do not
apply, they are refused (one line naming the flag and where it applies) instead of being
silently ignored, so a user never believes a trace was imported at a rate it was not."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from probe.common.errors import file_error

DEFAULT_RATE_RPS = 1.0
DEFAULT_SEED = 0
DEFAULT_SCALE_QUANTILE = 1.0
# flag -> (the formats it applies to, what it does there)
FORMAT_FLAGS = {"rate": (("sharegpt",), "--rate"), "seed": (("sharegpt",), "--seed"),
                "sort": (("azure", "burstgpt"), "--sort")}


@dataclass(frozen=True)
class ImportFlags:
    rate: float
    seed: int
    sort: bool
    scale_quantile: float


def import_flags(args: argparse.Namespace) -> ImportFlags:
    """The flags' values, defaults filled in; a TraceError for one given where it does not apply
    (the parser leaves them None, or False, when they are not given)."""
    for name, (formats, flag) in FORMAT_FLAGS.items():
        given = getattr(args, name)
        if given not in (None, False) and args.format not in formats:
            raise file_error(f"{flag} does not apply to --format {args.format} (only to "
                             f"{', '.join(formats)})")
    if args.scale_quantile is not None and args.fit != "scale":
        raise file_error(f"--scale-quantile applies only with --fit scale (this import uses "
                         f"--fit {args.fit})")
    return ImportFlags(
        rate=DEFAULT_RATE_RPS if args.rate is None else args.rate,
        seed=DEFAULT_SEED if args.seed is None else args.seed,
        sort=bool(args.sort),
        scale_quantile=DEFAULT_SCALE_QUANTILE if args.scale_quantile is None
        else args.scale_quantile)
