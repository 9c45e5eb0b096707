"""mtr --json: real mtr 0.95 reports captured in a namespace lab (tests/fixtures/CAPTURE.md,
tests/fixtures/mtr/README.md) plus a hand-written mtr 0.92 report (counts and tests as strings)."""

from __future__ import annotations

import copy
import json
import os
import subprocess

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect
from tests.conftest import FIXTURES, envelope, fixture_text, parse_one, require_tool

NAMES = sorted(p.name for p in (FIXTURES / "mtr").glob("*.json"))
COLLECTED = "2024-03-01T12:00:00Z"


def load(name: str) -> dict:
    return json.loads(fixture_text("mtr", name))


def trace(name: str, **kwargs):
    [rec] = parse_one(envelope("mtr", load(name), **kwargs))
    return rec


def ips(rec) -> list:
    return [hop.ip for hop in rec.hops]


def rejected(payload) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("mtr", payload))
    return caught.value


@pytest.mark.parametrize("name", NAMES)
def test_detected_as_mtr(name):
    assert detect(load(name)).name == "mtr"


def test_numeric_report_that_reached_the_destination():
    rec = trace("mtr_n_reached.json", source=None, destination=None)
    assert (rec.kind, rec.tool, rec.format, rec.succeeded) == ("trace", "mtr", "mtr", True)
    assert (rec.source, rec.destination, rec.destination_ip) == ("vm", "10.77.6.2", "10.77.6.2")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.4.2", "10.77.6.2"]
    assert [hop.ttl for hop in rec.hops] == [1, 2, 3, 4]
    assert rec.hops[2].rtt_ms == 0.085  # Avg
    assert (rec.reached, rec.ip_version, rec.time, rec.protocol) == (True, 4, COLLECTED, None)


def test_envelope_names_win():
    rec = trace("mtr_n_reached.json")
    assert (rec.source, rec.destination, rec.destination_ip) == ("src.example.net", "dst.example.net", "10.77.6.2")


def test_unanswered_hop_is_a_hop_without_address_or_rtt():
    rec = trace("mtr_silent_hop.json")
    assert ips(rec) == ["10.77.1.1", None, "10.77.4.2", "10.77.6.2"]
    assert rec.hops[1].rtt_ms is None and rec.reached is True


def test_unreachable_destinations():
    blackhole, unreachable = trace("mtr_unreachable.json"), trace("mtr_host_unreachable.json")
    assert ips(blackhole) == ["10.77.1.1", "10.77.2.2", None]
    assert ips(unreachable) == ["10.77.1.1", "10.77.2.2", "10.77.4.2"]
    assert blackhole.reached is False and unreachable.reached is False
    assert unreachable.destination_ip == "10.77.66.1"


def test_names_only_report_uses_the_names():
    rec = trace("mtr_names_reached.json", destination=None)
    assert ips(rec) == ["r1.lab", "r2a.lab", "r3.lab", "h2.lab"]
    assert [hop.hostname for hop in rec.hops] == ips(rec)
    assert (rec.destination, rec.destination_ip, rec.reached, rec.ip_version) == ("h2.lab", None, True, None)


def test_names_and_addresses_resolve_the_destination_address():
    rec = trace("mtr_names_and_ips.json", destination=None)
    assert ips(rec) == ["fd77:1::1", "fd77:2::2", "fd77:4::2", "fd77:6::2"]
    assert [hop.hostname for hop in rec.hops] == ["r1.lab", "r2a.lab", "r3.lab", "h2.lab"]
    assert (rec.destination, rec.destination_ip, rec.reached, rec.ip_version) == ("h2.lab", "fd77:6::2", True, 6)


def test_failed_asn_lookups_give_no_asn():
    rec = trace("mtr_asn_unresolved.json")  # "ASN": "AS???"
    assert [hop.asn for hop in rec.hops] == [None] * 4 and rec.as_path_id is None


def test_ipv6():
    rec = trace("mtr6_reached.json")
    assert ips(rec) == ["fd77:1::1", "fd77:2::2", "fd77:4::2", "fd77:6::2"]
    assert (rec.ip_version, rec.reached) == (6, True)


def test_one_host_per_hop_even_when_load_balanced():
    rec = trace("mtr_udp_ecmp_one_host_per_hop.json")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.4.2", "10.77.6.2"]  # one of r2a/r2b
    assert all(hop.other_ips == [] for hop in rec.hops)


def test_handwritten_mtr_092_strings_and_asns():
    rec = trace("handwritten_mtr_0.92_string_counts_asn.json", source=None)
    assert ips(rec) == ["10.77.1.1", None, "10.77.4.2", "10.77.6.2"]
    assert [hop.ttl for hop in rec.hops] == [1, 2, 3, 4]
    assert [hop.asn for hop in rec.hops] == [64501, None, 64503, 64503]
    assert [hop.rtt_ms for hop in rec.hops] == [0.09, None, 0.12, 0.11]
    assert (rec.source, rec.reached, rec.as_path_id is not None) == ("ps-a.example.edu", True, True)


def test_hubs_sharing_a_count_are_merged():
    report = load("mtr_n_reached.json")
    extra = {**report["report"]["hubs"][1], "host": "10.77.3.2", "Avg": 9.9}
    report["report"]["hubs"].insert(2, extra)
    rec = parse_one(envelope("mtr", report))[0]
    assert (rec.hops[1].ip, rec.hops[1].other_ips, rec.hops[1].rtt_ms) == ("10.77.2.2", ["10.77.3.2"], 0.082)


def test_destination_name_with_addresses_cannot_tell_reached():
    report = load("mtr_n_reached.json")
    report["report"]["mtr"]["dst"] = "h2.example.net"
    assert parse_one(envelope("mtr", report, destination=None))[0].reached is None


def _mutated(path: tuple, value) -> dict:
    report = copy.deepcopy(load("mtr_n_reached.json"))
    target = report
    for step in path[:-1]:
        target = target[step]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return report


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("report",), KeyError, "report"),
        (("report", "mtr"), KeyError, "report.mtr"),
        (("report", "mtr", "dst"), 5, "report.mtr.dst"),
        (("report", "hubs"), {}, "report.hubs"),
        (("report", "hubs"), [], "report.hubs"),
        (("report", "hubs", 0), "x", "report.hubs[0]"),
        (("report", "hubs", 1, "count"), "two", "report.hubs[1].count"),
        (("report", "hubs", 1, "count"), 0, "report.hubs[1].count"),
        (("report", "hubs", 1, "host"), None, "report.hubs[1].host"),
        (("report", "hubs", 1, "host"), "r (not-an-ip)", "report.hubs[1].host"),
        (("report", "hubs", 2, "Avg"), "fast", "report.hubs[2].Avg"),
        (("report", "hubs", 2, "Avg"), -1, "report.hubs[2].Avg"),
    ],
)
def test_malformed_reports_are_parse_errors_naming_the_field(path, value, field):
    assert rejected(_mutated(path, value)).field == field


def test_a_report_without_mtr_header_is_not_claimed():
    with pytest.raises(ParseError):
        detect({"report": {"hubs": []}})


@pytest.mark.tools
def test_real_mtr_on_loopback():
    tool = require_tool("mtr")
    quick = ["-i", "0.1"] if os.geteuid() == 0 else []  # shorter intervals are for root only
    command = [tool, "--json", "-n", "-c", "1", "-G", "0.2", *quick, "127.0.0.1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=15)
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert detect(payload).name == "mtr"
    [rec] = parse_one(envelope("mtr", payload))
    assert ([hop.ip for hop in rec.hops], rec.reached, rec.destination_ip) == (["127.0.0.1"], True, "127.0.0.1")
