"""bench/pipeline_verdict.py: the targets read against one run's figures (pure; no stack)."""

from __future__ import annotations

import doctest

from bench import pipeline_verdict


def test_the_docstring_examples_pass():
    result = doctest.testmod(pipeline_verdict)
    assert result.failed == 0 and result.attempted >= 3


def test_a_run_that_meets_the_targets_is_short_of_nothing_and_the_costliest_stage_holds_back():
    figures = {"machine": "2 cores", "end_to_end_records_per_s": 12_000, "ratio_to_raw_kafka_consume": 0.25,
               "cpu_us_per_record_stored": {"flink taskmanagers": 90, "kafka": 50, "postgresql": 20,
                                            "machine: interrupts": 5, "unaccounted": 3,
                                            "machine busy (all processes)": 168}}
    live = {"latency_s_publish_to_anomaly": {"p99": 2.5}, "live_messages_per_s": 1000.0,
            "latency_s_by_kind": {"latency_shift": {"p99": 1.2}, "route_change": {"p99": 2.5}}}
    result = pipeline_verdict.verdict(figures, live)
    assert all(target["met"] and target["short_by_factor"] is None for target in result["targets"].values())
    assert result["targets"]["live_p99_s_publish_to_anomaly"]["p99_s_by_kind"] == {"latency_shift": 1.2, "route_change": 2.5}
    assert result["holds_back"]["stage"] == "flink taskmanagers"
    assert list(result["stages"]) == ["flink taskmanagers", "kafka", "postgresql"]   # not the machine's own lines
    assert result["cpu_us_per_record"] == {"budget_at_target": 200.0, "measured": 168, "must_shrink_by_factor": 0.8}


def test_a_live_p99_over_the_target_says_by_how_much():
    figures = {"machine": "2 cores", "end_to_end_records_per_s": 1_290, "ratio_to_raw_kafka_consume": 0.024,
               "cpu_us_per_record_stored": {"flink taskmanagers": 1011, "machine busy (all processes)": 1572}}
    live = {"latency_s_publish_to_anomaly": {"p99": 58.07}, "live_messages_per_s": 923.8}
    targets = pipeline_verdict.verdict(figures, live)["targets"]
    assert targets["records_per_s"]["short_by_factor"] == 7.8
    assert targets["ratio_to_raw_kafka_consume"]["short_by_factor"] == 8.3
    assert targets["live_p99_s_publish_to_anomaly"]["short_by_factor"] == 11.6
