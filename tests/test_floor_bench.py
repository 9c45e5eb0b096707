"""bench/floor_bench.py: its budget arithmetic (pure; no stack)."""

from __future__ import annotations

import doctest

from bench import floor_bench


def test_the_docstring_examples_pass():
    result = doctest.testmod(floor_bench)
    assert result.failed == 0 and result.attempted >= 2


def test_the_budget_names_only_what_its_shapes_measured():
    budget = floor_bench.budget
    figures = {"cpu_us_per_message": {"machine busy (all processes)": 40}}
    out = budget({"sql_copy": figures})
    assert out["one_kafka_flink_kafka_hop_share_of_budget"] == 0.2
    assert "parse_us" not in out and "jobs_alone_us" not in out
