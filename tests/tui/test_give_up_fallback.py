"""Issue 49: from c3, `x` restarted on another compiled config (c2), which compiled again, and
offered "x gives it up and serves c3": the user bounced between two compiled configs. `x`
reaches a config that needs no compile: the eager config served last, else the eager twin."""

from __future__ import annotations

from dataclasses import replace

from probe.analysis.break_even_live import eager_twin
from tui.pending_wait import fallback_label, fallback_options


def test_x_from_a_compiled_config_after_another_goes_back_to_eager(stages):
    view = stages["bucketing"]          # c1 eager, c2 compiled, c3 compiled bucketing=on
    served = {e.config_id: e.options for e in view.configs}
    assert served["c2"].compiled and view.options.compiled and not served["c1"].compiled
    config_id, options = fallback_options(view)
    assert (config_id, options) == ("c1", served["c1"])
    assert not options.compiled
    assert fallback_label(view) == f"c1's {served['c1'].label()} again"


def test_x_with_no_eager_config_served_asks_for_the_eager_twin(stages):
    view = stages["bucketing"]
    compiled = tuple(e for e in view.configs if e.options.compiled)
    view = replace(view, configs=compiled,
                   segments=tuple(s for s in view.segments if s.config_id != "c1"),
                   recent=tuple(r for r in view.recent if r.config_id != "c1"))
    config_id, options = fallback_options(view)
    assert config_id is None and options == eager_twin(view.options)
    assert not options.compiled and fallback_label(view).endswith(", eager")
