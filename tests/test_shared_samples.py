"""Real tool outputs from public repositories (../shared/samples, not part of this repository).

CI clones the project with shared/ beside it; elsewhere set PATHWATCH_SAMPLES to the folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pathwatch.contract.timefmt import from_epoch
from pathwatch.ingest.errors import ParseError

from .conftest import parse_one
from .test_cli import run

SAMPLES = Path(os.environ.get("PATHWATCH_SAMPLES", Path(__file__).resolve().parents[2] / "shared" / "samples"))


@pytest.fixture(scope="module")
def samples() -> Path:
    if not SAMPLES.is_dir():
        pytest.fail(f"real samples not found at {SAMPLES}; set PATHWATCH_SAMPLES")
    return SAMPLES


def _iperf3_files(samples):
    return sorted((samples / "iperf3").glob("*.json"))


def test_iperf3_samples_values_equal_the_source(samples):
    files = _iperf3_files(samples)
    assert len(files) == 4
    for path in files:
        raw = json.loads(path.read_text())
        (rec,) = parse_one(raw)
        end = raw["end"]
        assert rec.time == from_epoch(raw["start"]["timestamp"]["timesecs"])
        assert rec.source == raw["start"]["connected"][0]["local_host"]
        assert rec.destination == raw["start"]["connecting_to"]["host"]
        assert rec.protocol == raw["start"]["test_start"]["protocol"].lower()
        assert len(rec.intervals) == len(raw["intervals"])
        assert [i.throughput_bps for i in rec.intervals] == [i["sum"]["bits_per_second"] for i in raw["intervals"]]
        if rec.protocol == "tcp":
            sender = end["streams"][0]["sender"]
            assert rec.throughput_bps == end["sum_sent"]["bits_per_second"]
            assert rec.receiver_throughput_bps == end["sum_received"]["bits_per_second"]
            assert rec.retransmits == end["sum_sent"]["retransmits"]
            assert rec.rtt_ms == pytest.approx(sender["mean_rtt"] / 1000)
            assert rec.rtt_min_ms == pytest.approx(sender["min_rtt"] / 1000)
            assert rec.tcp_window_bytes == sender["max_snd_cwnd"]
            assert rec.mss_bytes == raw["start"]["tcp_mss_default"]
            assert [i.rtt_ms for i in rec.intervals] == pytest.approx(
                [i["streams"][0]["rtt"] / 1000 for i in raw["intervals"]]
            )
        else:
            assert rec.throughput_bps == end["sum"]["bits_per_second"]
            assert rec.jitter_ms == end["sum"]["jitter_ms"]
            assert (rec.lost_packets, rec.sent_packets) == (end["sum"]["lost_packets"], end["sum"]["packets"])


def test_pscheduler_trace_result_hops_equal_the_source(samples):
    raw = json.loads((samples / "pscheduler" / "trace-result.json").read_text())
    (rec,) = parse_one(raw, collected_at="2024-01-01T00:00:00Z")
    path = raw["paths"][0]
    assert [h.ip for h in rec.hops] == [h.get("ip") for h in path]
    assert [h.hostname for h in rec.hops] == [h.get("hostname") for h in path]
    assert [h.asn for h in rec.hops] == [h.get("as", {}).get("number") for h in path]
    assert rec.hops[1].rtt_ms == pytest.approx(1.5)  # "PT0.0015S"
    assert rec.hop_count == len(path)


def test_archiver_input_simplestream_is_rejected_naming_it(samples):
    raw = json.loads((samples / "pscheduler" / "archiver-input.json").read_text())
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert "simplestream" in str(caught.value)


def test_atlas_samples_parse_and_paths_change_over_time(samples):
    lines = (samples / "ripe_atlas" / "sagan_test_traceroutes.jsonl").read_text().splitlines()
    path_ids: dict[int, set[str]] = {}
    for line in lines:
        raw = json.loads(line)
        (rec,) = parse_one(raw)
        assert rec.time == from_epoch(raw["timestamp"]) and rec.probe_id == raw["prb_id"]
        assert [h.ttl for h in rec.hops] == [h["hop"] for h in raw["result"]]
        for hop, source_hop in zip(rec.hops, raw["result"]):
            answered = [r["from"] for r in source_hop.get("result", []) if "from" in r]
            assert hop.ip == (answered[0] if answered else None)
        path_ids.setdefault(rec.probe_id, set()).add(rec.path_id)
    assert len(path_ids[426]) > 1 and len(path_ids[319]) > 1


def test_cli_over_every_sample(samples):
    files = sorted(str(p) for p in samples.rglob("*.json*") if "nab" not in p.parts)
    done = run("parse", "--keep-going", *files)
    assert done.returncode == 2
    errors = done.stderr.decode().splitlines()
    assert len(errors) == 2, errors  # the simplestream archiver input and the task without a result
    assert any("archiver-input.json" in e and "simplestream" in e for e in errors)
    assert any("trace-task.json" in e for e in errors)
    assert len(done.stdout.splitlines()) == 4 + 1 + 19
