"""The record contract: committed schemas match the types, and every parsed record satisfies them."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from pathwatch.contract import schemas
from pathwatch.contract.records import SCHEMA_VERSION
from pathwatch.ingest.files import parse_paths
from pathwatch.ingest.parse import Defaults

from .conftest import FIXTURES

MEASUREMENT = f"measurement.v{SCHEMA_VERSION}.schema.json"


def test_committed_schemas_equal_the_generated_ones():
    """Run `pathwatch schema --write` after changing a record type; this test says when it was forgotten."""
    for name, schema in schemas.generate().items():
        assert schemas.load(name) == json.loads(json.dumps(schema)), f"{name} is stale"


def test_committed_schemas_are_valid_json_schema():
    for name in schemas.generate():
        Draft202012Validator.check_schema(schemas.load(name))


def _fixture_records():
    paths = sorted(str(p) for p in FIXTURES.rglob("*") if p.is_file())
    defaults = Defaults(source="src.example", destination="dst.example", collected_at="2024-01-01T00:00:00Z")
    return [
        (located.origin, record)
        for located in parse_paths(paths, defaults)
        if located.outcome.error is None
        for record in located.outcome.records
    ]


def test_every_fixture_record_validates_against_the_committed_schema():
    validator = Draft202012Validator(schemas.load(MEASUREMENT))
    records = _fixture_records()
    kinds = {record.kind for _, record in records}
    assert kinds == {"throughput", "latency", "trace"}, kinds
    for origin, record in records:
        errors = sorted(validator.iter_errors(json.loads(record.model_dump_json())), key=str)
        assert not errors, f"{origin}: {errors[0].message} at {list(errors[0].path)}"


def test_schema_rejects_a_record_missing_its_id():
    validator = Draft202012Validator(schemas.load(MEASUREMENT))
    _, record = _fixture_records()[0]
    document = json.loads(record.model_dump_json())
    del document["id"]
    assert not validator.is_valid(document)


def test_envelope_schema_accepts_examples_and_rejects_unknown_fields():
    validator = Draft202012Validator(schemas.load("envelope.v1.schema.json"))
    good = {"format": "ping", "source": "a", "destination": "b", "collected_at": "2024-01-01T00:00:00Z", "payload": "PING"}
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "colour": "red"})
    assert not validator.is_valid({**good, "payload": 7})


@pytest.mark.parametrize("kind", ["throughput", "latency", "trace"])
def test_units_are_in_the_field_names(kind):
    properties = schemas.load(MEASUREMENT)["$defs"][kind.capitalize()]["properties"]
    unitless = {"delay", "rtt", "throughput", "jitter", "duration", "mss", "mtu", "pmtu"}
    assert not unitless & set(properties), "a measured quantity without a unit suffix"
