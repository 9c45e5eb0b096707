"""traceroute text: real traceroute 2.1.2 outputs captured in a namespace lab (tests/fixtures/CAPTURE.md,
tests/fixtures/traceroute/README.md) plus hand-written flag, AS and BSD traceroute6 cases."""

from __future__ import annotations

import subprocess

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect
from tests.conftest import FIXTURES, envelope, fixture_text, parse_one, require_tool

NAMES = sorted(p.name for p in (FIXTURES / "traceroute").glob("*.txt"))
COLLECTED = "2024-03-01T12:00:00Z"


def trace(name: str, **kwargs):
    [rec] = parse_one(envelope("traceroute", fixture_text("traceroute", name), **kwargs))
    return rec


def text_trace(text: str):
    [rec] = parse_one(envelope("traceroute", text))
    return rec


def ips(rec) -> list:
    return [hop.ip for hop in rec.hops]


def rejected(text: str) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("traceroute", text))
    return caught.value


@pytest.mark.parametrize("name", NAMES)
def test_detected_as_traceroute(name):
    assert detect(fixture_text("traceroute", name)).name == "traceroute"


def test_numeric_run_that_reached_the_destination():
    rec = trace("traceroute_n_reached.txt")
    assert (rec.kind, rec.tool, rec.format, rec.succeeded) == ("trace", "traceroute", "traceroute", True)
    assert (rec.source, rec.destination) == ("src.example.net", "dst.example.net")  # the envelope wins
    assert (rec.source_ip, rec.destination_ip, rec.ip_version) == (None, "10.77.6.2", 4)
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.4.2", "10.77.6.2"]
    assert [hop.ttl for hop in rec.hops] == [1, 2, 3, 4] and rec.hop_count == 4
    assert rec.hops[0].rtt_ms == 0.007  # median of 0.086 0.007 0.005
    assert rec.reached is True and rec.protocol is None and rec.pmtu_bytes is None
    assert rec.time == COLLECTED  # traceroute prints no time


def test_bare_payload_takes_the_destination_from_the_header():
    [rec] = parse_one(fixture_text("traceroute", "traceroute_names_reached.txt"), collected_at=COLLECTED)
    assert (rec.source, rec.destination, rec.destination_ip) == (None, "h2.lab", "10.77.6.2")


def test_names_give_hostnames_and_the_same_path_as_numeric_output():
    named, numeric = trace("traceroute_names_reached.txt"), trace("traceroute_n_reached.txt")
    assert [hop.hostname for hop in named.hops] == ["r1.lab", "r2a.lab", "r3.lab", "h2.lab"]
    assert ips(named) == ips(numeric) and named.path_id == numeric.path_id
    assert all(hop.hostname is None for hop in numeric.hops)


def test_silent_router_is_a_hop_without_address():
    rec = trace("traceroute_star_hops.txt")
    assert ips(rec) == ["10.77.1.1", None, "10.77.4.2", "10.77.6.2"]
    assert rec.hops[1].rtt_ms is None and rec.reached is True


def test_blackholed_destination_is_never_reached():
    rec = trace("traceroute_blackhole_never_reached.txt")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", None, None, None, None]
    assert rec.hops[0].rtt_ms == pytest.approx(0.0315)  # median of the two probes 0.058 0.005
    assert (rec.reached, rec.destination_ip) == (False, "10.77.99.1")


@pytest.mark.parametrize(
    ("name", "flag"),
    [
        ("traceroute_host_unreachable_H.txt", "!H"),
        ("traceroute_prohibited_X.txt", "!X"),
        ("traceroute6_no_route_N.txt", "!N"),
    ],
)
def test_unreachable_flags_become_the_hop_error(name, flag):
    rec = trace(name)
    assert [hop.error for hop in rec.hops] == [None, None, flag]
    assert rec.hops[-1].ip in ("10.77.4.2", "fd77:4::2") and rec.reached is False


def test_load_balanced_hop_keeps_every_address_in_order_of_answer():
    rec = trace("traceroute_ecmp_several_ips_per_hop.txt")
    hop = rec.hops[1]
    assert (hop.ip, hop.other_ips) == ("10.77.2.2", ["10.77.3.2"])
    assert hop.rtt_ms == 0.0045  # median of 10.77.2.2's 0.010 0.004 0.005 0.004, not 10.77.3.2's
    assert all(h.other_ips == [] for h in rec.hops if h.ttl != 2)


def test_load_balanced_hop_with_names():
    hop = trace("traceroute_ecmp_names_several_ips_per_hop.txt").hops[1]
    assert (hop.ip, hop.hostname, hop.other_ips) == ("10.77.3.2", "r2b.lab", ["10.77.2.2"])
    assert hop.rtt_ms == 0.004  # r2b's five answers 0.009 0.003 0.004 0.004 0.004


def test_as_lookups_give_asns_and_an_as_path():
    rec = trace("traceroute_asn_lookups.txt")
    assert [hop.asn for hop in rec.hops] == [64501, 64502, 64503, 64503]
    assert rec.as_path_id is not None
    named = trace("traceroute_names_asn_lookups.txt")
    assert [(h.hostname, h.asn) for h in named.hops][:2] == [("r1.lab", 64501), ("r2a.lab", 64502)]
    assert named.as_path_id == rec.as_path_id


def test_failed_as_lookup_gives_no_asn():
    rec = trace("traceroute_asn_lookup_failed.txt")  # [!!]
    assert [hop.asn for hop in rec.hops] == [None] * 4 and rec.as_path_id is None
    assert rec.hops[0].rtt_ms == 0.047  # -q 1


def test_mtu_option_marks_where_the_mtu_changes():
    rec = trace("traceroute_mtu_F_1500.txt")
    assert [hop.mtu for hop in rec.hops] == [9000, None, 1500, None]


def test_back_hops_are_read_and_dropped():
    rec = trace("traceroute_back_asymm.txt")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.5.2", "10.77.6.2"]
    assert rec.hops[2].rtt_ms == 0.118


@pytest.mark.parametrize("name", ["traceroute6_n_reached.txt", "traceroute6_names_reached.txt"])
def test_ipv6(name):
    rec = trace(name)
    assert ips(rec) == ["fd77:1::1", "fd77:2::2", "fd77:4::2", "fd77:6::2"]
    assert (rec.ip_version, rec.destination_ip, rec.reached) == (6, "fd77:6::2", True)


def test_ipv6_silent_hop():
    assert ips(trace("traceroute6_star_hops.txt")) == ["fd77:1::1", None, "fd77:4::2", "fd77:6::2"]


def test_icmp_probes_look_the_same_and_give_no_protocol():
    rec = trace("traceroute_icmp_reached.txt")
    assert rec.reached is True and rec.protocol is None


def test_no_route_at_the_source_is_a_failed_run():
    rec = trace("traceroute_network_unreachable_failed.txt", destination=None)
    assert (rec.succeeded, rec.error, rec.hops, rec.reached) == (False, "connect: Network is unreachable", [], False)
    assert (rec.destination, rec.destination_ip) == ("10.77.6.2", "10.77.6.2")


def test_unknown_destination_is_a_failed_run_naming_it():
    rec = trace("traceroute_unknown_host_failed.txt", destination=None)
    assert (rec.succeeded, rec.destination, rec.hops, rec.reached) == (False, "nosuch.lab", [], False)
    assert rec.error.startswith("nosuch.lab: Temporary failure in name resolution")


def test_handwritten_flags_as_sets_and_mpls_extensions():
    rec = trace("handwritten_traceroute_flags_asn_mpls.txt")
    assert [hop.error for hop in rec.hops] == [None, None, "!F-1400", "!P", "!N"]
    assert [hop.asn for hop in rec.hops] == [None, 64500, 64511, 64520, 64520]  # [*] is no AS; first of a set
    assert [hop.mtu for hop in rec.hops] == [None, None, 1400, None, None]
    assert rec.hops[1].rtt_ms == 1.199 and rec.reached is True


def test_handwritten_bsd_traceroute6_header_names_the_source():
    rec = trace("handwritten_traceroute6_bsd_from_source.txt")
    assert (rec.source_ip, rec.destination_ip, rec.ip_version) == ("2001:db8:1::2", "2001:db8:9::80", 6)
    assert rec.hops[1].ip == "2001:db8:5::1" and rec.hops[1].rtt_ms == 7.908  # "*" then two answers


def test_same_output_same_id_and_path():
    assert trace("traceroute_n_reached.txt").id == trace("traceroute_n_reached.txt").id
    assert trace("traceroute_n_reached.txt").path_id != trace("traceroute_star_hops.txt").path_id


HEADER = "traceroute to 10.0.0.9 (10.0.0.9), 30 hops max, 60 byte packets\n"


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("", "payload", "empty"),
        ("hello world\n", "line 1", "not a traceroute header"),
        (HEADER, "payload", "no hop lines"),
        (HEADER + " 1  10.0.0.1  0.5 ms\n 2  10.0.0.2  0.5 ms (x)\n", "line 3", "cannot read"),
        (HEADER + " 1  10.0.0.1  0.5 ms\n 1  10.0.0.1  0.5 ms\n", "line 3", "hop 1 after hop 1"),
        (HEADER + " 1  0.5 ms\n", "line 2", "before any address"),
        (HEADER + " 1  not-an-ip  0.5 ms\n", "line 2", "is not an IP address"),
        (HEADER + "garbage line\n", "line 2", "not a traceroute hop line"),
        ("traceroute to x (bogus), 30 hops max, 60 byte packets\n 1  *\n", "line 1", "is not an IP address"),
    ],
)
def test_malformed_output_is_a_parse_error_naming_the_line(text, field, reason):
    error = rejected(text)
    assert error.field == field and reason in error.reason


def test_long_bad_lines_are_quoted_shortened():
    error = rejected(HEADER + "x" * 300 + "\n")
    assert error.field == "line 2" and "..." in error.reason and len(error.reason) < 160


def test_truncated_outputs_parse_or_fail_cleanly():
    text = fixture_text("traceroute", "traceroute_ecmp_names_several_ips_per_hop.txt")
    for cut in range(len(text)):
        try:
            parse_one(envelope("traceroute", text[:cut]))
        except ParseError:
            pass


def test_other_trace_texts_are_not_claimed():
    assert detect(fixture_text("tracepath", "tracepath_pmtu_drop_9000_1500.txt")).name == "tracepath"


@pytest.mark.tools
def test_real_traceroute_on_loopback():
    tool = require_tool("traceroute")
    done = subprocess.run([tool, "-n", "-q", "1", "-w", "1", "127.0.0.1"], capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    rec = text_trace(done.stdout)
    assert detect(done.stdout).name == "traceroute"
    assert (rec.destination_ip, rec.reached, [hop.ip for hop in rec.hops]) == ("127.0.0.1", True, ["127.0.0.1"])
    assert rec.hops[0].rtt_ms is not None
