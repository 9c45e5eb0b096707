"""bench/floor_bench.py: its budget arithmetic and its end-of-drain rule (pure; no stack)."""

from __future__ import annotations

import doctest

from tests.bench_modules import load


def _module():
    return load("floor_bench")


def test_the_docstring_examples_pass():
    result = doctest.testmod(_module())
    assert result.failed == 0 and result.attempted >= 4


def test_a_drain_still_short_of_its_end_is_not_done_however_long_it_stalls():
    settled = _module()._settled
    stalled = [(float(second), 500_000) for second in range(120)]
    assert not settled(stalled, 1_000_000)
    assert settled([(0.0, 999_500), (5.0, 999_500), (16.0, 999_500)], 1_000_000)
    assert not settled([(0.0, 999_400), (5.0, 999_450), (16.0, 999_500)], 1_000_000)  # still moving


def test_the_budget_names_only_what_its_shapes_measured():
    budget = _module().budget
    figures = {"cpu_us_per_message": {"machine busy (all processes)": 40}}
    out = budget({"sql_copy": figures})
    assert out["one_kafka_flink_kafka_hop_share_of_budget"] == 0.2
    assert "parse_us" not in out and "jobs_alone_us" not in out
