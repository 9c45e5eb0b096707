"""Hostile input at scale: streamed reading, line and depth limits, long traces, every line accounted for."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pathwatch.cli import app
from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.parse import parse_value
from pathwatch.ingest.reader import Limits, read_items, read_stream

from .conftest import FIXTURES, envelope

EXAMPLES = Path(__file__).resolve().parent.parent / "ingest" / "example_envelopes"
INPUT_FILES = sorted(p for p in [*FIXTURES.rglob("*"), *EXAMPLES.glob("*")]
                     if p.is_file() and p.suffix in {".json", ".jsonl", ".txt"})
MIB = 2**20


def _key(items) -> list:
    return [(item.location, item.raw, repr(item.value), str(item.error), item.unread) for item in items]


# --- the streamed reader gives what the bytes reader gives ----------------------------------


@pytest.mark.parametrize("path", INPUT_FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_stream_reads_every_fixture_as_the_bytes_reader_does(path):
    data = path.read_bytes()
    for variant in (data, b"\n\n" + data, data.replace(b"\n", b"\r\n"), data[: len(data) // 2], b"[" + data + b"]"):
        assert _key(read_stream(io.BytesIO(variant))) == _key(read_items(variant))


ATOMS = [b'{"a": 1}', b'{"b": [1, {"c": 2}]}', b"[1, 2]", b"{", b"}", b" ", b"\n", b"\r", b"\r\n", b"x",
         b'"s"', b"\x0c", b"[[[[[[1]]]]]]", b'{"d":' + b"[" * 10 + b"]" * 10 + b"}", b"\xff",
         b'{"long": "' + b"y" * 40 + b'"}']


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(ATOMS), max_size=10), max_line=st.sampled_from([8, 20, 30, 64, 1000]),
       max_depth=st.sampled_from([3, 5, 64]))
def test_stream_and_bytes_readers_agree_within_any_limits(parts, max_line, max_depth):
    data, limits = b"".join(parts), Limits(max_line, max_depth)
    assert _key(read_stream(io.BytesIO(data), limits)) == _key(read_items(data, limits))


@pytest.mark.parametrize("data", [b" " * 9, b"\n" + b" " * 9 + b"\n", b" " * 9 + b"\n" + b'{"a": 1}\n', b" " * 9 + b"x"])
def test_white_space_over_the_line_limit_is_blank_to_both_readers(data):
    # (hypothesis found 9 spaces under an 8-byte limit: "empty input" read whole, "over the limit" streamed)
    limits = Limits(max_line_bytes=8)
    assert _key(read_stream(io.BytesIO(data), limits)) == _key(read_items(data, limits))


# --- limits: a reject naming the line, the limit or the field -------------------------------


def test_a_line_over_the_limit_is_rejected_unread_and_the_next_line_still_parses():
    good = (EXAMPLES / "ping.jsonl").read_bytes().splitlines()[0]
    data = good + b"\n" + b'{"payload": "' + b"x" * 5000 + b'"}\n' + good + b"\n"
    items = list(read_stream(io.BytesIO(data), Limits(max_line_bytes=4096)))
    assert [item.location for item in items] == ["line 1", "line 2", "line 3"]
    assert items[1].unread and items[1].raw == b"" and items[1].value is None
    assert items[1].error.reason == ("line of 5015 bytes is over the limit of 4096 bytes "
                                     "(max_line_bytes, --max-line-bytes): not decoded")
    assert items[0].error is None and items[2].error is None


def test_an_input_read_whole_over_the_limit_is_one_reject():
    text = (FIXTURES / "traceroute" / "traceroute_n_reached.txt").read_bytes()
    [item] = read_stream(io.BytesIO(text), Limits(max_line_bytes=100))
    assert (item.location, item.unread) == ("input", True)
    assert "input (not JSON Lines, so read whole) of" in item.error.reason and "limit of 100 bytes" in item.error.reason


@pytest.mark.parametrize("depth", [65, 300, 1100, 100_000])
def test_json_nested_deeper_than_the_limit_is_a_reject_naming_the_field(depth):
    line = b'{"format": "iperf3", "payload": {"start": ' + b"[" * depth + b"]" * depth + b"}}"
    [item] = read_items(line)
    assert item.error.reason == "JSON nested deeper than 64 levels (the depth limit)"
    if depth < 1024:  # deeper, orjson stops first and no field is known
        assert item.error.field == ("payload.start" + ".0" * 62)[:117] + "..."  # the 65th level, cut to 120 characters
    assert _key(read_stream(io.BytesIO(line))) == _key([item])


def test_an_array_element_nested_past_orjson_s_254_levels_is_a_reject_not_a_crash():
    # orjson.dumps raised TypeError("Recursion limit reached") re-serialising it for the item's raw bytes
    data = b'[{"a": 1}, ' + b"[" * 300 + b"]" * 300 + b"]"
    first, second = read_items(data)
    assert first.value == {"a": 1}
    assert second.location == "item 2" and "nested deeper than 64" in second.error.reason
    assert second.raw == b"[" * 300 + b"]" * 300


def test_parse_command_names_the_file_the_line_and_the_limit(tmp_path):
    path = tmp_path / "in.jsonl"
    good = (EXAMPLES / "ping.jsonl").read_bytes().splitlines()[0]
    path.write_bytes(good + b"\n" + b'{"x": "' + b"y" * 3000 + b'"}\n' + b'{"a":' * 70 + b"1" + b"}" * 70 + b"\n" + good + b"\n")
    result = CliRunner().invoke(app, ["parse", "-k", "--summary", "--max-line-bytes", "2000", str(path)])
    assert result.exit_code == 2
    assert f"{path}, line 2: line of 3009 bytes is over the limit of 2000 bytes" in result.stderr
    assert f"{path}, line 3, field " + ".".join(["a"] * 64)[:117] + "...: JSON nested deeper than 64 levels" in result.stderr
    assert "4 items read: 2 gave records, 0 held no measurement, 2 rejected" in result.stderr
    assert len(result.stdout.splitlines()) == 2


# --- long traces -----------------------------------------------------------------------------


def _traceroute(hops: int) -> str:
    return "traceroute to 10.0.0.1 (10.0.0.1), 30 hops max, 60 byte packets\n" + "".join(
        f"{i:2d}  10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}  0.{i % 1000:03d} ms  0.5 ms  0.6 ms\n" for i in range(1, hops + 1))


def _tracepath(hops: int) -> str:
    return " 1?: [LOCALHOST]                      pmtu 1500\n" + "".join(
        f" {i}:  10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}                0.{i % 1000:03d}ms \n" for i in range(1, hops + 1)
    ) + "     Too many hops: pmtu 1500\n     Resume: pmtu 1500 \n"


def _mtr(hops: int) -> dict:
    hub = {"Loss%": 0.0, "Snt": 3, "Last": 0.1, "Avg": 0.1, "Best": 0.1, "Wrst": 0.1, "StDev": 0.0}
    return {"report": {"mtr": {"src": "a", "dst": "10.0.0.1", "tos": 0, "tests": 3},
                       "hubs": [{"count": i, "host": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}", **hub}
                                for i in range(1, hops + 1)]}}


def _scamper(hops: int) -> str:
    trace = json.loads((FIXTURES / "scamper" / "scamper_silent_hop.jsonl").read_text().splitlines()[1])
    template = trace["hops"][0]
    trace["hops"] = [{**template, "probe_ttl": i, "addr": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}"}
                     for i in range(1, hops + 1)]
    trace["hop_count"] = hops
    return json.dumps(trace)


@pytest.mark.parametrize("fmt, payload", [("traceroute", _traceroute), ("tracepath", _tracepath),
                                          ("mtr", _mtr), ("scamper", _scamper)])
def test_a_trace_of_10000_hops_gives_a_record_or_a_clear_reject_in_bounded_time(fmt, payload):
    value = envelope(fmt, payload(10_000))
    started = time.process_time()
    try:
        _, records = parse_value(value, as_dicts=True)
    except ParseError as error:
        assert error.reason and error.field, error  # e.g. hops.255.ttl: at most 255
    else:
        assert len(records) == 1
    assert time.process_time() - started < 10


# --- memory follows the largest line, not the file ------------------------------------------

_MEASURE = """import resource, subprocess, sys
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    code = subprocess.run(sys.argv[3:], stdout=out, stderr=err).returncode
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _parse_peak(tmp_path: Path, *args: str) -> tuple[int, int, str, str]:
    """(exit status, peak RSS in bytes, stdout, stderr) of `pathwatch parse` in its own process."""
    out, err = tmp_path / "out", tmp_path / "err"
    command = [sys.executable, "-c", "from pathwatch.cli import main; main()", "parse", *args]
    measured = subprocess.run([sys.executable, "-c", _MEASURE, str(out), str(err), *command],
                              capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parent.parent)
    code, peak_kib = measured.stdout.split()
    return int(code), int(peak_kib) * 1024, out.read_text(), err.read_text()


def test_parse_streams_a_large_file_and_accounts_for_every_line(tmp_path):
    lines = [line for path in sorted(EXAMPLES.glob("*.jsonl")) for line in path.read_bytes().splitlines() if line.strip()]
    many = lines * (100_000 // len(lines))
    huge = orjson.loads((EXAMPLES / "iperf3.jsonl").read_bytes().splitlines()[0])
    huge["payload"]["padding"] = "x" * (50 * MIB)  # parsers ignore what they do not read
    path = tmp_path / "big.jsonl"
    with path.open("wb") as out:
        out.write(b"\n".join(many[: len(many) // 2]) + b"\n")
        out.write(orjson.dumps(huge) + b"\n")
        out.write(b"\n".join(many[len(many) // 2 :]) + b"\n")
    size = path.stat().st_size
    expected = _expected_counts(lines, len(many) // len(lines))

    code, peak, stdout, stderr = _parse_peak(tmp_path, "-k", "--summary", "--collected-at", "2024-01-01T00:00:00Z", str(path))
    print(f"peak RSS {peak / MIB:.0f} MiB for a {size / MIB:.0f} MiB file with a 50 MiB line")
    assert code == 0, stderr
    assert f"{len(many) + 1} items read: {expected['records'] + 1} gave records, {expected['empty']} held no measurement, 0 rejected" in stderr
    assert len(stdout.splitlines()) == expected["lines_out"] + 1
    assert peak < 3 * 50 * MIB + 150 * MIB, f"peak RSS {peak / MIB:.0f} MiB for a {size / MIB:.0f} MiB file"

    code, peak, stdout, stderr = _parse_peak(tmp_path, "-k", "--summary", "--max-line-bytes", str(MIB), str(path))
    assert code == 2 and f"line {len(many) // 2 + 1}: line of " in stderr and "over the limit of 1048576 bytes" in stderr
    assert f"{len(many) + 1} items read: {expected['records']} gave records, {expected['empty']} held no measurement, 1 rejected" in stderr
    assert peak < 150 * MIB, f"peak RSS {peak / MIB:.0f} MiB with the 50 MiB line skipped unread"


def _expected_counts(lines: list[bytes], copies: int) -> Counter:
    counts: Counter = Counter()
    for line in lines:
        [item] = read_items(line)
        from pathwatch.ingest.parse import parse_item

        outcome = parse_item(item, as_dicts=True)
        counts["records" if outcome.records else "empty"] += copies
        counts["lines_out"] += len(outcome.records) * copies
    return counts


# --- publish streams too, and says what it could not send -----------------------------------


class _FakePublisher:
    sent: list = []

    def __init__(self, bootstrap, topic, settings=None):
        self.delivered = 0

    def send(self, value, key=None, timestamp_ms=None):
        _FakePublisher.sent.append((value, key))
        self.delivered += 1

    def __enter__(self):
        return self

    def __exit__(self, *_):
        pass


def test_publish_sends_each_line_byte_for_byte_and_reports_a_line_over_the_limit(tmp_path, monkeypatch):
    import pathwatch.collector.publish as publish

    monkeypatch.setattr(publish, "RawPublisher", _FakePublisher)
    _FakePublisher.sent = []
    lines = (EXAMPLES / "ping.jsonl").read_bytes().splitlines()[:2]
    path = tmp_path / "in.jsonl"
    path.write_bytes(lines[0] + b"\n" + b'{"x": "' + b"y" * 5000 + b'"}\n\n' + lines[1] + b"\n")
    result = CliRunner().invoke(app, ["publish", "--bootstrap", "unused:9092", "--topic", "raw", "--max-line-bytes", "4096", str(path)])
    assert result.exit_code == 2, result.output
    assert [value for value, _ in _FakePublisher.sent] == lines
    assert f"{path}, line 2: not published: line of 5009 bytes is over the limit of 4096 bytes" in result.stderr
    assert "published 2 messages to raw at unused:9092: 2 acknowledged; 1 not published (see above)" in result.stderr
