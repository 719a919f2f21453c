"""The engine's energy ledger: reads the counter at each step's boundaries and charges the
step's rise to the requests in it (probe/analysis/energy.py's `split_step`); what the counter
rose between steps is the config's idle floor. Without a counter every answer is None and
nothing is read.

A continuous-batching decode step is shared: every running request makes one token in it, so
each is owed the step's joules ÷ the requests in it. Charging each one every step would make
the host's work per step grow with the slots (#41), so those steps add to one running sum of
joules a share instead, and a request is owed the sum's rise between its join (`share_mark`)
and its leaving (`settle_share`): O(1) a step, O(1) a request."""

from __future__ import annotations

from typing import Mapping, Sequence

from probe.analysis.energy import split_step
from probe.contract.figures import ConfigEnergy
from probe.contract.records import EnergyPhases
from probe.engine.observe.energy_counter import EnergyCounter, EnergyReading, Unavailable


class EnergyLedger:
    def __init__(self, counter: EnergyCounter | Unavailable) -> None:
        self.counter = None if isinstance(counter, Unavailable) else counter
        self.unavailable = counter.reason if isinstance(counter, Unavailable) else None
        self._last: EnergyReading | None = None
        self._charged: dict[str, list[float]] = {}      # request id → [encode J, decode J]
        self._configs: dict[str, ConfigEnergy] = {}
        self._per_share = 0.0       # Σ over shared steps of their joules ÷ their requests

    @property
    def available(self) -> bool:
        return self.counter is not None

    def _read(self) -> EnergyReading | None:
        """The counter now, kept as the last reading."""
        if self.counter is None:
            return None
        reading = self.counter.read()
        if isinstance(reading, Unavailable):     # it stopped answering: say so from now on
            self.counter, self.unavailable = None, reading.reason
            return None
        self._last = reading
        return reading

    def begin(self, config_id: str) -> EnergyReading | None:
        """A step starts: the rise since the last reading is `config_id`'s idle floor."""
        last = self._last
        reading = self._read()
        if reading is not None and last is not None:
            self._add(config_id, idle_j=reading.joules_total - last.joules_total,
                      idle_s=reading.t_s - last.t_s)
        return reading

    def mid(self) -> EnergyReading | None:
        """A reading inside a step (the encoder's end) that splits it in two."""
        return self._read()

    def charge(self, config_id: str, start: EnergyReading | None, end: EnergyReading | None,
               phase: str, work: Sequence[tuple[str, int]]) -> None:
        """Charge the rise from `start` to `end` to the requests of `work` by their share
        (a step with no work leaves its joules idle)."""
        if start is None or end is None:
            return
        joules = end.joules_total - start.joules_total
        shares = split_step(joules, work)
        index = 0 if phase == "encode" else 1
        for rid, share in shares.items():
            self._charged.setdefault(rid, [0.0, 0.0])[index] += share
        self._add(config_id, idle_j=joules - sum(shares.values()), busy_s=end.t_s - start.t_s)

    def end(self, config_id: str, start: EnergyReading | None, phase: str,
            work: Sequence[tuple[str, int]]) -> EnergyReading | None:
        """A step ends: read, and charge it from `start`."""
        reading = self._read()
        self.charge(config_id, start, reading, phase, work)
        return reading

    def end_shared(self, config_id: str, start: EnergyReading | None,
                   sharing: int) -> EnergyReading | None:
        """A decode step that `sharing` requests shared equally ends: read, and add its rise
        to the joules a share (with no one in it, the rise is idle)."""
        reading = self._read()
        if start is not None and reading is not None:
            joules = reading.joules_total - start.joules_total
            if sharing > 0:
                self._per_share += joules / sharing
            self._add(config_id, idle_j=0.0 if sharing > 0 else joules,
                      busy_s=reading.t_s - start.t_s)
        return reading

    def share_mark(self) -> float:
        """Where the joules a share stand: taken when a request starts to share steps."""
        return self._per_share

    def settle_share(self, request_id: str, mark: float) -> None:
        """The request leaves the shared steps: it is owed their joules a share since `mark`
        (its decode joules)."""
        owed = self._per_share - mark
        if owed:
            self._charged.setdefault(request_id, [0.0, 0.0])[1] += owed

    def take(self, request_id: str) -> EnergyPhases | None:
        """The request's joules so far (0 where no step of it was read); None without a
        counter."""
        charged = self._charged.pop(request_id, None)
        if self.counter is None and charged is None:
            return None
        encode, decode = charged or (0.0, 0.0)
        return EnergyPhases(encode, decode)

    def config_energy(self, config_id: str) -> ConfigEnergy:
        if config_id in self._configs and self.unavailable is None:
            return self._configs[config_id]
        if self.unavailable is not None:
            return ConfigEnergy(unavailable=self.unavailable)
        return ConfigEnergy(source=self.counter.source if self.counter else None)

    def rekey(self, mapping: Mapping[str, str | None]) -> None:
        """Another session's config ids (probe/engine/session_swap.py); a config mapped to
        None, or not in `mapping`, is dropped."""
        configs: dict[str, ConfigEnergy] = {}
        for config_id, energy in self._configs.items():
            now = mapping.get(config_id)
            if now is not None:
                configs[now] = energy
        self._configs = configs

    def _add(self, config_id: str, *, idle_j: float = 0.0, idle_s: float = 0.0,
             busy_s: float = 0.0) -> None:
        was = self._configs.get(config_id) or ConfigEnergy(
            source=self.counter.source if self.counter else None)
        self._configs[config_id] = ConfigEnergy(
            source=was.source, idle_j=was.idle_j + idle_j, idle_s=was.idle_s + idle_s,
            busy_s=was.busy_s + busy_s)
