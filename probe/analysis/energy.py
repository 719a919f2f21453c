"""Joules per request, from an energy counter read at the boundaries of the engine's own steps.

The rule (one, used by the engine's ledger, the tests and every view):
- a step's energy is the counter's rise from its start to its end;
- it is split among the requests that shared the step by their share of its work: an encode
  step by the input positions each ran (its padded width: padding is work the device did for
  it), a decode step by the tokens each made in it;
- energy between steps (the host's bookkeeping, waits for arrivals) is the idle floor,
  reported apart and never spread over requests.
So Σ per request + idle = the counter's rise over the run, exactly (float sums aside).

The segment figures (`energy_stats`) are computed from the records' `energy_j` and
`energy_phases_j` and the config's `ConfigEnergy`: recomputable from a saved session.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from probe.analysis.slo import good_requests
from probe.contract.figures import NOT_RECORDED, ConfigEnergy, EnergyStats
from probe.contract.objective import Slo
from probe.contract.records import EnergyPhases, RequestRecord

PHASES = ("encode", "decode")


@dataclass(frozen=True)
class Step:
    start_j: float              # the counter's reading when the step began
    end_j: float                # … and when it ended
    phase: str                  # "encode" | "decode"
    work: tuple[tuple[str, int], ...]   # (request id, its positions or tokens in the step)


@dataclass(frozen=True)
class Attribution:
    per_request: Mapping[str, EnergyPhases]
    idle_j: float


def split_step(joules: float, work: Sequence[tuple[str, int]]) -> dict[str, float]:
    """A step's joules by each request's share of its work; a step with no work is no one's
    ({}: its joules are idle)."""
    total = sum(units for _, units in work)
    if total <= 0:
        return {}
    shares: dict[str, float] = {}
    for rid, units in work:
        shares[rid] = shares.get(rid, 0.0) + joules * units / total
    return shares


def attribute(first_j: float, last_j: float, steps: Sequence[Step]) -> Attribution:
    """Per-request joules over a run whose counter read `first_j` at its start and `last_j`
    at its end, given its steps in order (their readings within [first_j, last_j])."""
    encode: dict[str, float] = {}
    decode: dict[str, float] = {}
    owned = 0.0
    for step in steps:
        if step.phase not in PHASES:
            raise ValueError(f"a step's phase is encode or decode, not {step.phase!r}")
        into = encode if step.phase == "encode" else decode
        for rid, joules in split_step(step.end_j - step.start_j, step.work).items():
            into[rid] = into.get(rid, 0.0) + joules
            owned += joules
    ids = list(dict.fromkeys([*encode, *decode]))
    per_request = {rid: EnergyPhases(encode.get(rid, 0.0), decode.get(rid, 0.0))
                   for rid in ids}
    return Attribution(per_request, last_j - first_j - owned)


def continued_energy(earlier: ConfigEnergy | None, now: ConfigEnergy) -> ConfigEnergy:
    """A config's idle floor across engines of one session (a restarted engine's ledger
    counts from zero): joules and seconds add where both read a counter; otherwise what this
    engine says (a counter that stopped answering is said as the live engine says it)."""
    if earlier is None or earlier.source is None or now.source is None \
            or earlier.unavailable is not None or now.unavailable is not None:
        return now
    return ConfigEnergy(source=now.source, idle_j=earlier.idle_j + now.idle_j,
                        idle_s=earlier.idle_s + now.idle_s, busy_s=earlier.busy_s + now.busy_s)


def padding_joules(record: RequestRecord) -> float:
    """Of a request's encode joules, the padded positions' share: the encoder ran
    `padded_tokens` positions for it, `input_tokens` of them its own."""
    phases = record.energy_phases_j
    if phases is None or record.padded_tokens <= 0:
        return 0.0
    pad = max(record.padded_tokens - record.input_tokens, 0)
    return phases.encode * pad / record.padded_tokens


def energy_stats(records: Sequence[RequestRecord], config: ConfigEnergy | None,
                 slo: Slo | None) -> EnergyStats:
    """A segment's energy: joules its requests were given plus the idle floor while it was
    served; J per output token over the requests' joules (failed ones' included: the device
    spent them) and served tokens; J per good token over the same joules and the tokens of
    requests that met the SLO (None without one); shares of the requests' joules that went to
    padded positions and to failed requests."""
    if config is None:
        return EnergyStats(unavailable=NOT_RECORDED)
    if config.unavailable is not None:
        return EnergyStats(unavailable=config.unavailable)
    measured = [r for r in records if r.energy_j is not None]
    request_j = sum(r.energy_j or 0.0 for r in measured)
    tokens = sum(r.output_tokens for r in measured if r.ok)
    good = (None if slo is None else
            sum(r.output_tokens for r in good_requests(measured, slo)))
    joules = request_j + config.idle_j
    seconds = config.busy_s + config.idle_s
    return EnergyStats(
        source=config.source, joules=joules, idle_joules=config.idle_j,
        j_per_token=request_j / tokens if tokens else None,
        j_per_good_token=request_j / good if good else None,
        avg_power_w=joules / seconds if seconds > 0 else None,
        idle_power_w=config.idle_j / config.idle_s if config.idle_s > 0 else None,
        padding_share=(sum(padding_joules(r) for r in measured) / request_j
                       if request_j > 0 else None),
        failed_share=(sum(r.energy_j or 0.0 for r in measured if not r.ok) / request_j
                      if request_j > 0 else None))
