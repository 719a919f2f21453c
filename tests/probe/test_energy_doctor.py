"""The doctor's `energy_padding` finding on synthetic records with known joules: raised when
padded encoder positions took at least ENERGY_PADDING of the requests' joules, with the
segment's own figures in its evidence, and never where energy was not measured."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import pytest

from probe.analysis.diagnosis import diagnose
from probe.analysis.findings import ENERGY_PADDING
from probe.analysis.stats import session_segments
from probe.contract.figures import ConfigEnergy
from probe.contract.options import OptConfig
from probe.contract.records import EnergyPhases
from probe.contract.session import ConfigEntry, SessionData
from tests.conftest import synthetic_record


def session(input_tokens: int, padded_tokens: int, encode_j: float, decode_j: float,
            energy: ConfigEnergy) -> SessionData:
    records = tuple(
        replace(synthetic_record(f"r{i}", i, latency_ms=80.0, input_tokens=input_tokens,
                                 padded_tokens=padded_tokens),
                energy_j=encode_j + decode_j, energy_phases_j=EnergyPhases(encode_j, decode_j))
        for i in range(4))
    return SessionData(records=records,
                       configs=MappingProxyType({"c1": ConfigEntry("c1", OptConfig())}),
                       energy=MappingProxyType({"c1": energy}))


RAPL = ConfigEnergy(source="RAPL package-0", idle_j=5.0, idle_s=2.0, busy_s=1.0)


def findings(data: SessionData) -> dict[str, str]:
    return {f.finding: f.evidence for f in diagnose(data, "c1").findings}


def test_padding_that_took_a_quarter_of_the_joules_is_found_with_its_numbers() -> None:
    # each request: 5 of its 10 encoder positions are pads, so half its 2 J of encode (1 J)
    # went to padding, of its 2 + 2 = 4 J: 25%; four requests: 4 J of 16 J
    found = findings(session(5, 10, 2.0, 2.0, RAPL))
    assert found["energy_padding"] == ("padding cost 25% of the energy (4 J of the requests' "
                                       "16 J, idle floor apart): encoder positions run on pads")


def test_the_finding_reads_the_segments_padding_share() -> None:
    data = session(7, 10, 1.5, 2.5, RAPL)
    (segment,) = session_segments(data)
    assert segment.energy is not None and segment.energy.padding_share is not None
    expected = 1.5 * 3 / 10 / 4.0     # independent: encode J × pad share ÷ request J
    assert segment.energy.padding_share == pytest.approx(expected)
    assert ("energy_padding" in findings(data)) == (expected >= ENERGY_PADDING)


@pytest.mark.parametrize("input_tokens, encode_j, raised", [
    (9, 3.0, False),      # 1 pad of 10 on 3 J of 4 J: 7.5%
    (8, 2.5, True),       # 2 pads of 10 on 2.5 J of 4 J: 12.5%
    (10, 4.0, False),     # no padding
])
def test_the_threshold_is_a_share_of_the_requests_joules(input_tokens, encode_j,
                                                         raised) -> None:
    data = session(input_tokens, 10, encode_j, 4.0 - encode_j, RAPL)
    assert ("energy_padding" in findings(data)) == raised


@pytest.mark.parametrize("energy", [ConfigEnergy(unavailable="no powercap here"), None])
def test_nothing_is_found_where_energy_was_not_measured(energy) -> None:
    data = session(2, 10, 3.0, 1.0, RAPL)
    data = replace(data, energy=MappingProxyType({} if energy is None else {"c1": energy}))
    assert "energy_padding" not in findings(data)
