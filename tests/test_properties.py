"""Property tests: mutated and truncated inputs yield records or the project's own error, nothing else."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathwatch.contract.records import Latency, Throughput, Trace
from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.parse import Defaults, parse_item
from pathwatch.ingest.reader import Item, read_items

from .conftest import FIXTURES
from .fuzz_inputs import MUTATIONS, paths_in

FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl", ".txt"})
JSON_FILES = [p for p in FIXTURE_FILES if p.read_bytes().lstrip()[:1] in (b"{", b"[")]
TEXT_FILES = [p for p in FIXTURE_FILES if p not in JSON_FILES]
DEFAULTS = Defaults(source="s.example", destination="d.example", collected_at="2024-01-01T00:00:00Z")
RECORD_TYPES = (Throughput, Latency, Trace)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12), st.just([]), st.just({}),
)


def _check(data: bytes) -> None:
    """Every item parses to valid records or a ParseError; any other exception fails the test."""
    for item in read_items(data):
        outcome = parse_item(item, DEFAULTS)
        if outcome.error is not None:
            assert isinstance(outcome.error, ParseError)
            assert str(outcome.error)
        else:
            assert all(isinstance(record, RECORD_TYPES) for record in outcome.records)


def _mutate(document, path, action, leaf):
    if not path:
        return leaf
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "delete":
        del parent[last]
    elif action == "truncate" and isinstance(parent[last], list):
        del parent[last][len(parent[last]) // 2 :]
    else:
        parent[last] = leaf
    return document


@SETTINGS
@given(data=st.data())
def test_mutated_json_inputs_never_crash(data):
    path_file: Path = data.draw(st.sampled_from(JSON_FILES))
    document = json.loads(path_file.read_text()) if path_file.suffix == ".json" else json.loads(path_file.read_text().splitlines()[0])
    path = data.draw(st.sampled_from(list(paths_in(document))))
    action = data.draw(st.sampled_from(["replace", "delete", "truncate"]))
    mutated = _mutate(document, path, action, data.draw(json_leaves))
    _check(json.dumps(mutated).encode())


@SETTINGS
@given(data=st.data())
def test_truncated_inputs_never_crash(data):
    raw = data.draw(st.sampled_from(FIXTURE_FILES)).read_bytes()
    cut = data.draw(st.integers(0, len(raw)))
    _check(raw[:cut])


@SETTINGS
@given(data=st.data())
def test_mutated_text_inputs_never_crash(data):
    _check(MUTATIONS["text_lines"](data, data.draw(st.sampled_from(TEXT_FILES)).read_bytes()))


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash(blob):
    _check(blob)


def test_envelope_with_every_field_mutated_is_an_error_not_a_crash():
    base = {"format": "ping", "source": "a", "destination": "b", "collected_at": "2024-01-01T00:00:00Z", "payload": "PING"}
    for key in base:
        for bad in (None, 5, [], {}, "", "not-a-time"):
            _check(json.dumps({**base, key: bad}).encode())
    assert isinstance(parse_item(Item("line 1", b"", {**base, "format": 3})).error, ParseError)


def test_out_of_range_epoch_times_are_parse_errors():
    from pathwatch.ingest.fields import epoch_time

    for huge in (1e12, 2**62):
        try:
            epoch_time({"t": huge}, "t", "start")
        except ParseError as error:
            assert error.field == "start.t"
        else:
            raise AssertionError(f"{huge} s should not be a usable time")
