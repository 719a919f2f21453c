"""A compiled config's break-even against its eager twin, as the live view and the doctor show
it: the twin's definition and the status from a session's segments."""

from __future__ import annotations

from probe.analysis.stats import break_even, compile_s
from probe.contract.options import COMPILE_ONLY, OptConfig
from probe.contract.records import BreakEven
from probe.contract.session import SessionData


def eager_twin(options: OptConfig) -> OptConfig:
    """The same options served eager: what a compiled config's break-even is measured against."""
    twin = options.with_option("compile", "off")
    for key, off in COMPILE_ONLY.items():
        twin = twin.with_option(key, off)
    return twin


def break_even_status(data: SessionData, options: OptConfig, config_id: str) -> BreakEven | None:
    """For a compiled config: its compile seconds against the time it saves per request over
    the same options served eager (a segment of this session), once both have served enough."""
    if not options.compiled:
        return None
    eager_options = eager_twin(options)
    eager_id = next((cid for cid, entry in data.configs.items()
                     if entry.options == eager_options), None)
    if eager_id is None:
        return None
    spent_s = compile_s(e for e in data.events if e.config_id == config_id)
    return break_even(spent_s, [r for r in data.records if r.config_id == config_id],
                      [r for r in data.records if r.config_id == eager_id],
                      compiled_config=config_id, eager_config=eager_id)
