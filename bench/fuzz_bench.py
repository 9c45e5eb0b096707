"""Fuzz bench: --examples mutated real inputs per format (default 10,000) through what
`pathwatch parse` runs, written to bench/results/fuzz.json.

The inputs are tests/fuzz_inputs.py's (the seeds are each format's fixtures, mutated by byte
flips, truncation, duplicated lines, huge numbers, wrong types, unicode, garbled text lines, deep
nesting, repeated slices), drawn by hypothesis as tests/test_fuzz.py draws them. For each format:
inputs, items read from them (a JSON Lines input gives one per line: a mutated pretty-printed
document that no longer parses is read as JSON Lines, one reject per line), records, rejects by reason class (the reason with numbers and quoted values
blanked), crashes (any exception but a ParseError: must be 0; each is written to
bench/results/fuzz-crashes/ to become a regression test) and seconds (wall clock).

    nice .venv/bin/python bench/fuzz_bench.py [--examples 10000] [--formats ping traceroute]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import re
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests.fuzz_inputs import FORMATS, check, mutated, seeds  # noqa: E402

RESULTS = REPO / "bench" / "results"
CLASS_SPECIFICS = re.compile(r"'[^']*'|\"[^\"]*\"|(?<![A-Za-z])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?|\(got .*?\)")


def reason_class(reason: str) -> str:
    """The kind of a reject: its reason with the specifics blanked, cut to 90 characters.

    >>> reason_class("invalid JSON: unexpected character: line 1 column 5 (char 4)")
    'invalid JSON: unexpected character: line # column # (char #)'
    """
    return CLASS_SPECIFICS.sub(lambda m: "#" if m.group(0)[:1].isdigit() or m.group(0)[:1] == "-" else "…", reason)[:90]


def run_format(fmt: str, examples: int) -> dict:
    pool = seeds(fmt)
    stats = {"inputs": 0, "items": 0, "records": 0, "rejects": Counter(), "crashes": []}

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def one(data):
        raw = mutated(data, fmt, pool)
        stats["inputs"] += 1
        try:
            items, records, errors = check(raw)
        except Exception as error:  # a crash: what this bench is for
            stats["crashes"].append(_save_crash(fmt, raw, error))
            return
        stats["items"] += items
        stats["records"] += records
        stats["rejects"].update(reason_class(e.reason) for e in errors)

    started = time.perf_counter()
    one()
    seconds = time.perf_counter() - started
    rejects = stats["rejects"]
    return {"format": fmt, "seeds": len(pool), "inputs": stats["inputs"], "items": stats["items"], "records": stats["records"],
            "rejects": sum(rejects.values()), "crashes": len(stats["crashes"]), "seconds": round(seconds, 1),
            "rejects_by_reason": dict(rejects.most_common(25)),
            "other_reject_classes": max(0, len(rejects) - 25), "crash_files": stats["crashes"]}


def _save_crash(fmt: str, raw: bytes, error: Exception) -> str:
    folder = RESULTS / "fuzz-crashes"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{fmt}-{hashlib.sha1(raw).hexdigest()[:12]}"
    (folder / f"{name}.input").write_bytes(raw)
    (folder / f"{name}.txt").write_text("".join(traceback.format_exception(error)))
    return f"{name}: {type(error).__name__}: {str(error)[:200]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="mutated inputs per format")
    parser.add_argument("--formats", nargs="*", default=FORMATS)
    parser.add_argument("--out", type=Path, default=RESULTS / "fuzz.json")
    args = parser.parse_args()
    results = []
    for fmt in args.formats:
        result = run_format(fmt, args.examples)
        results.append(result)
        print(f"{fmt:11} {result['inputs']:6} inputs {result['records']:7} records {result['rejects']:6} rejects "
              f"{result['crashes']} crashes {result['seconds']:7.1f} s", flush=True)
    report = {"benchmark": "fuzz", "examples_per_format": args.examples, "python": platform.python_version(),
              "crashes": sum(r["crashes"] for r in results), "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}: {report['crashes']} crashes")
    if report["crashes"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
