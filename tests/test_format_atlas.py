"""RIPE Atlas traceroute results: hop merging, errors, MTU, late replies, IPv6 and API arrays."""

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
    assert (rec.source, rec.source_ip) == ("192.168.0.20", "192.168.0.20")
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
    assert rec.source == "2001:db8:1::20"
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
