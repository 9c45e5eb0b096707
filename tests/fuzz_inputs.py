"""Mutated real inputs for the fuzz test (tests/test_fuzz.py) and bench/fuzz_bench.py.

Seeds are the real fixtures of one format (tests/fixtures/FORMAT, tests/fixtures/real_samples,
ingest/example_envelopes): each line of a JSON Lines file, each other file whole. A mutated input is a
seed with one to three mutations: byte flips, truncation, duplicated lines, huge numbers, values
of the wrong type, unicode, the lines of a text payload dropped, repeated or garbled, deep
nesting and repeated slices (long traces, long lines).

:func:`check` runs one input the way ``pathwatch parse`` does (``read_stream``, ``parse_item``
on the lean path, ``plain.dumps``) and returns its records and ParseErrors; any other exception
is a crash and propagates.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path

from hypothesis import strategies as st

from pathwatch.contract import plain
from pathwatch.ingest import registry
from pathwatch.ingest.errors import ParseError
from pathwatch.ingest.parse import Defaults, parse_item
from pathwatch.ingest.reader import read_items, read_stream

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
DEFAULTS = Defaults(source="s.example", destination="d.example", collected_at="2024-01-01T00:00:00Z")
FORMATS = sorted(registry.formats())
SAMPLE_DIRS = {"atlas": "ripe_atlas"}  # tests/fixtures/real_samples/DIR, where it is not the format's name

HUGE_NUMBERS = [b"1e400", b"-1e400", b"1e308", b"99999999999999999999999999", b"-9223372036854775809",
                b"18446744073709551616", b"1" + b"0" * 400, b"0.000000000000000000001", b"NaN", b"Infinity",
                b"-0", b"4294967296", b"2147483648", b"-1", b"0", b"1.5e-320"]
UNICODE = ["\x00", "\ufeff", "\u2028", "\u0663\u0664", "\U0001d7d9", "\u00e9", "\u202e", "ms\u00a0", "\uff11"]
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12), st.sampled_from(["", "1", "-5", "1e999", "nan", "2024-13-45T99:99:99Z", "::1", "*"]),
    st.just([]), st.just({}), st.just([None]), st.just({"": None}),
)


def seeds(fmt: str) -> list[bytes]:
    """The real inputs of ``fmt``: each line of its JSON Lines files, each other file whole."""
    files = [p for p in (FIXTURES / fmt).rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl", ".txt"}]
    files += [p for p in (FIXTURES / "real_samples" / SAMPLE_DIRS.get(fmt, fmt)).rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl", ".txt"}]
    files += [p for p in (FIXTURES / "real_samples" / f"{fmt}.jsonl", ROOT / "ingest" / "example_envelopes" / f"{fmt}.jsonl") if p.is_file()]
    found: list[bytes] = []
    for path in sorted(files):
        data = path.read_bytes()
        found += [line for line in data.splitlines() if line.strip()] if path.suffix == ".jsonl" else [data]
    return found


def _flip(data: st.DataObject, raw: bytes) -> bytes:
    if not raw:
        return raw
    at = data.draw(st.integers(0, len(raw) - 1))
    return raw[:at] + bytes([data.draw(st.integers(0, 255))]) + raw[at + 1 :]


def _truncate(data: st.DataObject, raw: bytes) -> bytes:
    return raw[: data.draw(st.integers(0, len(raw)))]


def _duplicate_lines(data: st.DataObject, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    at = data.draw(st.integers(0, len(lines) - 1))
    lines[at:at] = [lines[at]] * data.draw(st.integers(1, 3))
    return b"\n".join(lines)


def _huge_number(data: st.DataObject, raw: bytes) -> bytes:
    numbers = list(NUMBER.finditer(raw))
    if not numbers:
        return raw
    match = data.draw(st.sampled_from(numbers))
    return raw[: match.start()] + data.draw(st.sampled_from(HUGE_NUMBERS)) + raw[match.end() :]


def _unicode(data: st.DataObject, raw: bytes) -> bytes:
    at = data.draw(st.integers(0, len(raw)))
    text = data.draw(st.one_of(st.sampled_from(UNICODE), st.text(max_size=4)))
    return raw[:at] + text.encode("utf-8", "surrogatepass") + raw[at:]


def _repeat(data: st.DataObject, raw: bytes) -> bytes:
    """A slice repeated up to 300 times: long traces, many intervals, long lines."""
    if not raw:
        return raw
    start = data.draw(st.integers(0, len(raw) - 1))
    end = data.draw(st.integers(start + 1, min(len(raw), start + 400)))
    return raw[:end] + raw[start:end] * data.draw(st.integers(1, 300)) + raw[end:]


def _decoded(raw: bytes):
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def paths_in(value, prefix=(), list_items: int = 4):
    """Every key path into a decoded JSON value (lists: their first ``list_items`` items)."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths_in(child, prefix + (key,), list_items)
    elif isinstance(value, list):
        for index, child in enumerate(value[:list_items]):
            yield from paths_in(child, prefix + (index,), list_items)


def _replace_at(document, path, new):
    if not path:
        return new
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return document


def _wrong_type(data: st.DataObject, raw: bytes) -> bytes:
    """A JSON value (anywhere, payload included) replaced by a leaf of another type, or deleted."""
    document = _decoded(raw)
    if not isinstance(document, (dict, list)):
        return raw
    path = data.draw(st.sampled_from(list(paths_in(document))))
    if path and data.draw(st.booleans()):
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        del parent[path[-1]]
    else:
        document = _replace_at(document, path, data.draw(json_leaves))
    return json.dumps(document).encode()


def _deep(data: st.DataObject, raw: bytes) -> bytes:
    """A JSON value replaced by nesting deeper than the limit (and than orjson's own)."""
    document = _decoded(raw)
    if not isinstance(document, (dict, list)):
        return raw
    path = data.draw(st.sampled_from(list(paths_in(document))))
    depth = data.draw(st.sampled_from([63, 65, 300, 1100]))
    text = json.dumps(_replace_at(document, path, "\x00DEEP\x00"))
    nested = ("[" * depth + "]" * depth) if data.draw(st.booleans()) else ('{"a":' * depth + "1" + "}" * depth)
    return text.replace('"\\u0000DEEP\\u0000"', nested).encode()


def _text_lines(data: st.DataObject, raw: bytes) -> bytes:
    """The lines of a text payload (bare, or an envelope's ``payload``) dropped, doubled or garbled."""
    document = _decoded(raw)
    in_envelope = isinstance(document, dict) and isinstance(document.get("payload"), str)
    text = document["payload"] if in_envelope else raw.decode("utf-8", "replace")
    lines = text.splitlines()
    if lines:
        at = data.draw(st.integers(0, len(lines) - 1))
        action = data.draw(st.sampled_from(["drop", "duplicate", "replace", "garble"]))
        if action == "drop":
            del lines[at]
        elif action == "duplicate":
            lines.insert(at, lines[at])
        elif action == "replace":
            lines[at] = data.draw(st.text(max_size=40))
        else:
            cut = data.draw(st.integers(0, len(lines[at])))
            junk = data.draw(st.sampled_from(["-1", "nan", "*", "999999999999", "x", " ", "ms", "(", ":", "!", "1e999", "\t"]))
            lines[at] = lines[at][:cut] + junk + lines[at][cut:]
    text = "\n".join(lines)
    if in_envelope:
        return json.dumps({**document, "payload": text}).encode()
    return text.encode("utf-8", "surrogatepass")


MUTATIONS: dict[str, Callable[[st.DataObject, bytes], bytes]] = {
    "flip": _flip, "truncate": _truncate, "duplicate_lines": _duplicate_lines, "huge_number": _huge_number,
    "unicode": _unicode, "repeat": _repeat, "wrong_type": _wrong_type, "deep": _deep, "text_lines": _text_lines,
}


def mutated(data: st.DataObject, fmt: str, pool: list[bytes]) -> bytes:
    """One seed of ``pool`` with one to three mutations."""
    raw = data.draw(st.sampled_from(pool), label=f"{fmt} seed")
    for _ in range(data.draw(st.integers(1, 3))):
        raw = MUTATIONS[data.draw(st.sampled_from(sorted(MUTATIONS)), label="mutation")](data, raw)
    return raw


def check(raw: bytes) -> tuple[int, int, list[ParseError]]:
    """(items, records, errors) of one input read and parsed as ``pathwatch parse`` does; every
    item gives records, nothing, or a ParseError with a reason. Any other exception propagates: a crash."""
    items = list(read_stream(io.BytesIO(raw)))
    assert [_key(item) for item in items] == [_key(item) for item in read_items(raw)], "stream and bytes readers differ"
    records, errors = 0, []
    for item in items:
        outcome = parse_item(item, DEFAULTS, as_dicts=True)
        if outcome.error is not None:
            assert isinstance(outcome.error, ParseError) and outcome.error.reason, outcome.error
            errors.append(outcome.error)
            continue
        for record in outcome.records:
            plain.dumps(record)
            records += 1
    return len(items), records, errors


def _key(item) -> tuple:
    return item.location, item.raw, repr(item.value), str(item.error)
