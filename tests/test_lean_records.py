"""The lean parse path (records as JSON-ready dicts, ``as_dicts=True``) gives what the validated path gives.

The validated path builds the pydantic record models and dumps them; the lean path validates the
same fields into plain dicts (``pathwatch.contract.plain``). Everything a consumer sees must be
equal: the JSON text of every record (every key, in order, ``5.0`` not ``5``), the bytes
``pathwatch parse`` writes, and for bad input the same error, field and reason, so the streaming
normalise step writes the same dead letter. Checked on every fixture and bundled example, a
simulated mesh, and hypothesis-generated variations of them.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pathwatch.contract import plain
from pathwatch.contract.ids import PATHWATCH_NAMESPACE, measurement_id
from pathwatch.contract.records import RECORD_TYPES, Hop
from pathwatch.ingest import registry
from pathwatch.ingest.build import record
from pathwatch.ingest.context import Context
from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.examples import example_path
from pathwatch.ingest.files import parse_paths
from pathwatch.ingest.parse import Defaults, parse_item
from pathwatch.ingest.reader import read_items
from pathwatch.sim.config import SimConfig
from pathwatch.sim.generate import path_lines, plan
from pathwatch.streaming.normalise import DEAD, Origin, normalise
from bench.parse_bench import validated_normalise  # the reference: models, dumped (also what the bench times)

from .conftest import FIXTURES
from .fuzz_inputs import paths_in
from .test_cli import run

FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl", ".txt"})
EXAMPLE_FILES = [example_path(fmt) for fmt in registry.formats().values()]
JSON_FORMATS = [name for name, fmt in registry.formats().items() if fmt.payload == "json"]
BARE = Defaults(source="s.example", destination="d.example", collected_at="2024-01-01T00:00:00Z")
ORIGIN = Origin("pathwatch.raw", 3, 41)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _both_paths_agree(item, defaults: Defaults = Defaults()) -> None:
    """The lean outcome of ``item`` equals the validated one: records as JSON text, or the error."""
    validated = parse_item(item, defaults)
    lean = parse_item(item, defaults, as_dicts=True)
    assert lean.format == validated.format
    if validated.error is not None:
        assert lean.error is not None and (lean.error.field, lean.error.reason) == (validated.error.field, validated.error.reason)
        assert lean.records == []
        return
    assert lean.error is None
    assert [type(r) for r in lean.records] == [dict] * len(validated.records)
    for model, data in zip(validated.records, lean.records, strict=True):
        assert _text(data) == _text(model.model_dump(mode="json"))
        assert plain.dumps(data) == model.model_dump_json().encode()  # what `pathwatch parse` writes


def _text(value) -> str:
    """JSON text to compare values by: ``==`` takes 1, 1.0 and True for equal, the wire does not, and
    the text fixes key order too (json, not orjson: it also writes integers beyond 64 bits)."""
    return json.dumps(value)


def _same_outputs(body: bytes) -> None:
    ours, reference = normalise(body, ORIGIN, 1_700_000_000_123), validated_normalise(body, ORIGIN, 1_700_000_000_123)
    assert [(o.target, o.key, o.time_ms, _text(o.value)) for o in ours] == [
        (o.target, o.key, o.time_ms, _text(o.value)) for o in reference
    ]


@pytest.mark.parametrize("path", FIXTURE_FILES + EXAMPLE_FILES, ids=lambda p: p.relative_to(p.parents[1]).as_posix())
def test_every_fixture_and_example_gives_the_same_records_or_error(path: Path):
    data = path.read_bytes()
    for item in read_items(data):
        _both_paths_agree(item, BARE)
        if path.parent.name in registry.formats():  # also read as the format its folder names
            _both_paths_agree(item, Defaults(path.parent.name, "s.example", "d.example", "2024-01-01T00:00:00Z"))
    _same_outputs(data)
    for line in data.splitlines():  # each envelope line as its own raw-topic message
        if line.strip():
            _same_outputs(line)


def test_a_simulated_mesh_gives_the_same_normalise_outputs():
    sim = plan(SimConfig(seed=11, hosts=3, days=2))
    lines = [line.data for path in sim.mesh.paths for line in path_lines(sim, *path.key)]
    assert len(lines) > 1000 and {orjson.loads(line)["format"] for line in lines} >= {"pscheduler", "iperf3"}
    for line in lines:
        _same_outputs(line)


def test_pathwatch_parse_writes_the_model_json_bytes():
    rejected = FIXTURES / "real_samples" / "pscheduler" / "archiver-input.json"  # a simplestream test
    inputs = [str(p) for p in [*EXAMPLE_FILES, FIXTURES / "iperf3" / "iperf3.12_udp_10M_loopback.json", rejected]]
    done = run("parse", "--keep-going", *inputs)
    assert done.returncode == 2 and done.stderr.count(b"\n") == 1, done.stderr
    expected = [model.model_dump_json().encode() + b"\n" for located in parse_paths(inputs) for model in located.outcome.records]
    assert done.stdout == b"".join(expected)


def test_lean_records_carry_every_model_field_in_declaration_order():
    for item in read_items(b"\n".join(p.read_bytes() for p in EXAMPLE_FILES)):
        for data in parse_item(item, as_dicts=True).records:
            assert list(data) == list(RECORD_TYPES[data["kind"]].model_fields)
            for hop in data.get("hops", []):
                assert list(hop) == list(Hop.model_fields)


def _trace_fields(**changes) -> dict:
    fields = {"source": "a.example", "destination": "b.example", "time": "2024-01-01T00:00:00Z", "tool": "traceroute",
              "hops": [{"ttl": 1, "ip": "10.0.0.1", "rtt_ms": 1}], "hop_count": 1, "path_id": "p", "reached": None}
    return {**fields, **changes}


@pytest.mark.parametrize("changes", [
    {},
    {"hops": [{"ttl": 0, "ip": "10.0.0.1"}]},            # parsers do not bound the TTL; the contract does
    {"hops": [{"ttl": 1, "ip": "10.0.0.1", "rtt_ms": -1}]},
    {"hops": [["not", "a", "hop"]]},                     # the typed dict words this error unlike the model
    {"hops": [{"ttl": 1, "ip": None, "port": 33434}]},   # a key the contract does not have
    {"time": "999-01-01T00:00:00Z"},                     # format_utc's rendering of years before 1000
    {"reached": "yes"}, {"hop_count": 1.0}, {"hop_count": True}, {"probe_id": 2**70},
], ids=repr)
def test_the_builder_gives_the_same_record_or_error_either_way(changes):
    outcomes = []
    for as_dicts in (False, True):
        try:
            built = record("trace", Context("traceroute", as_dicts=as_dicts), copy.deepcopy(_trace_fields(**changes)))
            outcomes.append(plain.dumps(built) if as_dicts else built.model_dump_json().encode())
        except ParseError as error:
            outcomes.append((error.field, error.reason))
    assert outcomes[0] == outcomes[1]


def test_the_rewrite_refuses_schemas_it_does_not_know():
    with pytest.raises(TypeError, match="'union'"):
        plain.dict_schema({"type": "union", "choices": []})


def test_measurement_ids_are_the_uuid5_of_the_joined_key():
    for extras in [(), ("tcp",), (None, 17, 4242), ("é", True)]:
        key = "|".join(["trace", "a", "", "2024-01-01T00:00:00Z", "mtr", *(str(e) for e in extras)])
        assert measurement_id("trace", "a", None, "2024-01-01T00:00:00Z", "mtr", *extras) == str(uuid.uuid5(PATHWATCH_NAMESPACE, key))


# --- generated inputs -------------------------------------------------------------------------

def _json_templates() -> list[dict]:
    """Every JSON envelope the repository has for the JSON formats (examples, and fixtures wrapped)."""
    templates = []
    for name in JSON_FORMATS:
        for line in example_path(registry.get(name)).read_bytes().splitlines():
            if line.strip():
                templates.append(orjson.loads(line))
        for path in sorted((FIXTURES / name).glob("*.json")):
            payload = json.loads(path.read_text())
            if isinstance(payload, dict):
                templates.append({"format": name, "source": "s.example", "destination": "d.example",
                                  "collected_at": "2024-01-01T00:00:00Z", "payload": payload})
    return templates


JSON_TEMPLATES = _json_templates()
TEXT_TEMPLATES = [orjson.loads(line) for fmt in registry.formats().values() if fmt.payload == "text"
                  for line in example_path(fmt).read_bytes().splitlines() if line.strip()]

numbers = st.one_of(
    st.integers(-5, 300), st.integers(-(2**63), 2**64 - 1), st.integers(2**64, 2**70),
    st.floats(allow_nan=False, allow_infinity=False), st.floats(-1e3, 1e3),
    st.sampled_from([0, 0.0, -0.0, 1.0, 3.0, 255, 256, 1e16, 1.7976931348623157e308, 5e-324]), st.booleans(),
)  # JSON has no NaN or infinity; text payloads get them as words (below)
times = st.one_of(
    st.datetimes().map(lambda moment: moment.isoformat() + "Z"),
    st.sampled_from(["2024-01-01T00:00:00.5+02:00", "0999-12-31T23:00:00Z", "0001-01-01T00:00:00+01:00",
                     "9999-12-31T23:00:00-05:00", "2024-13-01T00:00:00Z", "2024-01-01T00:00:00", ""]),
)  # years before 1000 pass the parsers and fail the contract's pattern: the lean path's error branch
strings = st.one_of(
    st.text(max_size=12), times,
    st.sampled_from(["", "tcp", "UDP", "icmp", "10.0.0.1", "2001:db8::1", "ps.example", "*", "PT0.5S", "é"]),
)


def _leaves(value):
    """Paths to every value in a JSON document (lists: their first 6 elements)."""
    return paths_in(value, list_items=6)


def _vary(draw, document: dict) -> dict:
    """``document`` with a few values replaced by others of their kind, and a few members left out."""
    document = copy.deepcopy(document)
    paths = [p for p in _leaves(document) if p]
    for _ in range(draw(st.integers(1, 6))):
        path = draw(st.sampled_from(paths))
        parent = document
        try:
            for step in path[:-1]:
                parent = parent[step]
            current = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed or replaced this part
        action = draw(st.sampled_from(["same kind", "same kind", "drop", "null"]))
        if action == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif action == "null":
            parent[path[-1]] = None
        elif isinstance(current, bool | int | float):
            parent[path[-1]] = draw(numbers)
        elif isinstance(current, str):
            parent[path[-1]] = draw(strings)
    if draw(st.integers(0, 3)) == 0:
        document["collected_at"] = draw(times)
    return document


@SETTINGS
@given(data=st.data())
def test_generated_json_envelopes_give_the_same_records_or_dead_letter(data):
    envelope = _vary(data.draw, data.draw(st.sampled_from(JSON_TEMPLATES)))
    body = json.dumps(envelope).encode()  # orjson.dumps refuses integers beyond 64 bits
    for item in read_items(body):
        _both_paths_agree(item)
    _same_outputs(body)


@pytest.mark.parametrize("mss", [2**53 - 1, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64])
def test_an_integer_beyond_int64_is_the_same_dead_letter_on_both_paths(mss):
    # orjson writes integers up to 2**64 - 1 (unsigned); no consumer holds those from 2**63 either.
    envelope = copy.deepcopy(next(t for t in JSON_TEMPLATES if t["format"] == "iperf3"))
    envelope["payload"]["start"]["tcp_mss_default"] = mss
    body = json.dumps(envelope).encode()
    _same_outputs(body)
    (output, *_) = normalise(body, ORIGIN, 1_700_000_000_123)
    assert (output.target == DEAD) == (mss >= 2**63)
    if output.target == DEAD:
        assert (output.value["field"], output.value["reason"]) == ("mss_bytes", "mss_bytes: an integer beyond 64 bits")


@SETTINGS
@given(data=st.data())
def test_generated_text_envelopes_give_the_same_records_or_dead_letter(data):
    envelope = dict(data.draw(st.sampled_from(TEXT_TEMPLATES)))
    lines = envelope["payload"].splitlines()
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(lines) - 1))
        if data.draw(st.booleans()):  # a line's leading number (a hop's TTL) to another: the contract bounds TTLs
            lines[index] = re.sub(r"^(\s*)\d+", lambda m: m.group(1) + str(data.draw(st.integers(0, 2**70))), lines[index])
            continue
        at = data.draw(st.integers(0, len(lines[index])))
        insert = data.draw(st.one_of(strings, numbers.map(str), st.sampled_from(["nan", "inf", "-1", "1e400"])))
        lines[index] = lines[index][:at] + insert + lines[index][at + data.draw(st.integers(0, 3)):]
    envelope["payload"] = "\n".join(lines) + "\n"
    for key in ("source", "destination", "collected_at"):
        if data.draw(st.integers(0, 3)) == 0:
            envelope.pop(key, None)
    if data.draw(st.integers(0, 3)) == 0:
        envelope["collected_at"] = data.draw(times)
    body = json.dumps(envelope).encode()
    for item in read_items(body):
        _both_paths_agree(item)
    _same_outputs(body)


@pytest.mark.parametrize("collected_at", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00", "0999-12-31T23:00:00Z"])
def test_an_envelope_time_past_the_calendar_is_the_same_dead_letter_not_a_crash(collected_at):
    envelope = {**TEXT_TEMPLATES[0], "collected_at": collected_at}
    body = json.dumps(envelope).encode()
    _same_outputs(body)
    (out,) = normalise(body, ORIGIN, 0)
    assert out.target == DEAD and out.value["field"] in ("collected_at", "time")
