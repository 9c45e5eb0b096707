"""scamper JSON: real scamper 20211212 (``-O json``) and sc_warts2json outputs from the namespace
lab (tests/fixtures/CAPTURE.md, tests/fixtures/scamper/README.md) plus a hand-written trace in
the newer (2025) writer's shape: hostnames, ``no_hops`` and a ``pmtud`` block."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect
from tests.conftest import FIXTURES, envelope, fixture_text, parse_one, require_tool

NAMES = sorted(p.name for p in (FIXTURES / "scamper").glob("*.jsonl"))


def objects(name: str) -> list[dict]:
    return [json.loads(line) for line in fixture_text("scamper", name).splitlines() if line.strip()]


def traces(name: str, **kwargs) -> list:
    return [rec for value in objects(name) for rec in parse_one(envelope("scamper", value, **kwargs))]


def trace(name: str, **kwargs):
    [rec] = traces(name, **kwargs)
    return rec


def ips(rec) -> list:
    return [hop.ip for hop in rec.hops]


def first_trace(name: str) -> dict:
    return copy.deepcopy(next(value for value in objects(name) if value["type"] == "trace"))


def rejected(payload) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("scamper", payload))
    return caught.value


@pytest.mark.parametrize("name", NAMES)
def test_every_object_is_detected_as_scamper(name):
    assert {detect(value).name for value in objects(name)} == {"scamper"}


def test_cycle_records_yield_nothing():
    assert traces("scamper_no_route_cycle_records_only.jsonl") == []
    assert parse_one(envelope("scamper", {"type": "list", "id": 1, "name": "default", "monitor": "ps-a"})) == []


def test_udp_paris_trace_that_completed():
    rec = trace("scamper_udp_paris_completed.jsonl", source=None, destination=None)
    assert (rec.kind, rec.tool, rec.format, rec.protocol, rec.succeeded) == ("trace", "scamper", "scamper", "udp", True)
    assert (rec.source, rec.destination) == ("10.77.1.2", "10.77.6.2")
    assert (rec.source_ip, rec.destination_ip) == ("10.77.1.2", "10.77.6.2")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.4.2", "10.77.6.2"]
    assert [hop.rtt_ms for hop in rec.hops] == [0.04, 0.077, 0.08, 0.073]
    assert [hop.error for hop in rec.hops] == [None] * 4  # port unreachable from the destination is arrival
    assert (rec.reached, rec.ip_version, rec.pmtu_bytes) == (True, 4, None)
    assert rec.time == "2026-11-22T01:03:49.271727Z"  # start.sec + start.usec


def test_envelope_names_win():
    rec = trace("scamper_udp_paris_completed.jsonl")
    assert (rec.source, rec.destination, rec.source_ip) == ("src.example.net", "dst.example.net", "10.77.1.2")


def test_several_probes_per_ttl_are_merged_with_the_median_rtt():
    rec = trace("scamper_icmp_three_probes_per_hop.jsonl")
    assert (rec.protocol, rec.hop_count, rec.reached) == ("icmp", 4, True)
    assert [hop.rtt_ms for hop in rec.hops] == [0.053, 0.06, 0.078, 0.086]
    assert all(hop.other_ips == [] for hop in rec.hops)


def test_load_balanced_ttl_keeps_every_address():
    hop = trace("scamper_udp_ecmp_several_ips_per_ttl.jsonl").hops[1]
    assert (hop.ip, hop.other_ips) == ("10.77.3.2", ["10.77.2.2"])
    assert hop.rtt_ms == 0.068  # median of 10.77.3.2's seven answers only


def test_silent_ttl_is_a_hop_without_address():
    rec = trace("scamper_silent_hop.jsonl")
    assert ips(rec) == ["10.77.1.1", None, "10.77.4.2", "10.77.6.2"]
    assert rec.reached is True


def test_gaplimit_keeps_the_unanswered_ttls_it_probed():
    rec = trace("scamper_blackhole_gaplimit.jsonl")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", None, None, None]
    assert rec.reached is False


def test_trace_without_any_reply_has_no_hops_key():
    rec = trace("scamper6_udp_paris_no_replies_no_hops_key.jsonl")
    assert (ips(rec), rec.reached, rec.ip_version) == ([None, None], False, 6)


@pytest.mark.parametrize(
    ("name", "flag"), [("scamper_host_unreachable.jsonl", "!H"), ("scamper6_no_route_unreachable.jsonl", "!N")]
)
def test_unreachable_codes_become_traceroute_flags(name, flag):
    rec = trace(name)
    assert [hop.error for hop in rec.hops] == [None, None, flag]
    assert rec.reached is False and rec.hops[-1].ip in ("10.77.4.2", "fd77:4::2")


def test_frag_needed_gives_the_hop_mtu_and_the_path_mtu():
    rec = trace("scamper_frag_needed_nhmtu_1500.jsonl")  # real output spells the key "icmp_nhmtu:"
    # only r2a, hop 2, answered the 1628-byte probe at TTL 3 (too big for its next link): TTL 3 is silent
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", None]
    assert (rec.hops[2].mtu, rec.hops[2].error) == (1500, "!F-1500")
    assert (rec.pmtu_bytes, rec.reached) == (1500, False)


def test_wrapped_negative_rtt_is_dropped():
    rec = trace("scamper_pmtud_flag_not_in_json.jsonl")  # hop 1's rtt is 4294967.254 ms
    assert [hop.rtt_ms for hop in rec.hops] == [None, 0.039, 0.055, 0.052]


def test_tcp_and_ipv6_udp():
    tcp = trace("scamper_tcp_reset_completed.jsonl")
    assert (tcp.protocol, tcp.reached, tcp.hops[-1].error) == ("tcp", True, None)
    rec = trace("scamper6_udp_completed.jsonl")
    assert ips(rec) == ["fd77:1::1", "fd77:2::2", "fd77:4::2", "fd77:6::2"]
    assert (rec.ip_version, rec.reached, rec.hops[-1].error) == (6, True, None)  # ICMPv6 port unreachable


def test_warts_to_json_file_with_two_traces():
    complete, unreachable = traces("sc_warts2json_two_traces.jsonl")
    assert (complete.destination_ip, complete.reached) == ("10.77.6.2", True)
    assert (unreachable.destination_ip, unreachable.reached, unreachable.hops[-1].error) == ("10.77.66.1", False, "!H")
    assert complete.id != unreachable.id


def test_handwritten_newer_scamper_names_no_hops_and_pmtud():
    rec = trace("handwritten_scamper_2025_names_pmtud_no_hops.jsonl")
    assert ips(rec) == ["10.77.1.1", None, "10.77.4.2", "10.77.6.2"]
    assert [hop.hostname for hop in rec.hops] == ["r1.lab", None, "r3.lab", "h2.lab"]
    assert [hop.mtu for hop in rec.hops] == [None, None, 1500, None]  # pmtud note at dist 3
    assert (rec.pmtu_bytes, rec.protocol, rec.reached) == (1500, "icmp", True)


def test_error_stop_is_a_failed_run():
    value = first_trace("scamper_udp_paris_completed.jsonl")
    value["stop_reason"], value["stop_data"] = "ERROR", 1
    [rec] = parse_one(envelope("scamper", value))
    assert (rec.succeeded, rec.reached) == (False, False) and "ERROR" in rec.error


def test_other_scamper_objects_are_rejected_naming_the_type():
    ping = {"type": "ping", "version": "0.4", "userid": 0, "method": "icmp-echo", "src": "10.0.0.1", "dst": "10.0.0.2"}
    assert detect(ping).name == "scamper"
    error = rejected(ping)
    assert error.field == "type" and "'ping'" in error.reason
    assert "'tracelb'" in rejected({**ping, "type": "tracelb"}).reason


def _mutated(change) -> dict:
    value = first_trace("scamper_udp_paris_completed.jsonl")
    change(value)
    return value


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda v: v.pop("dst"), "dst"),
        (lambda v: v.pop("start"), "start"),
        (lambda v: v["start"].update(sec="soon"), "start.sec"),
        (lambda v: v["start"].update(sec=2**40), "start.sec"),
        (lambda v: v.update(hops={}), "hops"),
        (lambda v: v["hops"].__setitem__(0, 7), "hops[0]"),
        (lambda v: v["hops"][1].pop("addr"), "hops[1].addr"),
        (lambda v: v["hops"][1].update(addr="router"), "hops[1].addr"),
        (lambda v: v["hops"][1].update(probe_ttl=0), "hops[1].probe_ttl"),
        (lambda v: v["hops"][1].update(probe_ttl=300), "hops[1].probe_ttl"),
        (lambda v: v["hops"][1].update(rtt=-1), "hops[1].rtt"),
        (lambda v: v["hops"][1].pop("icmp_code"), "hops[1].icmp_code"),
        (lambda v: v.update(hop_count=100000), "hop_count"),
        (lambda v: v.pop("stop_reason"), "stop_reason"),
        (lambda v: v.update(type=3), "type"),
    ],
)
def test_malformed_traces_are_parse_errors_naming_the_field(change, field):
    assert rejected(_mutated(change)).field == field


@pytest.mark.tools
def test_real_scamper_on_loopback():
    tool = require_tool("scamper")
    command = [tool, "-O", "json", "-c", "trace -w 1", "-i", "127.0.0.1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=15)
    assert done.returncode == 0, done.stderr
    values = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert {detect(value).name for value in values} == {"scamper"}
    [rec] = [rec for value in values for rec in parse_one(envelope("scamper", value))]
    assert ([hop.ip for hop in rec.hops], rec.reached, rec.destination_ip) == (["127.0.0.1"], True, "127.0.0.1")
