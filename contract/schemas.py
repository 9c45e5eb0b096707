"""Generate and locate the committed JSON Schema files of the record contract."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import TypeAdapter

from .anomaly import ANOMALY_SCHEMA_VERSION, AnomalyRecord
from .envelope import RawEnvelope
from .records import SCHEMA_VERSION, Measurement

SCHEMA_DIR = Path(__file__).parent / "schemas"
BASE_ID = "https://pathwatch.invalid/schemas"


def _named(name: str, schema: dict, title: str) -> dict:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"{BASE_ID}/{name}",
        "title": title,
        **schema,
    }


def generate() -> dict[str, dict]:
    """{file name: schema} for the envelope, the measurement records and anomalies, from the Python types."""
    measurement = f"measurement.v{SCHEMA_VERSION}.schema.json"
    envelope = "envelope.v1.schema.json"
    anomaly = f"anomaly.v{ANOMALY_SCHEMA_VERSION}.schema.json"
    return {
        anomaly: _named(anomaly, AnomalyRecord.model_json_schema(), f"pathwatch anomaly v{ANOMALY_SCHEMA_VERSION}"),
        envelope: _named(envelope, RawEnvelope.model_json_schema(), "pathwatch raw envelope v1"),
        measurement: _named(
            measurement,
            TypeAdapter(Measurement).json_schema(),
            f"pathwatch canonical measurement record v{SCHEMA_VERSION}",
        ),
    }


def load(name: str) -> dict:
    """A committed schema by file name."""
    return json.loads((SCHEMA_DIR / name).read_text())


def write(generated: dict[str, dict]) -> list[Path]:
    """Write the generated schemas into the package's schema directory."""
    paths = []
    for name, schema in generated.items():
        path = SCHEMA_DIR / name
        path.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
        paths.append(path)
    return paths
