import pytest

from probe.common.errors import BadInput
from probe.contract.options import CHOICES, OptConfig, parse_opts


def test_parse_applies_each_pair_over_the_defaults():
    config = parse_opts(["compile=max-autotune", "decode=fullgraph", "kv-cache=off"])
    assert (config.compile, config.decode, config.kv_cache) == ("max-autotune", "fullgraph", "off")
    assert config.precision == OptConfig().precision


@pytest.mark.parametrize("pair, named", [
    ("compile=fast", "default, reduce-overhead"),
    ("turbo=on", "valid keys"),
    ("compile", "KEY=VALUE"),
])
def test_bad_pairs_name_the_problem_and_the_choices(pair, named):
    with pytest.raises(BadInput, match=named):
        parse_opts([pair])


@pytest.mark.parametrize("key", list(CHOICES))
def test_cycling_visits_every_value_and_wraps(key):
    config, seen = OptConfig(), []
    for _ in CHOICES[key]:
        seen.append(getattr(config, key))
        config = config.cycled(key)
    assert seen == list(CHOICES[key])
    assert getattr(config, key) == CHOICES[key][0]


def test_label_lists_only_what_differs_from_the_baseline():
    assert OptConfig().label() == "baseline"
    assert parse_opts(["precision=bf16"]).label() == "precision=bf16"


def test_the_readme_table_is_the_registry():
    from pathlib import Path

    from probe.contract.options import markdown_table
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert markdown_table() in readme


def test_every_option_has_its_own_hotkey_and_a_place_that_applies_it():
    from pathlib import Path

    from probe.contract.options import OPTIONS
    root = Path(__file__).resolve().parents[2]
    assert len({o.hotkey for o in OPTIONS}) == len(OPTIONS)
    for option in OPTIONS:
        path, name = option.applied_by.split(": ")
        source = (root / path).read_text()
        assert f"def {name.split('.')[-1]}(" in source, option.applied_by


def test_optconfigs_fields_are_the_registrys_keys_in_order_with_its_defaults():
    from dataclasses import fields

    from probe.contract.options import OPTIONS
    assert [(f.name, f.type, f.default) for f in fields(OptConfig)] == [
        (o.key, "str", o.default) for o in OPTIONS]
    assert OptConfig.__dataclass_params__.frozen
