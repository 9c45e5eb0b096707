"""The record contract's validators that give plain JSON-ready dicts instead of model objects.

Each record model's own pydantic-core schema is rewritten with every model (the record and its
nested ``Hop``/``ThroughputInterval``) turned into a typed dict of the same fields, in the same
order, with the same defaults, constraints and config. Validating a parser's field dict with it
applies exactly the model's rules and conversions (``5`` becomes ``5.0`` in a float field) and
returns what ``Model.model_validate(fields).model_dump(mode="json")`` would, in about half the
time: no model objects are built and none are dumped again.

The streaming normalise step and ``pathwatch parse`` use it; the models stay the contract (the
JSON Schema is generated from them) and what strict callers get. ``tests/test_lean_records.py``
keeps the two equal.

>>> validate("latency", {"id": "x", "source": "a", "destination": "b", "time": "2024-01-01T00:00:00Z",
...     "tool": "ping", "format": "ping", "one_way": False, "delay_min_ms": 1})["delay_min_ms"]
1.0
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel
from pydantic_core import SchemaValidator, core_schema

from .records import RECORD_TYPES

# The core-schema types the record models are made of, besides "model"; anything else would need
# thought (a union of models, a definitions reference), so it stops the import instead.
_LEAVES = frozenset({"str", "int", "float", "bool", "literal"})
_WRAPPERS = {"nullable": "schema", "default": "schema", "list": "items_schema"}


def dict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a model's core schema, or a part of one) with every model made a typed dict."""
    kind = schema["type"]
    if kind == "model":
        model: type[BaseModel] = schema["cls"]
        fields = schema["schema"]["fields"]
        config = schema.get("config", {})
        if schema["schema"].get("computed_fields") or schema.get("post_init") or any(
            set(field) - {"type", "schema", "metadata"} for field in fields.values()
        ):  # model_dump would write or rename something a typed dict does not
            raise TypeError(f"{model.__name__} has computed fields, aliases or a post-init: not rewritten")
        return core_schema.typed_dict_schema(
            {
                name: core_schema.typed_dict_field(
                    dict_schema(fields[name]["schema"]), required=fields[name]["schema"]["type"] != "default"
                )
                for name in model.model_fields  # declaration order: the order model_dump writes
            },
            extra_behavior=config.get("extra_fields_behavior"),
            config=config,
        )
    if kind in _WRAPPERS:
        inner = _WRAPPERS[kind]
        return {**schema, inner: dict_schema(schema[inner])}
    if kind in _LEAVES:
        return schema
    raise TypeError(f"record schema has a {kind!r} part, which plain.dict_schema does not rewrite")


_VALIDATORS = {kind: SchemaValidator(dict_schema(model.__pydantic_core_schema__)) for kind, model in RECORD_TYPES.items()}


def validate(kind: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The JSON-ready dict of a ``kind`` record, checked as its model checks it.

    Raises ``pydantic.ValidationError``; its wording can differ from the model's for input no
    parser builds (a hop that is not a dict), so callers that report errors take them from the
    model (see ``pathwatch.ingest.build.record``).
    """
    return _VALIDATORS[kind].validate_python(fields)


def dumps(record: dict[str, Any]) -> bytes:
    """A record dict as JSON, the bytes its model's ``model_dump_json()`` writes.

    orjson writes the same text for every value a record holds except integers beyond 64 bits,
    which it refuses; those few records go through the model.

    >>> dumps(validate("latency", {"id": "x", "source": "a", "destination": None, "one_way": True,
    ...     "time": "2024-01-01T00:00:00Z", "tool": "owping", "format": "owping", "ttl_max": 2**70}))[-33:]
    b'"ttl_max":1180591620717411303424}'
    """
    try:
        return orjson.dumps(record)
    except orjson.JSONEncodeError:
        return RECORD_TYPES[record["kind"]].model_validate(record).model_dump_json().encode()
