"""What panels pair and pick from a snapshot."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tui import derive


def test_config_changes_are_read_from_the_requests(stages):
    bucketing = stages["bucketing"]
    changes = derive.config_changes(bucketing.recent)
    firsts = {}
    for record in sorted(bucketing.recent, key=lambda r: r.seq):
        firsts.setdefault(record.config_id, record.start_s)
    expected = [(cid, t) for cid, t in firsts.items()][1:]     # the oldest is no change
    assert [(c.config_id, c.t_s) for c in changes] == expected


def test_previous_config_is_the_last_other_config_served(stages):
    assert derive.previous_config_id(stages["bucketing"]) == "c2"
    assert derive.previous_config_id(stages["compiling"]) == "c1"   # c2 has served nothing
    assert derive.previous_config_id(stages["baseline"]) is None


def test_previous_config_after_toggling_back(stages):
    bucketing = stages["bucketing"]
    back = replace(bucketing, config_id="c1", options=bucketing.configs[0].options)
    assert derive.previous_config_id(back) == "c3"


def test_kv_waste_sums_the_current_configs_requests(stages):
    bucketing = stages["bucketing"]
    waste = derive.kv_waste(bucketing)
    c3 = [r for r in bucketing.recent if r.config_id == "c3" and r.ok]
    assert waste.requests == len(c3)
    held = sum(r.kv_cache_bytes for r in c3)
    assert waste.allocated_bytes == held
    assert waste.waste_fraction == pytest.approx(1 - sum(r.kv_cache_used_bytes for r in c3) / held)
    assert 0 < waste.waste_fraction < 1        # bucketing pads the cross-attention cache


def test_compile_clock_adds_local_time_to_the_engine_clock(stages):
    compiling = stages["compiling"]
    base = compiling.t_s - compiling.compiling_since_s
    assert derive.compiling_elapsed_s(compiling, 0.0) == base
    assert derive.compiling_elapsed_s(compiling, 4.5) == base + 4.5
    assert derive.compiling_elapsed_s(stages["baseline"], 4.5) is None


def test_labels(stages):
    assert derive.config_label(stages["bucketing"], "c3") == "compile=default bucketing=on"
    assert derive.config_label(stages["bucketing"], "c1") == "baseline"
