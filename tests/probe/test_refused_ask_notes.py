"""An ask the engine refuses outright lands on the config already served (parallel=large with
compile off changes nothing): its reason still reaches the config's notes, which the status
line reads, and is said once as a notice — never a bare "asked large" with no why."""

from __future__ import annotations

from probe.contract.options import OptConfig
from probe.contract.session import Session


def test_a_config_reached_again_keeps_the_notes_it_lacked_once_each() -> None:
    session = Session()
    first = session.config_id(OptConfig())
    again = session.config_id(OptConfig(), ("parallel is an inductor option: …",))
    twice = session.config_id(OptConfig(), ("parallel is an inductor option: …", "other"))
    assert first == again == twice == "c1"
    assert session.config_notes("c1") == ("parallel is an inductor option: …", "other")
    assert session.config_notes("c9") == ()


def test_the_engine_says_why_it_refused_an_ask_that_changes_nothing() -> None:
    from probe.engine.engine import Engine, EngineSettings
    engine = Engine(EngineSettings(model="t5-tiny", device="cpu", max_new_tokens=4), OptConfig())
    try:
        before = engine.config_id
        for _ in range(2):
            assert engine.set_options(OptConfig(parallel="large")) == before
        data = engine.session.freeze()
        notes = data.configs[before].notes
        assert any(note.startswith("parallel is an inductor option") for note in notes)
        said = [n.text for n in data.notices if n.text.startswith("parallel is")]
        assert len(said) == 1
        assert engine.options.parallel == "all"
    finally:
        engine.close()
