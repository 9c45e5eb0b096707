"""pscheduler results: run envelopes, archiver input, bare results, every supported test type."""

from __future__ import annotations

import json

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect

from .conftest import FIXTURES, envelope, parse_one


def load(name: str) -> dict:
    return json.loads((FIXTURES / "pscheduler" / name).read_text())


def test_throughput_run_with_tool_object():
    raw = load("throughput_run_tool_object_stall.json")
    (rec,) = parse_one(raw)
    assert detect(raw).name == "pscheduler"
    assert (rec.kind, rec.tool, rec.tool_version) == ("throughput", "iperf3", "3.9")
    assert (rec.source, rec.destination) == ("ps-a.example.edu", "ps-b.example.edu")
    assert rec.time == "2024-05-01T14:00:05.250000Z"  # run.start-time wins over schedule.start
    assert rec.throughput_bps == 9023077.6 and rec.receiver_throughput_bps == 8565098.9
    assert rec.retransmits == 12 and rec.rtt_ms == 135.362
    assert (rec.mss_bytes, rec.mtu_bytes, rec.tcp_window_bytes) == (8948, 9000, 3095824)
    assert rec.ip_version == 4 and rec.protocol == "tcp"
    assert rec.duration_s == pytest.approx(2.000215)
    assert [i.throughput_bps for i in rec.intervals] == [18046155.287058, 0.0]
    assert rec.intervals[1].retransmits == 12


def test_reverse_throughput_swaps_endpoints_and_tool_may_be_a_string():
    (rec,) = parse_one(load("throughput_run_reverse_tool_string.json"))
    assert rec.tool == "iperf3" and rec.tool_version is None and rec.reverse
    assert (rec.source, rec.destination) == ("ps-b.example.edu", "ps-a.example.edu")


def test_failed_run_becomes_a_failed_record():
    (rec,) = parse_one(load("throughput_failed_no_route.json"))
    assert rec.succeeded is False and "No route to host" in rec.error
    assert rec.time == "2024-05-01T10:00:00Z" and rec.throughput_bps is None


def test_latencybg_archiver_input_statistics_from_the_histogram():
    (rec,) = parse_one(load("latencybg_archiver_input.json"))
    assert (rec.kind, rec.one_way, rec.tool, rec.tool_version) == ("latency", True, "powstream", "4.4.6")
    assert (rec.packets_sent, rec.packets_received, rec.packets_lost) == (600, 597, 3)
    assert rec.loss_ratio == 3 / 600 and rec.duplicates == 1 and rec.reordered == 0
    assert rec.max_clock_error_ms == 1.86
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_max_ms) == (21.1, 21.2, 24.0)
    assert rec.delay_p95_ms == 21.3  # 580 of 597 samples are <= 21.3 ms: 97 %
    assert rec.delay_mean_ms == pytest.approx((21.1 * 100 + 21.2 * 380 + 21.3 * 100 + 24.0 * 17) / 597)
    assert rec.jitter_ms == pytest.approx(0.1)
    assert (rec.ttl_min, rec.ttl_max) == (250, 250)
    assert rec.time == "2024-05-01T14:01:00Z"


def test_flipped_latency_swaps_endpoints():
    (rec,) = parse_one(load("latency_run_flip.json"))
    assert (rec.source, rec.destination) == ("ps-b.example.edu", "ps-a.example.edu")


def test_trace_with_unanswered_hop_mtu_and_as_path():
    (rec,) = parse_one(load("trace_run_paris_mtu_star.json"))
    assert [h.ip for h in rec.hops] == ["192.0.2.1", None, "203.0.113.9", "198.51.100.20"]
    assert rec.hops[0].hostname == "gw.example.edu." and rec.hops[0].rtt_ms == pytest.approx(0.4)
    assert rec.hops[0].asn == 64500 and rec.hops[0].as_owner == "EXAMPLE-EDU"
    assert rec.hops[2].mtu == 1500 and rec.pmtu_bytes == 1500
    assert rec.reached is True and rec.destination_ip == "198.51.100.20"
    assert rec.tool == "paris-traceroute" and rec.hop_count == 4
    assert rec.path_id != rec.as_path_id is not None


def test_bare_trace_result_takes_endpoints_and_time_from_defaults():
    raw = load("trace_run_paris_mtu_star.json")["result"]
    (rec,) = parse_one(raw, destination="198.51.100.20", collected_at="2024-05-01T14:03:20Z")
    assert detect(raw).name == "pscheduler"
    assert rec.time == "2024-05-01T14:03:20Z" and rec.reached is True and rec.source is None


def test_envelope_names_win_over_the_spec():
    (rec,) = parse_one(envelope("pscheduler", load("throughput_run_tool_object_stall.json"), source="a", destination="b"))
    assert (rec.source, rec.destination) == ("a", "b")


def test_other_test_types_are_rejected_with_the_type_named():
    raw = load("trace_run_paris_mtu_star.json")
    raw["test"]["type"] = "rtt"
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert caught.value.field == "test.type" and "'rtt'" in caught.value.reason


def test_simplestream_in_an_archiver_wrapper_is_rejected_naming_it():
    raw = {"data": {}, "result": {"test": {"type": "simplestream", "spec": {}}, "tool": "simplestreamer", "result": {"succeeded": True}}}
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert caught.value.field == "result.test.type" and "simplestream" in caught.value.reason


def test_task_without_result_is_rejected():
    with pytest.raises(ParseError) as caught:
        parse_one({"schema": 1, "test": {"type": "trace", "spec": {"dest": "x"}}})
    assert caught.value.field == "result"


@pytest.mark.parametrize(
    "name, mutate, field",
    [
        ("trace_run_paris_mtu_star.json", lambda d: d["result"]["paths"][0][0].update(rtt="soon"), "result.paths[0][0].rtt"),
        ("latencybg_archiver_input.json", lambda d: d["result"]["result"]["histogram-latency"].update({"x": 1}),
         "result.result.histogram-latency.x"),
        ("throughput_run_tool_object_stall.json", lambda d: d["result"]["summary"].pop("summary"), "result.summary.summary"),
        ("throughput_run_tool_object_stall.json", lambda d: d["run"].update({"start-time": "yesterday"}), "run.start-time"),
    ],
)
def test_malformed_results_name_the_field(name, mutate, field):
    raw = load(name)
    mutate(raw)
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert caught.value.field == field
