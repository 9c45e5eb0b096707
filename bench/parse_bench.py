"""Parser throughput per format: records/s on one core, written to bench/results/parse.json.

Each format's bundled example envelopes are repeated (each copy with its own collection time)
until there are --records inputs, then read, parsed and serialised to JSON exactly as
`pathwatch parse` does (the lean path: records as JSON-ready dicts, written by orjson).

The ``normalise`` section is the streaming step's cost: CPU µs per record of
`pathwatch.streaming.normalise.normalise` with each envelope its own message, on the lean path it
takes, beside the validated path it replaced (pydantic models built, then ``model_dump(mode="json")``),
the two runs taken in turn on the same messages.

Time is the process's CPU time, best of --repeat runs: the machine is shared, and wall-clock time
there measures the neighbours as much as the parsers. Run it with `./run bench`; compare the
JSON across commits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import orjson
from rich.console import Console
from rich.progress import track
from rich.table import Table

from pathwatch.contract import plain
from pathwatch.ingest import registry
from pathwatch.ingest.examples import example_path
from pathwatch.ingest.parse import Defaults, parse_item
from pathwatch.ingest.reader import read_items
from pathwatch.contract.keys import path_key
from pathwatch.models.observe import epoch
from pathwatch.streaming.normalise import DEAD, RECORD, Origin, Output, dead_letter, normalise, nul_field, oversized_integer

TARGET_PER_S = 20_000  # trace and latency records per second on one core (issue #2)


def corpus(fmt: registry.Format, count: int) -> bytes:
    """``count`` envelope lines of the format's examples, each with a distinct collection time."""
    envelopes = [orjson.loads(line) for line in example_path(fmt).read_bytes().splitlines() if line.strip()]
    lines = []
    for index in range(count):
        envelope = dict(envelopes[index % len(envelopes)])
        envelope["collected_at"] = f"2024-01-01T{(index // 3600) % 24:02d}:{(index // 60) % 60:02d}:{index % 60:02d}Z"
        lines.append(orjson.dumps(envelope))
    return b"\n".join(lines) + b"\n"


def measure(data: bytes) -> tuple[int, int, float]:
    """(records, rejected, CPU seconds) for reading, parsing and serialising ``data``."""
    records = rejected = 0
    started = time.process_time()
    for item in read_items(data):
        outcome = parse_item(item, as_dicts=True)
        if outcome.error is not None:
            rejected += 1
        for record in outcome.records:
            plain.dumps(record)
            records += 1
    return records, rejected, time.process_time() - started


def validated_normalise(body: bytes, origin: Origin, received_ms: int) -> list[Output]:
    """``normalise`` as it was before the lean path: record models, then ``model_dump(mode="json")``.

    The reference the ``normalise`` section compares with (``tests/test_lean_records.py`` checks
    the two give the same outputs).
    """
    records = []
    for item in read_items(body):
        outcome = parse_item(item, Defaults())
        where = f"{item.location}: " if item.location not in ("line 1", "input") else ""
        if outcome.error is not None:
            value = dead_letter(body, origin, received_ms, "normalise", where + outcome.error.reason,
                                outcome.error.field, outcome.format)
            return [Output(DEAD, value["id"], value, received_ms)]
        for model in outcome.records:
            data = model.model_dump(mode="json")
            field = oversized_integer(data)  # like normalise: no consumer holds an integer beyond 64 bits
            if field is not None:
                value = dead_letter(body, origin, received_ms, "normalise", f"{where}{field}: an integer beyond 64 bits",
                                    field, outcome.format)
                return [Output(DEAD, value["id"], value, received_ms)]
            field = nul_field(data)  # like normalise: PostgreSQL text holds no NUL
            if field is not None:
                value = dead_letter(body, origin, received_ms, "normalise",
                                    f"{where}{field}: a NUL character (not storable as text)", field, outcome.format)
                return [Output(DEAD, value["id"], value, received_ms)]
            records.append(Output(RECORD, path_key(data.get("source"), data.get("destination")), data,
                                  int(round(epoch(data["time"]) * 1000))))
    if not records:
        value = dead_letter(body, origin, received_ms, "normalise", "no measurement in this input (the tool output "
                            "holds no result)")
        return [Output(DEAD, value["id"], value, received_ms)]
    return records


def measure_normalise(step, messages: list[bytes]) -> tuple[int, float]:
    """(records, CPU seconds) for ``step`` over every message."""
    origin = Origin("pathwatch.raw", 0, 0)
    records = 0
    started = time.process_time()
    for offset, body in enumerate(messages):
        records += sum(out.target == RECORD for out in step(body, origin, offset))
    return records, time.process_time() - started


def normalise_result(fmt: registry.Format, messages: list[bytes], repeat: int) -> dict:
    """The lean and the validated normalise on the same messages, in turn, best of ``repeat`` each."""
    for step in (validated_normalise, normalise):  # warm-up: imports, caches
        measure_normalise(step, messages[: len(messages) // 20])
    seconds = {validated_normalise: float("inf"), normalise: float("inf")}
    records = {}
    for _ in range(repeat):
        for step in seconds:
            records[step], spent = measure_normalise(step, messages)
            seconds[step] = min(seconds[step], spent)
    if records[normalise] != records[validated_normalise]:
        raise SystemExit(f"{fmt.name}: the lean normalise gave {records[normalise]} records, the validated "
                         f"{records[validated_normalise]}")
    per_record = {step: seconds[step] / max(records[step], 1) * 1e6 for step in seconds}
    return {
        "format": fmt.name,
        "messages": len(messages),
        "records": records[normalise],
        "validated_us_per_record": round(per_record[validated_normalise], 1),
        "lean_us_per_record": round(per_record[normalise], 1),
        "saved_us_per_record": round(per_record[validated_normalise] - per_record[normalise], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000, help="inputs per format (default 20000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per format; the fastest counts (default 3)")
    parser.add_argument("--messages", type=int, default=5_000,
                        help="raw-topic messages per format for the normalise section (default 5000)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "parse.json")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as the target says
    results = []
    normalised = []
    for fmt in track(list(registry.formats().values()), description="benchmarking parsers", console=Console(stderr=True)):
        data = corpus(fmt, args.records)
        normalised.append(normalise_result(fmt, data.splitlines()[: args.messages], args.repeat))
        measure(data[: len(data) // 20])  # warm-up: imports, caches
        records, rejected, seconds = min((measure(data) for _ in range(args.repeat)), key=lambda run: run[2])
        results.append(
            {
                "format": fmt.name,
                "inputs": args.records,
                "records": records,
                "rejected": rejected,
                "seconds": round(seconds, 3),
                "records_per_s": round(records / seconds),
                "bytes_per_input": round(len(data) / args.records),
            }
        )
    report = {
        "benchmark": "parse",
        "target_records_per_s": TARGET_PER_S,
        "clock": f"process CPU time, best of {args.repeat}",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "results": results,
        "normalise": {
            "what": "CPU µs per record of streaming.normalise.normalise, one envelope a message: the lean path "
                    "(records as JSON-ready dicts) beside the validated path it replaced (models, then model_dump)",
            "results": normalised,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    table = Table(title=f"parse throughput, one core (target {TARGET_PER_S:,}/s for trace and latency)")
    for column in ("format", "records/s", "records", "rejected", "bytes/input"):
        table.add_column(column, justify="left" if column == "format" else "right")
    for row in results:
        table.add_row(row["format"], f"{row['records_per_s']:,}", str(row["records"]), str(row["rejected"]), str(row["bytes_per_input"]))
    Console().print(table)
    table = Table(title="normalise, CPU µs per record: validated path (models) vs lean path (dicts)")
    for column in ("format", "validated", "lean", "saved"):
        table.add_column(column, justify="left" if column == "format" else "right")
    for row in normalised:
        table.add_row(row["format"], f"{row['validated_us_per_record']:.1f}", f"{row['lean_us_per_record']:.1f}",
                      f"{row['saved_us_per_record']:.1f}")
    Console().print(table)
    Console().print(f"written to {args.out}")


if __name__ == "__main__":
    main()
