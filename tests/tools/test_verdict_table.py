"""tools/verdict_table.py: every verdict of two reports found by its path, and read three ways."""

from tools.verdict_table import table, three_way, verdicts


def report(e1_default: str, e6_step: str) -> dict:
    return {"experiments": {
        "E1": {"configs": {"default": {"vs_off": {"verdict": e1_default, "ratio": 0.5}}}},
        "E6": {"steps": [{"name": "bf16", "verdict": e6_step}], "verdict_text": "x"}}}


def test_every_verdict_is_found_by_its_path() -> None:
    found = dict(verdicts(report("faster", "within noise")["experiments"]))
    assert found == {"E1.configs.default.vs_off": "faster", "E6.steps[0]": "within noise"}


def test_no_difference_yet_and_within_noise_agree_and_a_flip_does_not() -> None:
    assert three_way("within noise") == three_way("no difference yet") == "no difference"
    lines, same, total = table(report("faster", "no difference yet"),
                               report("faster", "within noise"))
    assert (same, total) == (2, 2)
    lines, same, total = table(report("slower", "within noise"), report("faster", "within noise"))
    assert (same, total) == (1, 2) and any("**no**" in line for line in lines)


def test_a_verdict_only_one_report_has_is_counted_against_them() -> None:
    fast = report("faster", "faster")
    del fast["experiments"]["E6"]
    lines, same, total = table(fast, report("faster", "faster"))
    assert (same, total) == (1, 2) and "| `E6.steps[0]` | — | faster | **no** |" in lines
