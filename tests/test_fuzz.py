"""Fuzz: mutated real inputs of every format give records or a ParseError with a reason, nothing else.

A few hundred inputs per format in the unit run; ``PATHWATCH_FUZZ_EXAMPLES=10000`` runs that
many per format (``bench/fuzz_bench.py`` runs 10,000 and writes the counts to
``bench/results/fuzz.json``). The mutations are in ``tests/fuzz_inputs.py``; inputs that once
crashed a parser are kept below as regression cases.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.parse import parse_item
from pathwatch.ingest.reader import read_items

from .conftest import FIXTURES, envelope
from .fuzz_inputs import DEFAULTS, FORMATS, check, mutated, seeds

EXAMPLES = int(os.environ.get("PATHWATCH_FUZZ_EXAMPLES", "200"))
POOLS = {fmt: seeds(fmt) for fmt in FORMATS}
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example, HealthCheck.function_scoped_fixture])


def test_every_format_has_seeds():
    assert all(len(POOLS[fmt]) >= 5 for fmt in FORMATS), {fmt: len(pool) for fmt, pool in POOLS.items()}


@pytest.mark.parametrize("fmt", FORMATS)
@SETTINGS
@given(data=st.data())
def test_mutated_inputs_give_records_or_a_parse_error(fmt, data):
    check(mutated(data, fmt, POOLS[fmt]))


# --- inputs that crashed a parser (ValueError out of int()), kept as regression cases ---------

LONG = "1" * 5000  # int() refuses more than 4300 digits


def _one(value) -> ParseError:
    [item] = read_items(json.dumps(value).encode())
    outcome = parse_item(item, DEFAULTS, as_dicts=True)
    assert isinstance(outcome.error, ParseError), outcome
    return outcome.error


def test_owping_raw_line_with_a_5000_digit_timestamp_is_a_parse_error():
    # found by bench/fuzz_bench.py: a repeated slice of an owping -R line
    payload = f"0 16144986761167973376 1 0.0045 16144986761114105896 0 0.0045 253\n1 16144986761605898240 1 0.0045 {LONG} 0 0.0045 253\n"
    error = _one(envelope("owping", payload))
    assert error.field == "line 2" and error.reason.startswith("a number too long to read: '1 16144986761605898240")


def test_owping_summary_counts_and_ttls_of_5000_digits_are_parse_errors():
    summary = (FIXTURES / "owping" / "summary-two-directions.txt").read_text()
    for old, new in (("100 sent", f"{LONG} sent"), ("hops = 3", f"hops = {LONG}")):
        error = _one(envelope("owping", summary.replace(old, new, 1)))
        assert error.reason.startswith("expected a number, got '111") and "(5000 characters)" in error.reason


def test_owping_counts_past_a_float_s_range_are_a_parse_error_not_an_overflow():
    # found by bench/fuzz_bench.py: "1e400"-sized counts that int() reads and float() cannot hold (OverflowError)
    summary = (FIXTURES / "owping" / "summary-two-directions.txt").read_text()
    error = _one(envelope("owping", summary.replace("100 sent", f"1{'0' * 400} sent", 1)))
    assert error.reason.startswith("packet counts too large:") and "400-digit count of packets" in error.reason


def test_ping_counts_of_5000_digits_are_a_parse_error():
    text = (FIXTURES / "ping" / "iputils-20221126-partial-loss.txt").read_text()
    error = _one(envelope("ping", text.replace("10 packets transmitted", f"{LONG} packets transmitted")))
    assert error.reason.startswith("expected a number, got '111") and "(5000 characters)" in error.reason


def test_pscheduler_ttl_keys_int_refuses_are_parse_errors():
    result = json.loads((FIXTURES / "pscheduler" / "latencybg_archiver_input.json").read_text())
    for key in ("\u00b2", LONG):  # str.isdigit takes both; int() takes neither
        value = json.loads(json.dumps(result))
        _set_ttl_histogram(value, {key: 5})
        error = _one(value)
        assert error.reason.startswith("expected a number, got"), error


def test_pscheduler_duration_past_timedelta_s_range_is_a_parse_error():
    # found by bench/fuzz_bench.py: isodate raised OverflowError building the timedelta
    from pathwatch.ingest.formats.pscheduler import _duration_ms

    with pytest.raises(ParseError, match="not an ISO 8601 duration: 'PT99999999999999999999999999S'"):
        _duration_ms("PT99999999999999999999999999S", "result.raw-packets.0.delay")


def test_mtr_asn_of_5000_digits_is_a_parse_error():
    report = json.loads((FIXTURES / "mtr" / "mtr_asn_unresolved.json").read_text())
    report["report"]["hubs"][0]["ASN"] = "AS" + LONG
    error = _one(envelope("mtr", report))
    assert error.field == "report.hubs[0].ASN" and "(5000 characters)" in error.reason


def _set_ttl_histogram(value, histogram) -> None:
    """Put ``histogram`` as every ``histogram-ttl`` in a pscheduler document."""
    if isinstance(value, dict):
        for key in value:
            if key == "histogram-ttl":
                value[key] = histogram
            else:
                _set_ttl_histogram(value[key], histogram)
    elif isinstance(value, list):
        for child in value:
            _set_ttl_histogram(child, histogram)
