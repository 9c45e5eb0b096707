"""`collect --once` with the real tools on loopback: every envelope parses, failures are said."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import iperf3_server, require_tool
from pathwatch.ingest.parse import parse_value

pytestmark = pytest.mark.tools

HOSTS = [{"name": "here", "address": "127.0.0.1"}, {"name": "loop", "address": "127.0.0.1"},
         {"name": "loop2", "address": "127.0.0.2"}]  # fmt: skip
GROUPS = {"out": {"type": "disjoint", "a": ["here"], "b": ["loop"], "unidirectional": True},
          "out2": {"type": "disjoint", "a": ["here"], "b": ["loop", "loop2"], "unidirectional": True}}  # fmt: skip


@pytest.fixture
def iperf3_port():
    """A persistent iperf3 server on a free loopback port."""
    with iperf3_server() as port:
        yield port


def _test(name, kind, tool, group="out", **options) -> dict:
    return {"name": name, "type": kind, "tool": tool, "group": group, "interval": 60, "options": options}


def _collect(tmp_path: Path, tests: list[dict], *extra: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, list]:
    mesh = tmp_path / "mesh.yaml"
    mesh.write_text(yaml.safe_dump({"name": "loopback", "hosts": HOSTS, "groups": GROUPS, "tests": tests}))
    out = tmp_path / "out.jsonl"
    done = subprocess.run([sys.executable, "-m", "pathwatch.collector.collect_cli", "--mesh", str(mesh), "--host", "here",
                           "--out", str(out), *extra], capture_output=True, text=True, timeout=timeout)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    envelopes = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return done, envelopes


def test_collect_once_runs_every_tool_and_every_envelope_parses(tmp_path, iperf3_port):
    for tool in ("iperf3", "ping", "tracepath", "traceroute", "mtr", "scamper"):
        require_tool(tool)
    tests = [
        _test("bw", "throughput", "iperf3", duration=1, port=iperf3_port),
        _test("rtt", "latency", "ping", count=3, interval=0.2),
        _test("tp", "trace", "tracepath", max_hops=5),
        _test("tr", "trace", "traceroute", max_hops=5, wait=1),
        _test("mtr", "trace", "mtr", count=1, gracetime=1),
        _test("sc", "trace", "scamper", max_hops=5, wait=1),
    ]
    started = time.monotonic()
    done, envelopes = _collect(tmp_path, tests, "--once")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 30
    assert sorted(e["meta"]["test"] for e in envelopes) == sorted(t["name"] for t in tests)
    for envelope in envelopes:
        assert envelope["meta"]["mesh"] == "loopback" and "collector_error" not in envelope["meta"]
        assert envelope["collected_at"].endswith("Z") and len(envelope["collected_at"]) == 20
        fmt, records = parse_value(envelope)
        assert fmt == envelope["meta"]["tool"] and len(records) == 1, envelope
        (record,) = records
        assert (record.source, record.destination) == ("here", "loop")
        assert record.succeeded, (fmt, record.error)
        if record.kind == "trace":
            assert record.reached is not False and record.hops, fmt
    assert done.stderr.count(" ok ") == len(tests)


def test_a_missing_tool_gives_one_clear_line_and_no_crash(tmp_path):
    tests = [
        _test("rtt", "latency", "ping", group="out2", count=1, executable="/nonexistent/bin/ping"),
        _test("route", "trace", "mtr", executable="pathwatch-no-such-mtr"),
    ]
    done, envelopes = _collect(tmp_path, tests, "--once", timeout=30)
    assert done.returncode == 1
    assert done.stderr.count("/nonexistent/bin/ping not found: install it") == 1  # once for its two tasks
    assert done.stderr.count("pathwatch-no-such-mtr not found on PATH") == 1
    # ping can say a run failed: one failed-run record per task; mtr's JSON cannot: nothing
    assert sorted((e["format"], e["destination"]) for e in envelopes) == [("ping", "loop"), ("ping", "loop2")]
    for envelope in envelopes:
        assert envelope["meta"]["collector_error"] == "tool_missing"
        (record,) = parse_value(envelope)[1]
        assert not record.succeeded and "not found" in record.error


def test_a_timeout_interrupts_the_tool_and_names_the_task(tmp_path, iperf3_port):
    tests = [_test("slow", "throughput", "iperf3", duration=30, port=iperf3_port, timeout=1.5)]
    started = time.monotonic()
    done, envelopes = _collect(tmp_path, tests, "--once", timeout=30)
    assert time.monotonic() - started < 15
    assert done.returncode == 1
    assert "slow:here>loop" in done.stderr and "timed out after 1.5 s" in done.stderr
    (envelope,) = envelopes
    assert envelope["meta"]["collector_error"] == "timeout"
    (record,) = parse_value(envelope)[1]
    assert not record.succeeded and record.error  # iperf3's own "interrupt" error, or the collector's


def test_sigterm_stops_the_collector_without_publishing_half_runs(tmp_path):
    require_tool("ping")
    mesh = tmp_path / "mesh.yaml"
    tests = [_test("rtt", "latency", "ping", count=100, interval=0.2)]
    mesh.write_text(yaml.safe_dump({"hosts": HOSTS, "groups": GROUPS, "tests": tests}))
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "pathwatch.collector.collect_cli", "--mesh", str(mesh), "--host",
                             "here", "--out", str(out)], stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        time.sleep(2.0)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert "stopping: 1 running test interrupted" in stderr and "Traceback" not in stderr
    assert out.read_text() == ""
