"""bench/stack_env.py, the test stack's helpers the stack tests and the benches share (pure; no stack)."""

from __future__ import annotations

import doctest

import orjson

from bench import stack_env


def test_the_docstring_examples_pass():
    result = doctest.testmod(stack_env)
    assert result.failed == 0 and result.attempted >= 2


def test_the_test_stack_has_ports_of_its_own_in_its_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PATHWATCH_TEST_HOME", str(tmp_path / "home"))
    home = stack_env.prepared_home()
    assert home == tmp_path / "home"
    text = (home / "pathwatch.toml").read_text()
    assert "[kafka]\nport = 29092\n" in text and "[postgres]\nport = 25433\n" in text


def test_a_run_environment_drops_settings_meant_for_another_stack(monkeypatch):
    monkeypatch.setenv("PATHWATCH_TOPIC_RAW", "someone-elses.raw")
    monkeypatch.setenv("PATHWATCH_HOME", "/elsewhere")
    env = stack_env.run_env(stack_env.REPO / "h", "r1", tickets=False, prefix="soak")
    assert env["PATHWATCH_HOME"] == str(stack_env.REPO / "h") and env["PATHWATCH_TICKETS_ENABLED"] == "0"
    assert env["PATHWATCH_TOPIC_RAW"] == "soak-r1.raw" and env["PATHWATCH_PIPELINE_PARALLELISM"] == "1"


def test_watermark_tails_are_one_trace_per_path_at_the_time_given():
    data = [orjson.dumps({"format": "ping", "source": s, "destination": d, "payload": ""})
            for s, d in (("a", "b"), ("b", "a"), ("a", "b"))] + [b"{}"]   # no path: no tail
    tails = [orjson.loads(body) for body in stack_env.watermark_tails(data, 1_767_225_600.0)]
    assert [(t["source"], t["destination"]) for t in tails] == [("a", "b"), ("b", "a")]
    assert {t["collected_at"] for t in tails} == {"2026-01-01T00:00:00Z"} and {t["format"] for t in tails} == {"tracepath"}
