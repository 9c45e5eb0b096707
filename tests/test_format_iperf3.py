"""iperf3 -J: real outputs of iperf 3.12 on loopback, plus a stall edge case and a live run."""

from __future__ import annotations

import json
import subprocess

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect

from .conftest import FIXTURES, envelope, iperf3_server, parse_one, require_tool


def load(name: str) -> dict:
    return json.loads((FIXTURES / "iperf3" / name).read_text())


def test_tcp_single_stream_values_equal_the_source():
    raw = load("iperf3.12_tcp_single_loopback.json")
    (rec,) = parse_one(raw)
    assert detect(raw).name == "iperf3"
    assert rec.kind == "throughput" and rec.protocol == "tcp" and rec.streams == 1 and not rec.reverse
    assert rec.time == "2026-11-22T00:46:18Z"
    assert rec.source == rec.source_ip == "127.0.0.1" and rec.destination == "127.0.0.1"
    assert rec.throughput_bps == raw["end"]["sum_sent"]["bits_per_second"]
    assert rec.receiver_throughput_bps == raw["end"]["sum_received"]["bits_per_second"]
    assert rec.retransmits == 0
    assert rec.rtt_ms == raw["end"]["streams"][0]["sender"]["mean_rtt"] / 1000
    assert rec.mss_bytes == 32768 and rec.mtu_bytes == 65535
    assert rec.congestion_control == "bbr" and rec.tool_version == "3.12"
    assert len(rec.intervals) == len(raw["intervals"])
    first = raw["intervals"][0]
    assert rec.intervals[0].throughput_bps == first["sum"]["bits_per_second"]
    assert rec.intervals[0].cwnd_bytes == first["streams"][0]["snd_cwnd"]
    assert rec.intervals[0].rtt_ms == first["streams"][0]["rtt"] / 1000


def test_pscheduler_fixture_rtt_is_microseconds():
    """iperf 3.1.3's rtt fields are microseconds: mean_rtt 10175 is 10.175 ms."""
    raw = load("iperf3.12_tcp_single_loopback.json")
    raw["end"]["streams"][0]["sender"].update(mean_rtt=10175, min_rtt=1875, max_rtt=67000)
    (rec,) = parse_one(raw)
    assert (rec.rtt_ms, rec.rtt_min_ms, rec.rtt_max_ms) == (10.175, 1.875, 67.0)


def test_udp_takes_loss_and_jitter_from_the_receiver_summary():
    raw = load("iperf3.12_udp_10M_loopback.json")
    (rec,) = parse_one(raw)
    assert rec.protocol == "udp"
    assert rec.throughput_bps == raw["end"]["sum_sent"]["bits_per_second"]
    assert rec.receiver_throughput_bps == raw["end"]["sum_received"]["bits_per_second"]
    assert rec.jitter_ms == raw["end"]["sum"]["jitter_ms"]
    assert (rec.sent_packets, rec.lost_packets) == (39, 0)
    assert rec.retransmits is None


def test_reverse_run_makes_the_server_the_source():
    raw = load("iperf3.12_tcp_reverse_2streams_loopback.json")
    (rec,) = parse_one(envelope("iperf3", raw, source="client.example", destination="server.example"))
    assert rec.reverse and rec.streams == 2
    assert (rec.source, rec.destination) == ("server.example", "client.example")
    # the remote sender reports mean_rtt 0 ("not measured"): no RTT rather than a false 0 ms
    assert rec.rtt_ms is None
    assert rec.throughput_bps == raw["end"]["sum_sent"]["bits_per_second"]


def test_failed_run_is_a_record_not_an_error():
    raw = load("iperf3.12_error_connection_refused.json")
    (rec,) = parse_one(envelope("iperf3", raw))
    assert rec.succeeded is False
    assert rec.error == "unable to connect to server: Connection refused"
    assert rec.throughput_bps is None and rec.intervals == []
    assert rec.time == "2024-03-01T12:00:00Z"  # no timestamp in the output: the envelope's collected_at


def test_failed_run_without_any_time_is_rejected_naming_time():
    with pytest.raises(ParseError) as caught:
        parse_one(load("iperf3.12_error_connection_refused.json"))
    assert caught.value.field == "time"


def test_zero_throughput_intervals_are_kept():
    (rec,) = parse_one(load("iperf3.12_tcp_zero_interval_stall.json"))
    assert rec.intervals[0].throughput_bps == 0.0
    assert rec.intervals[0].retransmits == 3 and rec.intervals[0].cwnd_bytes == 8948
    assert rec.mtu_bytes == 1500


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["end"].pop("sum_sent"), "end.sum_sent"),
        (lambda d: d["end"]["sum_sent"].update(bits_per_second="fast"), "end.sum_sent.bits_per_second"),
        (lambda d: d["intervals"][0].pop("sum"), "intervals[0].sum"),
        (lambda d: d.update(end={}), "end"),
        (lambda d: d["start"]["test_start"].update(protocol="SCTP"), "start.test_start.protocol"),
        (lambda d: d["start"]["timestamp"].update(timesecs=-5), "start.timestamp.timesecs"),
    ],
)
def test_malformed_output_names_the_field(mutate, field):
    raw = load("iperf3.12_tcp_single_loopback.json")
    mutate(raw)
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert caught.value.field == field


def test_same_run_parsed_twice_has_the_same_id_and_a_different_run_does_not():
    first = parse_one(load("iperf3.12_tcp_single_loopback.json"))[0]
    again = parse_one(load("iperf3.12_tcp_single_loopback.json"))[0]
    other = parse_one(load("iperf3.12_udp_10M_loopback.json"))[0]
    assert first.id == again.id != other.id


@pytest.mark.tools
@pytest.mark.parametrize("extra", [[], ["-R", "-P", "2"], ["-u", "-b", "20M"]], ids=["tcp", "reverse-parallel", "udp"])
def test_live_iperf3_on_loopback(extra):
    iperf3 = require_tool("iperf3")
    with iperf3_server() as port:
        out = subprocess.run(
            [iperf3, "-c", "127.0.0.1", "-p", str(port), "-t", "1", "-J", *extra], capture_output=True, text=True, timeout=30
        )
    (rec,) = parse_one(envelope("iperf3", json.loads(out.stdout), source="client", destination="server"))
    assert rec.succeeded, rec.error
    assert rec.throughput_bps > 0 and len(rec.intervals) >= 1
    assert rec.protocol == ("udp" if "-u" in extra else "tcp")
    assert rec.source == ("server" if "-R" in extra else "client")
