"""owping text: raw ``-R`` packet lines and the per-direction summary (fixtures are hand-written,
see tests/fixtures/owping/README.md; owamp is not packaged for Debian 12)."""

from __future__ import annotations

import random

import pytest
from tests.conftest import envelope, fixture_text, parse_one

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.registry import detect

FIXTURES = [
    "raw-R-loss-duplicate-reorder.txt",
    "raw-R-unsync-negative-delay.txt",
    "summary-two-directions.txt",
    "summary-unsync-negative-delay-one-direction.txt",
    "summary-forward-all-lost-nan.txt",
    "summary-ipv6-microseconds-p95.txt",
    "summary-verbose-per-packet-one-direction.txt",
]
NU, HU = "nu-lab-01.example.net", "hu-lab-01"


def owping(name: str, **kwargs) -> list:
    return parse_one(envelope("owping", fixture_text("owping", name), **kwargs))


def approx(value: float) -> object:
    return pytest.approx(value, abs=1e-6)


@pytest.mark.parametrize("name", FIXTURES)
def test_detected_as_owping(name):
    assert detect(fixture_text("owping", name)).name == "owping"


def test_raw_counts_lost_duplicate_and_reordered_packets():
    [rec] = owping("raw-R-loss-duplicate-reorder.txt")
    assert (rec.kind, rec.tool, rec.format, rec.one_way) == ("latency", "owping", "owping", True)
    assert (rec.source, rec.destination) == ("src.example.net", "dst.example.net")
    assert rec.packets_sent == 40  # seq 0..39; the duplicate of seq 25 is not sent again
    assert rec.packets_received == 39
    assert rec.packets_lost == 1  # seq 17: RTIME 0
    assert rec.loss_ratio == 0.025
    assert rec.duplicates == 1
    assert rec.reordered == 1  # seq 31 arrives after seq 32
    assert rec.time == "2024-03-01T12:00:00.248994Z"  # seq 0's send time, NTP era 1900 -> UTC


def test_raw_delay_statistics_from_ntp_timestamps():
    [rec] = owping("raw-R-loss-duplicate-reorder.txt")
    assert rec.delay_min_ms == approx(5.181)
    assert rec.delay_median_ms == approx(5.22)
    assert rec.delay_mean_ms == approx(5.2448718)
    assert rec.delay_p95_ms == approx(5.258)
    assert rec.delay_max_ms == approx(6.136)  # seq 36, the queueing spike
    assert rec.jitter_ms == approx(5.258 - 5.22)
    assert rec.max_clock_error_ms == approx((0.000119209 + 0.000128269) * 1000)
    assert rec.clock_synchronized is True  # the lost record's SSYNC 0 does not count
    assert (rec.ttl_min, rec.ttl_max) == (251, 252)  # the lost record's TTL 255 does not count


def test_raw_unsynchronized_clocks_keep_negative_delays():
    [rec] = owping("raw-R-unsync-negative-delay.txt")
    assert rec.clock_synchronized is False
    assert rec.delay_min_ms == approx(-12.551)
    assert rec.delay_median_ms == approx(-12.514)
    assert rec.delay_max_ms == approx(-12.446)
    assert rec.max_clock_error_ms == approx(9.01222)
    assert (rec.packets_sent, rec.packets_lost, rec.duplicates, rec.reordered) == (10, 0, 0, 0)
    assert (rec.ttl_min, rec.ttl_max) == (253, 253)
    assert rec.time == "2019-02-13T11:54:19.385943Z"


def test_raw_bare_payload_names_no_endpoints():
    [rec] = parse_one(fixture_text("owping", "raw-R-unsync-negative-delay.txt"))
    assert (rec.source, rec.destination, rec.source_ip, rec.destination_ip) == (None, None, None, None)


def test_summary_two_directions_forward_then_reverse():
    forward, reverse = owping("summary-two-directions.txt")
    assert (forward.source, forward.destination) == ("src.example.net", "dst.example.net")
    assert (reverse.source, reverse.destination) == ("dst.example.net", "src.example.net")
    assert forward.id != reverse.id
    assert forward.time == "2019-02-13T11:54:19.387000Z"
    assert reverse.time == "2019-02-13T11:54:19.541000Z"


def test_summary_forward_block_values():
    forward, _ = owping("summary-two-directions.txt")
    assert (forward.packets_sent, forward.packets_lost, forward.packets_received) == (100, 1, 99)
    assert forward.loss_ratio == 0.01
    assert (forward.duplicates, forward.reordered) == (0, 0)
    assert (forward.delay_min_ms, forward.delay_median_ms, forward.delay_max_ms) == (12.3, 12.5, 14.1)
    assert forward.jitter_ms == 0.4
    assert forward.delay_p95_ms == 12.9  # median + jitter: owping's jitter is P95 - P50
    assert forward.delay_mean_ms is None
    assert forward.max_clock_error_ms == 0.218
    assert forward.clock_synchronized is True
    assert (forward.ttl_min, forward.ttl_max) == (252, 252)  # hops = 3 from TTL 255


def test_summary_reverse_block_values():
    _, reverse = owping("summary-two-directions.txt")
    assert (reverse.packets_sent, reverse.packets_lost, reverse.duplicates) == (100, 0, 2)
    assert reverse.reordered == 2  # 1-reordering = 2% of 100 received + 2 duplicates
    assert reverse.delay_median_ms == 12.9
    assert reverse.delay_p95_ms == 13.1
    assert (reverse.ttl_min, reverse.ttl_max) == (251, 252)  # min hops 3, max hops 4


def test_summary_without_envelope_names_hosts_from_headers():
    forward, reverse = parse_one(fixture_text("owping", "summary-two-directions.txt"))
    assert (forward.source, forward.destination) == (NU, HU)
    assert (reverse.source, reverse.destination) == (HU, NU)
    assert forward.source_ip is None  # host names, not IP literals


def test_summary_block_direction_follows_matching_envelope_names():
    # Envelope HU -> NU: the first block (NU -> HU) is the reverse direction.
    first, second = owping("summary-two-directions.txt", source=HU, destination=NU)
    assert (first.source, first.destination) == (NU, HU)
    assert first.packets_lost == 1
    assert (second.source, second.destination) == (HU, NU)


def test_summary_unsync_clock():
    [rec] = owping("summary-unsync-negative-delay-one-direction.txt", source=NU, destination=HU)
    assert (rec.source, rec.destination) == (NU, HU)
    assert rec.clock_synchronized is False
    assert rec.max_clock_error_ms is None
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_max_ms) == (-12.5, -12.5, -12.4)
    assert rec.jitter_ms == 0.0
    assert rec.delay_p95_ms == -12.5
    assert (rec.ttl_min, rec.ttl_max) == (None, None)  # TTL not reported


def test_summary_all_lost_direction_has_no_delays():
    lost, back = owping("summary-forward-all-lost-nan.txt")
    assert (lost.source, lost.destination) == ("src.example.net", "dst.example.net")
    assert (lost.source_ip, lost.destination_ip, lost.ip_version) == ("198.51.100.7", "203.0.113.20", 4)
    assert (lost.packets_sent, lost.packets_received, lost.loss_ratio) == (100, 0, 1.0)
    assert (lost.delay_min_ms, lost.delay_median_ms, lost.delay_max_ms) == (None, None, None)
    assert (lost.jitter_ms, lost.delay_p95_ms) == (None, None)
    assert lost.max_clock_error_ms == 0.191
    assert (back.source_ip, back.destination_ip) == ("203.0.113.20", "198.51.100.7")
    assert (back.loss_ratio, back.delay_median_ms, back.delay_p95_ms) == (0.0, 21.6, 22.3)
    assert (back.ttl_min, back.ttl_max) == (248, 248)


def test_summary_ipv6_literals_and_microseconds():
    [rec] = parse_one(fixture_text("owping", "summary-ipv6-microseconds-p95.txt"))
    assert (rec.source, rec.destination) == ("2001:db8:10::7", "2001:db8:20::9")
    assert (rec.source_ip, rec.destination_ip, rec.ip_version) == ("2001:db8:10::7", "2001:db8:20::9", 6)
    assert (rec.delay_min_ms, rec.delay_median_ms, rec.delay_max_ms) == (0.452, 0.46, 0.498)
    assert rec.jitter_ms == 0.0121
    assert rec.delay_p95_ms == 0.473  # owping's own 95.0 percentile line wins over median + jitter
    assert rec.max_clock_error_ms == 0.12
    assert (rec.ttl_min, rec.ttl_max) == (253, 254)  # "hops takes 2 values; 1 2"
    assert rec.time == "2024-03-01T12:05:00.004000Z"


def test_summary_verbose_per_packet_lines_and_repeated_header():
    [rec] = owping("summary-verbose-per-packet-one-direction.txt")
    assert (rec.packets_sent, rec.packets_lost, rec.loss_ratio) == (5, 1, 0.2)
    assert rec.delay_median_ms == 5.21
    assert (rec.ttl_min, rec.ttl_max) == (252, 252)  # "TTL is 252 (consistently)"


def test_summary_other_units_are_converted():
    text = fixture_text("owping", "summary-unsync-negative-delay-one-direction.txt").replace(
        "-12.5/-12.5/-12.4 ms, (unsync)", "-0.0125/-0.0125/-0.0124 s, (err=0.009 s)"
    ).replace("jitter = 0 ms", "jitter = 1.5e+04 ns")
    [rec] = parse_one(text)
    assert (rec.delay_min_ms, rec.delay_max_ms, rec.max_clock_error_ms) == (-12.5, -12.4, 9.0)
    assert rec.jitter_ms == 0.015


def _field(text: str) -> str:
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("owping", text))
    return caught.value.field


def test_summary_truncated_after_delay_line_names_the_missing_line():
    text = fixture_text("owping", "summary-two-directions.txt")
    cut = text[: text.index("one-way jitter")]
    assert _field(cut) == "one-way jitter line"


def test_summary_without_sent_line_names_it():
    text = fixture_text("owping", "summary-two-directions.txt").replace("100 sent, 1 lost (1.000%), 0 duplicates\n", "")
    assert _field(text) == "sent/lost line"


def test_summary_unknown_line_is_named_by_number():
    text = fixture_text("owping", "summary-two-directions.txt").replace("no reordering", "no idea")
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("owping", text))
    assert caught.value.field == "line 13"
    assert "'no idea'" in caught.value.reason


def test_summary_unknown_unit_is_rejected():
    text = fixture_text("owping", "summary-two-directions.txt").replace("12.3/12.5/14.1 ms", "12.3/12.5/14.1 ks")
    assert _field(text) == "line 8"


def test_summary_more_than_two_blocks_is_rejected():
    text = fixture_text("owping", "summary-two-directions.txt")
    assert _field(text + text.split("\n\n\n")[1]).startswith("line ")


def test_raw_garbage_line_is_named_by_number():
    text = fixture_text("owping", "raw-R-loss-duplicate-reorder.txt") + "owping: FATAL: connection reset\n"
    with pytest.raises(ParseError) as caught:
        parse_one(envelope("owping", text))
    assert caught.value.field == "line 42"
    assert "owping: FATAL" in caught.value.reason


def test_raw_truncated_last_line_is_rejected():
    text = fixture_text("owping", "raw-R-loss-duplicate-reorder.txt").rstrip("\n")
    assert _field(text[:-30]) == "line 41"


def test_raw_bad_sync_flag_is_rejected():
    text = fixture_text("owping", "raw-R-unsync-negative-delay.txt")
    text = text.replace(" 0 0.00450611 253", " 7 0.00450611 253", 1)  # RSYNC must be 0 or 1
    assert _field(text) == "line 1"


def test_text_with_nothing_owping_is_rejected():
    assert _field("hello world\n") == "line 1"
    assert _field("\n\n") == "payload"
    assert _field("Approximately 3.9 seconds until results available\n") == "payload"


@pytest.mark.parametrize("name", FIXTURES)
def test_truncation_anywhere_gives_records_or_parse_error(name):
    text = fixture_text("owping", name)
    for end in range(0, len(text), 7):
        try:
            parse_one(envelope("owping", text[:end]))
        except ParseError:
            pass


@pytest.mark.parametrize("name", FIXTURES)
def test_mutations_give_records_or_parse_error(name):
    text = fixture_text("owping", name)
    rng = random.Random(name)
    alphabet = "0123456789 .-+e:/[]()%nasx\t\n"
    for _ in range(300):
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
        try:
            parse_one(envelope("owping", "".join(chars)))
        except ParseError:
            pass
