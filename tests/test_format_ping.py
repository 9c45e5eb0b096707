"""ping text: real iputils 20221126 outputs captured on loopback and in throwaway network
namespaces (see tests/fixtures/ping/README.md), plus two hand-written BSD/legacy variants."""

from __future__ import annotations

import random
import subprocess

import pytest

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect
from tests.conftest import envelope, fixture_text, parse_one, require_tool

FIXTURES = [
    "iputils-20221126-D-O-no-answer-yet.txt",
    "iputils-20221126-D-host-unreachable.txt",
    "iputils-20221126-D-timestamps-partial-loss.txt",
    "iputils-20221126-broadcast-duplicates-unmarked.txt",
    "iputils-20221126-error-address-family-not-supported.txt",
    "iputils-20221126-error-name-resolution.txt",
    "iputils-20221126-error-network-unreachable.txt",
    "iputils-20221126-error-network-unreachable-invoked-by-path.txt",
    "iputils-20221126-host-unreachable-errors.txt",
    "iputils-20221126-interface-from-header.txt",
    "iputils-20221126-ipv4-loopback.txt",
    "iputils-20221126-ipv4-named-host.txt",
    "iputils-20221126-ipv6-address-unreachable.txt",
    "iputils-20221126-ipv6-loopback.txt",
    "iputils-20221126-ipv6-named-host.txt",
    "iputils-20221126-partial-loss.txt",
    "iputils-20221126-quiet-summary-only.txt",
    "iputils-20221126-total-loss-no-rtt-line.txt",
    "iputils-20221126-verbose-broadcast-duplicates-marked.txt",
    "iputils-legacy-handwritten-unknown-host.txt",
    "macos-handwritten-round-trip-stddev-request-timeout.txt",
]
COLLECTED = "2024-03-01T12:00:00Z"


def ping(name: str, **kwargs) -> object:
    [rec] = parse_one(envelope("ping", fixture_text("ping", name), **kwargs))
    return rec


def bare(name: str) -> object:
    [rec] = parse_one(fixture_text("ping", name), collected_at=COLLECTED)
    return rec


def approx(value: float) -> object:
    return pytest.approx(value, abs=1e-9)


@pytest.mark.parametrize("name", FIXTURES)
def test_detected_as_ping(name):
    assert detect(fixture_text("ping", name)).name == "ping"


def test_ipv4_loopback_replies_give_the_delay_statistics():
    rec = ping("iputils-20221126-ipv4-loopback.txt")
    assert (rec.kind, rec.tool, rec.format, rec.one_way, rec.succeeded) == ("latency", "ping", "ping", False, True)
    assert (rec.source, rec.destination) == ("src.example.net", "dst.example.net")  # envelope wins
    assert (rec.source_ip, rec.destination_ip, rec.ip_version) == (None, "127.0.0.1", 4)
    assert (rec.packets_sent, rec.packets_received, rec.packets_lost) == (5, 5, 0)
    assert (rec.loss_ratio, rec.duplicates) == (0.0, 0)
    # replies 0.050 0.039 0.048 0.083 0.028
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_max_ms) == (0.028, 0.048, 0.083)
    assert rec.delay_mean_ms == approx(0.0496)
    assert rec.delay_p95_ms == approx(0.0764)
    assert rec.jitter_ms == approx(0.0764 - 0.048)
    assert (rec.ttl_min, rec.ttl_max) == (64, 64)
    assert rec.time == "2024-03-01T12:00:00Z"  # no -D stamps: the envelope's collected_at


def test_bare_payload_names_destination_from_the_header():
    rec = bare("iputils-20221126-ipv4-loopback.txt")
    assert (rec.source, rec.destination) == (None, "127.0.0.1")


def test_ipv6_loopback():
    rec = bare("iputils-20221126-ipv6-loopback.txt")
    assert (rec.destination, rec.destination_ip, rec.ip_version) == ("::1", "::1", 6)
    assert (rec.packets_sent, rec.packets_received) == (5, 5)
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_max_ms) == (0.021, 0.046, 0.061)


def test_named_hosts_keep_the_name_and_the_address():
    v4 = bare("iputils-20221126-ipv4-named-host.txt")
    assert (v4.destination, v4.destination_ip, v4.ip_version) == ("pw-v4.test", "127.0.0.1", 4)
    v6 = bare("iputils-20221126-ipv6-named-host.txt")  # PING pw-v6.test(localhost6 (::1)) 56 data bytes
    assert (v6.destination, v6.destination_ip, v6.ip_version) == ("pw-v6.test", "::1", 6)
    assert (v6.packets_sent, v6.delay_min_ms, v6.delay_max_ms) == (4, 0.033, 0.061)


def test_interface_header_reports_the_source_address():
    rec = bare("iputils-20221126-interface-from-header.txt")  # PING ... from 127.0.0.1 lo: ...
    assert (rec.source, rec.source_ip, rec.destination_ip) == (None, "127.0.0.1", "127.0.0.1")


def test_partial_loss():
    rec = ping("iputils-20221126-partial-loss.txt")
    assert (rec.packets_sent, rec.packets_received, rec.packets_lost) == (10, 8, 2)
    assert rec.loss_ratio == 0.2
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_max_ms) == (0.044, 0.048, 0.06)
    assert rec.delay_mean_ms == approx(0.04925)


def test_D_timestamp_is_the_test_time():
    rec = ping("iputils-20221126-D-timestamps-partial-loss.txt")
    assert rec.time == "2026-11-22T00:52:03.808783Z"  # [1795308723.808783], not collected_at
    assert rec.collected_at == COLLECTED
    assert (rec.packets_sent, rec.packets_received, rec.loss_ratio) == (8, 6, 0.25)


def test_D_with_no_answer_yet_lines():
    rec = ping("iputils-20221126-D-O-no-answer-yet.txt")
    assert rec.time == "2026-11-22T00:52:20.980215Z"
    assert (rec.packets_sent, rec.packets_lost) == (8, 2)
    assert rec.delay_median_ms == 0.055


def test_total_loss_has_counts_but_no_delays():
    rec = ping("iputils-20221126-total-loss-no-rtt-line.txt")
    assert rec.succeeded is True  # a measured 100 % loss, not a failed run
    assert (rec.packets_sent, rec.packets_received, rec.packets_lost, rec.loss_ratio) == (3, 0, 3, 1.0)
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.jitter_ms, rec.ttl_min) == (None, None, None, None)


def test_host_unreachable_errors_count_as_loss():
    rec = ping("iputils-20221126-host-unreachable-errors.txt")  # +5 errors, then a "pipe 5" line
    assert (rec.packets_sent, rec.packets_lost, rec.loss_ratio) == (5, 5, 1.0)
    assert rec.delay_median_ms is None
    timed = ping("iputils-20221126-D-host-unreachable.txt")
    assert timed.time == "2026-11-22T00:52:32.267421Z"
    v6 = bare("iputils-20221126-ipv6-address-unreachable.txt")
    assert (v6.destination_ip, v6.ip_version, v6.loss_ratio) == ("fd00:99::3", 6, 1.0)


def test_broadcast_duplicates():
    rec = bare("iputils-20221126-broadcast-duplicates-unmarked.txt")
    assert (rec.packets_sent, rec.packets_received, rec.duplicates) == (3, 3, 2)
    assert (rec.delay_min_ms, rec.delay_max_ms) == (0.032, 0.067)  # all 5 replies, as ping's rtt line
    assert rec.delay_mean_ms == approx(0.0538)
    marked = bare("iputils-20221126-verbose-broadcast-duplicates-marked.txt")  # -v: (DUP!), ident=
    assert (marked.duplicates, marked.delay_min_ms, marked.delay_max_ms) == (2, 0.02, 0.07)


def test_quiet_output_uses_the_rtt_summary_line():
    rec = bare("iputils-20221126-quiet-summary-only.txt")
    assert (rec.delay_min_ms, rec.delay_mean_ms, rec.delay_max_ms) == (0.032, 0.038, 0.047)
    assert rec.jitter_ms == 0.006  # mdev
    assert (rec.delay_median_ms, rec.delay_p95_ms, rec.ttl_min) == (None, None, None)


def test_bsd_round_trip_line_and_request_timeouts():
    rec = bare("macos-handwritten-round-trip-stddev-request-timeout.txt")
    assert (rec.packets_sent, rec.packets_received, rec.loss_ratio) == (4, 3, 0.25)
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_max_ms) == (1.942, 2.118, 2.307)
    summary_only = "\n".join(
        line for line in fixture_text("ping", "macos-handwritten-round-trip-stddev-request-timeout.txt").splitlines()
        if not line.startswith("64 bytes")
    )  # fmt: skip
    [rec] = parse_one(summary_only, collected_at=COLLECTED)
    assert (rec.delay_mean_ms, rec.jitter_ms) == (2.122, 0.149)


@pytest.mark.parametrize(
    ("name", "destination", "error"),
    [
        ("iputils-20221126-error-name-resolution.txt", "nonexistent.invalid",
         "ping: nonexistent.invalid: Temporary failure in name resolution"),
        ("iputils-20221126-error-address-family-not-supported.txt", "localhost",
         "ping: localhost: Address family for hostname not supported"),
        ("iputils-legacy-handwritten-unknown-host.txt", "pw-nohost.example", "ping: unknown host pw-nohost.example"),
        ("iputils-20221126-error-network-unreachable.txt", None, "ping: connect: Network is unreachable"),
        ("iputils-20221126-error-network-unreachable-invoked-by-path.txt", None,
         "/usr/bin/ping: connect: Network is unreachable"),
    ],
)  # fmt: skip
def test_error_output_is_a_failed_measurement(name, destination, error):
    rec = bare(name)
    assert (rec.succeeded, rec.error, rec.destination) == (False, error, destination)
    assert (rec.packets_sent, rec.packets_received, rec.loss_ratio, rec.delay_median_ms) == (None, None, None, None)
    assert rec.time == COLLECTED


def test_failed_measurement_takes_the_envelope_endpoints():
    rec = ping("iputils-20221126-error-network-unreachable.txt")
    assert (rec.source, rec.destination, rec.succeeded) == ("src.example.net", "dst.example.net", False)


def _field(text: str) -> str:
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("ping", text))
    return caught.value.field


def test_header_only_output_is_truncated():
    assert _field("PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n") == "statistics line"


def test_truncated_statistics_line_is_named():
    text = fixture_text("ping", "iputils-20221126-ipv4-loopback.txt")
    cut = text[: text.index(" received, 0% packet loss")]
    assert _field(cut) == "line 9"


def test_unknown_line_is_named_and_quoted():
    text = fixture_text("ping", "iputils-20221126-ipv4-loopback.txt").replace("icmp_seq=3 ttl=64", "icmp_seq=3 tll=64")
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("ping", text))
    assert caught.value.field == "line 4"
    assert "tll=64" in caught.value.reason


def test_more_received_than_sent_is_rejected():
    text = fixture_text("ping", "iputils-20221126-ipv4-loopback.txt").replace("5 received", "6 received")
    assert _field(text) == "line 9"


def test_two_runs_in_one_payload_are_rejected():
    text = fixture_text("ping", "iputils-20221126-ipv4-loopback.txt")
    assert _field(text + text) == "line 11"


def test_text_with_nothing_ping_is_rejected():
    assert _field("hello world\n") == "line 1"
    assert _field(" \n") == "payload"


@pytest.mark.parametrize("name", FIXTURES)
def test_truncation_anywhere_gives_records_or_parse_error(name):
    text = fixture_text("ping", name)
    for end in range(len(text)):
        try:
            parse_one(envelope("ping", text[:end]))
        except ParseError:
            pass


@pytest.mark.parametrize("name", FIXTURES)
def test_mutations_give_records_or_parse_error(name):
    text = fixture_text("ping", name)
    rng = random.Random(name)
    alphabet = "0123456789 .-+:/[]()%=<,!abcdefmstx\t\n"
    for _ in range(300):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
        try:
            parse_one(envelope("ping", "".join(chars)))
        except ParseError:
            pass


@pytest.mark.tools
def test_real_ping_on_loopback_parses():
    tool = require_tool("ping")
    run = subprocess.run([tool, "-c", "3", "-i", "0.2", "127.0.0.1"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    assert detect(run.stdout).name == "ping"
    [rec] = parse_one(run.stdout, collected_at=COLLECTED)
    assert (rec.destination, rec.destination_ip, rec.ip_version) == ("127.0.0.1", "127.0.0.1", 4)
    assert (rec.packets_sent, rec.packets_received, rec.loss_ratio, rec.duplicates) == (3, 3, 0.0, 0)
    assert 0 <= rec.delay_min_ms <= rec.delay_median_ms <= rec.delay_p95_ms <= rec.delay_max_ms
    assert rec.ttl_min is not None and rec.ttl_min == rec.ttl_max
