"""tracepath text: real iputils 20221126 outputs captured in a namespace lab (tests/fixtures/CAPTURE.md,
tests/fixtures/tracepath/README.md) plus hand-written rare lines and a run cut short."""

from __future__ import annotations

import subprocess

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect
from tests.conftest import FIXTURES, envelope, fixture_text, parse_one, require_tool

NAMES = sorted(p.name for p in (FIXTURES / "tracepath").glob("*.txt"))
COLLECTED = "2024-03-01T12:00:00Z"


def trace(name: str, **kwargs):
    [rec] = parse_one(envelope("tracepath", fixture_text("tracepath", name), **kwargs))
    return rec


def ips(rec) -> list:
    return [hop.ip for hop in rec.hops]


def rejected(text: str) -> ParseError:
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("tracepath", text))
    return caught.value


@pytest.mark.parametrize("name", NAMES)
def test_detected_as_tracepath(name):
    assert detect(fixture_text("tracepath", name)).name == "tracepath"


def test_pmtu_drop_from_9000_to_1500():
    rec = trace("tracepath_pmtu_drop_9000_1500.txt")
    assert (rec.kind, rec.tool, rec.format, rec.succeeded) == ("trace", "tracepath", "tracepath", True)
    assert rec.protocol == "udp"
    # hop 1 is printed twice, hop 3 once for the frag-needed answer of 10.77.2.2 and once for itself
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.4.2", "10.77.6.2"]
    assert [hop.ttl for hop in rec.hops] == [1, 2, 3, 4]
    assert [hop.mtu for hop in rec.hops] == [None, None, 1500, None]
    assert all(hop.other_ips == [] for hop in rec.hops)
    assert rec.hops[0].rtt_ms == 0.05  # median of 0.090 and 0.010
    assert rec.hops[2].rtt_ms == 0.019  # its own line, not the frag-needed one (0.013)
    assert (rec.pmtu_bytes, rec.reached, rec.destination_ip) == (1500, True, "10.77.6.2")
    assert (rec.source, rec.destination, rec.time) == ("src.example.net", "dst.example.net", COLLECTED)


def test_bare_payload_takes_the_destination_from_the_reached_line():
    [rec] = parse_one(fixture_text("tracepath", "tracepath_pmtu_drop_9000_1500.txt"), collected_at=COLLECTED)
    assert (rec.source, rec.destination, rec.ip_version) == (None, "10.77.6.2", 4)


def test_ipv6_pmtu_drop_and_a_rerun_that_remembers_it():
    first, rerun = trace("tracepath6_pmtu_drop.txt"), trace("tracepath6_pmtu_cached_1500.txt")
    assert ips(first) == ips(rerun) == ["fd77:1::1", "fd77:2::2", "fd77:4::2", "fd77:6::2"]
    assert [hop.mtu for hop in first.hops] == [None, None, 1500, None]
    assert [hop.mtu for hop in rerun.hops] == [None] * 4  # the kernel's cached 1500 shows only on [LOCALHOST]
    assert first.pmtu_bytes == rerun.pmtu_bytes == 1500 and first.ip_version == 6


def test_asymmetric_return_path():
    rec = trace("tracepath_asymm.txt")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.5.2", "10.77.6.2"]
    assert rec.hops[2].rtt_ms == 0.031 and rec.reached is True


def test_names_without_addresses_stand_in_for_the_address():
    rec = trace("tracepath_names_pmtu_drop.txt", destination=None)
    assert ips(rec) == ["r1.lab", "r2a.lab", "r3.lab", "h2.lab"]
    assert [hop.hostname for hop in rec.hops] == ips(rec)
    assert (rec.destination, rec.destination_ip, rec.reached) == ("h2.lab", None, True)


def test_both_names_and_addresses():
    rec = trace("tracepath_both_names_and_ips.txt", destination=None)
    assert ips(rec) == ["fd77:1::1", "fd77:2::2", "fd77:4::2", "fd77:6::2"]
    assert [hop.hostname for hop in rec.hops] == ["r1.lab", "r2a.lab", "r3.lab", "h2.lab"]
    assert (rec.destination, rec.destination_ip) == ("h2.lab", "fd77:6::2")


def test_host_unreachable_flag():
    rec = trace("tracepath_host_unreachable.txt")
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", "10.77.4.2"]
    assert [hop.error for hop in rec.hops] == [None, None, "!H"]
    assert (rec.reached, rec.destination_ip, rec.pmtu_bytes) == (False, None, 1500)


def test_blackhole_gives_no_reply_hops_and_too_many_hops():
    rec = trace("tracepath_blackhole_too_many_hops.txt")
    # at TTL 3 only the frag-needed answer came back, from hop 2's router (10.77.2.2, the one
    # before the narrow link): TTL 3 itself is silent, with the MTU it reported
    assert ips(rec) == ["10.77.1.1", "10.77.2.2", None, None, None]
    assert rec.hops[2].mtu == 1500 and rec.reached is False and rec.pmtu_bytes == 1500


def test_pmtud_black_hole_never_finds_the_pmtu():
    rec = trace("tracepath_pmtud_black_hole_never_finds_pmtu.txt")
    assert ips(rec) == ["10.77.1.1", None, None, None, None]
    assert all(hop.mtu is None for hop in rec.hops)
    assert (rec.pmtu_bytes, rec.reached) == (9000, False)  # what tracepath reports: it never learnt 1500


def test_send_failed_is_a_failed_run():
    rec = trace("tracepath_send_failed.txt")
    assert (rec.succeeded, rec.error, rec.hops, rec.reached) == (False, "send failed at hop 1", [], False)


def test_unknown_host_is_a_failed_run_naming_it():
    rec = trace("tracepath_unknown_host_failed.txt", destination=None)
    assert (rec.succeeded, rec.destination, rec.hops) == (False, "nosuch.lab", [])
    assert rec.error == "tracepath: nosuch.lab: Temporary failure in name resolution"


def test_handwritten_run_cut_short_has_no_pmtu():
    rec = trace("handwritten_tracepath_killed_no_resume.txt")
    assert ips(rec) == ["192.0.2.1", "198.51.100.7", None]
    assert (rec.pmtu_bytes, rec.reached) == (None, False)


def test_handwritten_rare_lines():
    rec = trace("handwritten_tracepath_rare_lines.txt")
    # "2?:" (ttl from the socket), a broken router's note, "???" (address not printable), !N
    assert ips(rec) == ["192.0.2.1", "198.51.100.7", None, "203.0.113.9"]
    assert rec.hops[1].rtt_ms == 1.204 and rec.hops[3].error == "!N"


def test_every_responder_of_a_ttl_is_kept():
    text = " 1:  10.0.0.1    0.5ms\n 1:  10.0.0.9    0.7ms\n 1:  10.0.0.1    0.3ms\n 2:  10.0.0.2    1.0ms reached\n"
    [rec] = parse_one(envelope("tracepath", text))
    assert (rec.hops[0].ip, rec.hops[0].other_ips, rec.hops[0].rtt_ms) == ("10.0.0.1", ["10.0.0.9"], 0.4)


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("", "payload", "empty"),
        (" 1?: [LOCALHOST]     pmtu 1500\n     Resume: pmtu 1500\n", "payload", "no hop lines"),
        (" 1:  10.0.0.1   0.5ms\n 2:  10.0.0.2   fast\n", "line 2", "not a tracepath line"),
        (" 1:  10.0.0.1   0.5ms\n     Resume: pmtu lots\n", "line 2", "not a tracepath line"),
        (" 1:  name (not-an-ip)   0.5ms\n", "line 1", "is not an IP address"),
        (" 1:  10.0.0.1   0.5ms\n" + "y" * 200 + "\n", "line 2", "..."),
    ],
)
def test_malformed_output_is_a_parse_error_naming_the_line(text, field, reason):
    error = rejected(text)
    assert error.field == field and reason in error.reason


def test_truncated_outputs_parse_or_fail_cleanly():
    text = fixture_text("tracepath", "tracepath_both_names_and_ips.txt")
    for cut in range(len(text)):
        try:
            parse_one(envelope("tracepath", text[:cut]))
        except ParseError:
            pass


def test_traceroute_text_is_not_claimed():
    assert detect(fixture_text("traceroute", "traceroute_n_reached.txt")).name == "traceroute"


@pytest.mark.tools
def test_real_tracepath_on_loopback():
    tool = require_tool("tracepath")
    done = subprocess.run([tool, "-n", "127.0.0.1"], capture_output=True, text=True, timeout=10)
    assert done.returncode == 0, done.stderr
    assert detect(done.stdout).name == "tracepath"
    [rec] = parse_one(envelope("tracepath", done.stdout))
    assert ([hop.ip for hop in rec.hops], rec.reached, rec.destination_ip) == (["127.0.0.1"], True, "127.0.0.1")
    assert rec.pmtu_bytes == 65535
