"""RIPE Atlas results: traceroute (hop merging, errors, MTU, late replies, IPv6, API arrays) and ping
(replies, duplicates, lost and unsent packets, early firmware), each named by its probe."""

from __future__ import annotations

import json

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.reader import read_items
from pathwatch.ingest.registry import detect

from .conftest import FIXTURES, parse_one


def load(name: str):
    return json.loads((FIXTURES / "atlas" / name).read_text())


def test_reached_trace_with_ecmp_hop_mtu_and_late_reply():
    raw = load("atlas_icmp_reached_mtu_late_ecmp.json")
    (rec,) = parse_one(raw)
    assert detect(raw).name == "atlas"
    assert (rec.source, rec.source_ip) == ("atlas-probe-6001", "192.168.0.20")  # the probe names the source
    assert (rec.destination, rec.destination_ip) == ("www.example.org", "198.51.100.7")
    assert rec.time == "2023-11-14T22:13:20Z" and rec.ip_version == 4 and rec.protocol == "icmp"
    assert (rec.probe_id, rec.measurement_id, rec.tool, rec.tool_version) == (6001, 5001, "ripe-atlas", "5080")
    assert [h.ip for h in rec.hops] == ["192.168.0.1", "203.0.113.1", None, "192.0.2.77", "198.51.100.7"]
    assert rec.hops[0].rtt_ms == 0.8  # median of 0.9, 0.7, 0.8
    assert rec.hops[1].other_ips == ["203.0.113.2"]
    assert rec.hops[3].mtu == 1480 and rec.hops[3].error == "!F" and rec.hops[3].rtt_ms == 12.0
    assert rec.pmtu_bytes == 1480 and rec.reached is True and rec.hop_count == 5


def test_ipv6_unreachable_with_hop_error_and_gave_up_marker():
    (rec,) = parse_one(load("atlas_v6_unreachable_hop_error_255.json"))
    assert rec.ip_version == 6 and rec.reached is False
    assert rec.destination == "2001:db8:77::1"  # dst_name is an address: the canonical dst_addr names the path
    assert (rec.source, rec.source_ip) == (f"atlas-probe-{rec.probe_id}", "2001:db8:1::20")
    assert rec.hops[0].error == "!N"
    assert rec.hops[1].ip is None and rec.hops[1].error == "sendto failed: Network is unreachable"
    assert rec.hops[2].ttl == 255 and rec.hops[2].ip is None


def test_api_array_yields_one_item_per_result():
    data = (FIXTURES / "atlas" / "atlas_api_array.json").read_bytes()
    items = list(read_items(data))
    assert [i.location for i in items] == ["item 1", "item 2"]
    assert [parse_one(i.value)[0].probe_id for i in items] == [6001, 6002]


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.pop("result"), "result"),
        (lambda d: d["result"][0].update(hop="one"), "result[0].hop"),
        (lambda d: d["result"][1]["result"][0].update(rtt=-1), "result[1].result[0].rtt"),
        (lambda d: d["result"][0]["result"][0].update({"from": 7}), "result[0].result[0].from"),
        (lambda d: d.update(timestamp=None), "timestamp"),
    ],
)
def test_malformed_results_name_the_field(mutate, field):
    raw = load("atlas_icmp_reached_mtu_late_ecmp.json")
    mutate(raw)
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert caught.value.field == field


PING = {"af": 4, "avg": 31.0, "dst_addr": "193.0.14.129", "dst_name": "k.root-servers.net", "dup": 1,
        "from": "198.51.100.20", "fw": 5080, "lts": 12, "max": 40.0, "min": 22.0, "msm_id": 1001, "prb_id": 6001,
        "proto": "ICMP", "rcvd": 3, "result": [{"rtt": 22.0, "ttl": 55}, {"x": "*"}, {"rtt": 40.0, "ttl": 57},
                                                 {"dup": 1, "rtt": 90.0, "ttl": 57}, {"rtt": 31.0, "ttl": 56}],
        "sent": 4, "size": 48, "src_addr": "192.168.1.5", "step": 240, "timestamp": 1700000000, "ttl": 55,
        "type": "ping"}


def ping(**changes) -> dict:
    raw = json.loads(json.dumps(PING))
    raw.update(changes)
    return raw


def test_ping_is_one_round_trip_latency_record_named_by_its_probe():
    raw = ping()
    assert detect(raw).name == "atlas"
    (rec,) = parse_one(raw)
    assert (rec.kind, rec.one_way, rec.tool, rec.tool_version) == ("latency", False, "ripe-atlas", "5080")
    assert (rec.source, rec.source_ip) == ("atlas-probe-6001", "192.168.1.5")
    assert (rec.destination, rec.destination_ip, rec.ip_version) == ("k.root-servers.net", "193.0.14.129", 4)
    assert (rec.packets_sent, rec.packets_received, rec.packets_lost, rec.loss_ratio) == (4, 3, 1, 0.25)
    assert rec.duplicates == 1 and (rec.ttl_min, rec.ttl_max) == (55, 57)
    # the three replies, not the duplicate: Atlas's own min/avg/max
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_mean_ms, rec.delay_max_ms) == (22.0, 31.0, 31.0, 40.0)
    assert rec.time == "2023-11-14T22:13:20Z" and rec.succeeded


def test_a_probe_behind_nat_is_one_source_whatever_its_address():
    first, second = (parse_one(ping(src_addr=address, timestamp=1700000000 + i * 240))[0]
                     for i, address in enumerate(("192.168.1.5", "10.0.0.9")))
    assert first.source == second.source == "atlas-probe-6001" and first.source_ip != second.source_ip
    (named,) = parse_one({"format": "atlas", "source": "probe-a", "payload": ping()})
    assert named.source == "probe-a"  # an envelope's name wins


def test_ping_with_every_packet_lost_is_full_loss_and_every_packet_unsent_a_failed_run():
    (lost,) = parse_one(ping(rcvd=0, dup=0, result=[{"x": "*"}] * 4, min=-1, avg=-1, max=-1))
    assert lost.succeeded and lost.loss_ratio == 1.0 and lost.delay_min_ms is None
    (failed,) = parse_one(ping(rcvd=0, dup=0, result=[{"error": "sendto: Network is unreachable"}] * 4))
    assert not failed.succeeded and failed.error == "sendto: Network is unreachable"


def test_early_firmware_summary_and_numbers_as_strings():
    (summary,) = parse_one({k: v for k, v in PING.items() if k != "result"})
    assert (summary.delay_min_ms, summary.delay_mean_ms, summary.delay_max_ms, summary.delay_median_ms) == (22.0, 31.0, 40.0, None)
    raw = {"avg": "58.042", "dst_addr": "62.2.16.12", "dup": "0", "fw": 0, "max": "58.272", "min": "57.876",
           "msm_id": 1000192, "prb_id": 677, "rcvd": "3", "sent": "3", "src_addr": "78.128.9.202",
           "timestamp": 1328019792, "type": "ping"}
    (old,) = parse_one(raw)
    assert (old.packets_sent, old.packets_received, old.delay_mean_ms) == (3, 3, 58.042)
    assert (old.destination, old.ip_version) == ("62.2.16.12", 4)


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"prb_id": None}, "prb_id"),
        ({"sent": None}, "sent"),
        ({"rcvd": "three"}, "rcvd"),
        ({"rcvd": 5}, "rcvd"),
        ({"timestamp": None}, "timestamp"),
        ({"result": [{"rtt": -3}]}, "result[0].rtt"),
        ({"result": [{"rtt": 1.0}, {"what": 1}]}, "result[1]"),
        ({"result": [{"rtt": 1.0}] * 4}, "result"),
        ({"avg": "fast"}, "avg"),
    ],
)
def test_malformed_ping_results_name_the_field(changes, field):
    raw = ping(**changes)
    if "result" not in changes and "avg" in changes:
        raw.pop("result")
    raw = {k: v for k, v in raw.items() if v is not None}
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert caught.value.field == field


def test_a_result_of_another_type_is_rejected_naming_the_type():
    with pytest.raises(ParseError) as caught:
        parse_one({"format": "atlas", "payload": {"type": "dns", "prb_id": 1, "timestamp": 1700000000}})
    assert caught.value.field == "type" and "'dns'" in caught.value.reason
