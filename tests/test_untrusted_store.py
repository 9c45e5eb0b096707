"""Hostile hop names and AS owners are stored as data (issue 19, item 3): they parse, validate
and reach the records topic verbatim; what the database cannot hold (a NUL, a host name past
the indexed columns' limit) is refused as a dead letter naming the field, never a failed store.

The store job writes records through Flink's JDBC sink (prepared statements, the values as
parameters); its SQL is fixed text, and these tests check that the columns the hostile strings
go to are unbounded text all the way.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import orjson
import pytest

from pathwatch.contract.records import HOST_MAX
from pathwatch.streaming import store_job
from pathwatch.streaming.normalise import DEAD, RECORD, Origin, normalise
from tests.untrusted import HOSTILE, MARKUP, SQLISH, unicode_10k

ROOT = Path(__file__).resolve().parent.parent
ORIGIN = Origin("pathwatch.raw", 0, 7)
# What a traceroute-style text line can hold: no white space, no parentheses.
TEXT_MARKUP, TEXT_SQLISH = "<svg/onload=window.__pwned=1>", "';DROP/**/TABLE/**/anomalies;--"


def pscheduler_trace(hops: list[dict], error: str | None = None) -> bytes:
    result = {"schema": 1, "succeeded": True, "paths": [hops]}
    run = {"id": "t1", "schedule": {"start": "2024-05-01T14:03:00Z", "duration": "PT20S"},
           "test": {"type": "trace", "spec": {"schema": 1, "source": "ps-a.example.edu", "dest": "198.51.100.20"}},
           "tool": {"name": "traceroute", "version": "2.1"}, "participants": ["ps-a.example.edu"], "result": result}
    return orjson.dumps({"format": "pscheduler", "source": "ps-a.example.edu", "destination": "198.51.100.20",
                         "collected_at": "2024-05-01T14:04:00Z", "payload": run})


def tracepath(names: list[str]) -> bytes:
    lines = [" 1?: [LOCALHOST]                      pmtu 1500"]
    lines += [f" {ttl}:  {name}                 0.{ttl}12ms" for ttl, name in enumerate(names, 1)]
    lines += [f" {len(names) + 1}:  198.51.100.20                 1.500ms reached", "     Resume: pmtu 1500 hops 3 back 3"]
    return orjson.dumps({"format": "tracepath", "source": "ps-a.example.edu", "destination": "198.51.100.20",
                         "collected_at": "2024-05-01T14:04:00Z", "payload": "\n".join(lines) + "\n"})


def _one(body: bytes):
    [out] = normalise(body, ORIGIN, 1_714_572_240_000)
    return out


def test_hostile_hop_names_and_as_owners_are_a_record_verbatim():
    hops = [{"ip": "192.0.2.1", "hostname": text, "rtt": "PT0.0004S", "as": {"number": 64500, "owner": owner}}
            for text, owner in zip(HOSTILE, reversed(HOSTILE))]
    out = _one(pscheduler_trace(hops + [{"ip": "198.51.100.20", "rtt": "PT0.0153S"}]))
    assert out.target == RECORD, out.value
    assert [h["hostname"] for h in out.value["hops"][:3]] == list(HOSTILE)
    assert [h["as_owner"] for h in out.value["hops"][:3]] == list(reversed(HOSTILE))
    again = orjson.loads(out.text)        # what the records topic carries, and Flink's JSON format reads
    assert [h["hostname"] for h in again["hops"][:3]] == list(HOSTILE)
    assert json.loads(out.text.decode("utf-8"))["hops"][2]["as_owner"] == MARKUP


def test_hostile_names_in_tracepath_text_are_hop_addresses_and_names_verbatim():
    out = _one(tracepath([TEXT_MARKUP, TEXT_SQLISH]))
    assert out.target == RECORD, out.value
    assert [(h["ip"], h["hostname"]) for h in out.value["hops"][:2]] == [(TEXT_MARKUP, TEXT_MARKUP),
                                                                          (TEXT_SQLISH, TEXT_SQLISH)]


def test_a_hop_name_past_the_host_limit_is_a_dead_letter_naming_it():
    name = unicode_10k().replace(" ", "")[: HOST_MAX + 1]
    out = _one(tracepath(["r1.example", name]))
    assert out.target == DEAD
    assert out.value["field"] == "hops.1.ip" and "255 characters" in out.value["reason"]
    assert out.value["input_encoding"] == "utf-8" and orjson.loads(out.value["input"])["payload"].count(name) == 1
    assert _one(tracepath(["r1.example", name[:HOST_MAX]])).target == RECORD


def test_a_10kb_hop_hostname_is_stored_not_limited():
    out = _one(pscheduler_trace([{"ip": "192.0.2.1", "hostname": unicode_10k()}, {"ip": "198.51.100.20"}]))
    assert out.target == RECORD and out.value["hops"][0]["hostname"] == unicode_10k()


@pytest.mark.parametrize("where", ["hostname", "owner", "error"])
def test_a_nul_character_is_a_dead_letter_naming_the_field(where):
    hop = {"ip": "192.0.2.1", "hostname": "gw.example.", "as": {"number": 1, "owner": "X"}}
    if where == "owner":
        hop["as"]["owner"] = "EVIL\x00NET"
    else:
        hop[where] = f"bad\x00{where}"
    out = _one(pscheduler_trace([hop, {"ip": "198.51.100.20"}]))
    assert out.target == DEAD
    assert out.value["field"] == {"hostname": "hops.0.hostname", "owner": "hops.0.as_owner", "error": "hops.0.error"}[where]
    assert "NUL" in out.value["reason"]


def test_a_dead_letter_of_raw_nul_bytes_keeps_them_as_base64():
    body = b"1:  r1\x00.example  0.1ms\n"
    out = _one(body)
    assert out.target == DEAD and out.value["input_encoding"] == "base64"
    assert base64.b64decode(out.value["input"]) == body


def test_a_literal_backslash_u0000_is_text_not_a_nul():
    out = _one(pscheduler_trace([{"ip": "192.0.2.1", "hostname": "a\\u0000b"}, {"ip": "198.51.100.20"}]))
    assert out.target == RECORD and out.value["hops"][0]["hostname"] == "a\\u0000b"


def _columns(ddl: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"`?(\w+)`?\s+(STRING|[A-Z]+(?:\(\d+\))?)", ddl)}


def test_hostile_text_goes_to_unbounded_columns_all_the_way():
    """Flink reads these fields as STRING and the sinks write STRING into ``text`` columns: no
    length or character set in between where a long name would be cut or fail the row."""
    # The hops travel as the record's JSON text to trace_paths.hops (jsonb), whose trigger reads
    # each hop's fields as text (->>) into trace_hops' text columns.
    assert _columns(store_job.RECORD_FIELDS)["hops"] == "STRING"
    assert _columns(store_job.SINKS["paths_sink"][1])["hops"] == "STRING"
    paths = (ROOT / "sql" / "008_trace_paths.sql").read_text()
    assert re.search(r"^\s+hops\s+jsonb\b", paths, re.M)
    for column in ("ip", "hostname", "as_owner", "error"):
        assert f"hop->>'{column}'" in paths, column
    ddl = (ROOT / "sql" / "001_measurements.sql").read_text()
    table = re.search(r"CREATE TABLE trace_hops \((.*?)\n\);", ddl, re.S).group(1)
    for column in ("ip", "hostname", "as_owner", "error"):
        assert re.search(rf"^\s+{column}\s+text\b", table, re.M), column
    for kind in ("throughput", "latency", "trace"):
        table = re.search(rf"CREATE TABLE {kind} \((.*?)\n\);", ddl, re.S).group(1)
        for column in ("source", "destination", "error"):
            assert re.search(rf"^\s+{column}\s+text\b", table, re.M), (kind, column)
