"""The benchmarks' figures in one table: bench/results/*.json → bench/results/README.md.

Each results file is summarised by a function of its parsed JSON alone (no I/O, no clock), one
row per benchmark: its headline figures, its target and whether the run met it, and the commit
the file records, if any. An evaluation row gives the worst seed of each figure, as the bench
reports it. A file with no summariser, or one missing a field its summariser reads, still gets
a row that says so, so a new or changed bench shows up instead of vanishing.

    .venv/bin/python bench/report.py            # rewrite bench/results/README.md
    .venv/bin/python bench/report.py --check    # exit 1 if it is not what the JSON files give

>>> row = summarise("detect", {"per_s": 64459, "target_per_s": 100000, "meets_target": False,
...                            "hosts": 7, "days": 21, "seed": 7})
>>> row.headline, row.target
('64,459 observations/s through every detector (7 hosts × 21 days, seed 7)', '100,000/s: not met')
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

RESULTS = Path(__file__).resolve().parent / "results"
COMMAND = ".venv/bin/python bench/report.py"
# The table's order: quick offline benches first, then the ones on the test stack.
ORDER = ("parse", "fuzz", "detect", "evaluation", "evaluation-sparse", "real_series", "pipeline", "floor",
         "live", "faults", "soak", "lab", "pg_chunk_memory")


@dataclass(frozen=True)
class Row:
    """One benchmark's line of the table."""

    benchmark: str      # the results file's stem
    headline: str       # the figures a reader wants first
    target: str = "—"   # the target and whether this run met it
    recorded: str = "—"  # commit (and date) the file records


# -- formatting -------------------------------------------------------------------------------


def num(value: float, digits: int = 0) -> str:
    """A figure with thousands separators and ``digits`` decimals.

    >>> num(2704), num(0.34012, 2), num(923.8, 1)
    ('2,704', '0.34', '923.8')
    """
    return f"{value:,.{digits}f}"


def met(flag: bool | None) -> str:
    """Whether a target was met, in words.

    >>> met(True), met(False), met(None)
    ('met', 'not met', 'not judged')
    """
    return "not judged" if flag is None else ("met" if flag else "not met")


def field(data: dict, name: str) -> Any:
    """``data[name]``, else the value of a key that annotates or extends the name
    (``"down_s (fault → …)"``, ``"reconciled_by_id"``): files written by hand or by older
    benches name some figures so.

    >>> field({"outage_s (PostgreSQL and RT stopped)": 300}, "outage_s"), field({"reconciled_by_id": True}, "reconciled")
    (300, True)
    """
    if name in data:
        return data[name]
    for key, value in data.items():
        if key.startswith((name + " ", name + "_")):
            return value
    raise KeyError(name)


def duration(seconds: float) -> str:
    """A duration in the unit a reader thinks in.

    >>> duration(405177.4), duration(5400), duration(75)
    ('4.7 days', '1.5 h', '75 s')
    """
    if seconds >= 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds:.0f} s"


def recorded(data: dict) -> str:
    """The commit (and date) a results file records: ``code.head``, ``commit``, ``date``.

    >>> recorded({"code": {"head": "9f6b3ad", "uncommitted_code": ["x.py"]}}), recorded({})
    ('9f6b3ad + uncommitted changes', '—')
    """
    code = data.get("code") if isinstance(data.get("code"), dict) else {}
    parts = [str(p) for p in (code.get("head") or data.get("commit"), data.get("date")) if p]
    if not parts:
        return "—"
    return " ".join(parts) + (" + uncommitted changes" if code.get("uncommitted_code") else "")


# -- one summariser per results file ------------------------------------------------------------


def parse(data: dict) -> Row:
    rows = sorted(data["results"], key=lambda r: r["records_per_s"])
    slow, fast = rows[0], rows[-1]
    lean = [r["lean_us_per_record"] for r in data.get("normalise", {}).get("results", [])]
    headline = (f"{len(rows)} formats, one core: slowest {slow['format']} {num(slow['records_per_s'])} records/s, "
                f"fastest {fast['format']} {num(fast['records_per_s'])}/s")
    if lean:
        headline += f"; streaming normalise {min(lean):.0f}–{max(lean):.0f} µs of CPU a record"
    goal = data.get("target_records_per_s")
    below = [r["format"] for r in rows if goal and r["records_per_s"] < goal]
    target = "—" if not goal else (f"{num(goal)}/s per format: " +
                                   (f"not met ({', '.join(below)})" if below else "met"))
    return Row("parse", headline, target)


def fuzz(data: dict) -> Row:
    results = data["results"]
    records = sum(r["records"] for r in results)
    rejects = sum(r["rejects"] for r in results)
    headline = (f"{num(data['examples_per_format'])} mutated inputs × {len(results)} formats: "
                f"{num(records)} records, {num(rejects)} rejects, {data['crashes']} crashes")
    return Row("fuzz", headline, f"0 crashes: {met(data['crashes'] == 0)}")


def detect(data: dict) -> Row:
    headline = (f"{num(data['per_s'])} observations/s through every detector "
                f"({data['hosts']} hosts × {data['days']} days, seed {data['seed']})")
    return Row("detect", headline, f"{num(data['target_per_s'])}/s: {met(data['meets_target'])}")


def _worst(figure: dict, digits: int = 2) -> str:
    return f"{figure['value']:.{digits}f} (s{figure['seed']})"


def _value(target: dict) -> str:
    """A target's worst value in its unit (the name's last parenthesis: ``(s)``, ``(…, %)``)."""
    unit, worst = target["target"].partition(" (")[2], target["worst"]
    if unit.startswith("s)"):
        return duration(worst)
    return f"{worst:.2f} %" if "%" in unit else f"{worst:.2f}"


def missed_targets(missed: list[dict]) -> str:
    """The missed evaluation targets, one clause per target: the kind that missed it, or how many
    kinds did and the worst of them, with its value and seed.

    >>> missed_targets([
    ...     {"target": "F1 grouped >= 0.95", "kind": "a", "worst": 0.8, "seed": 1, "limit": 0.95},
    ...     {"target": "F1 grouped >= 0.95", "kind": "b", "worst": 0.67, "seed": 2, "limit": 0.95},
    ...     {"target": "diurnal saturation within 3 days (s)", "kind": "c", "worst": 405177.4, "seed": 3,
    ...      "limit": 259200.0}])
    'F1 grouped >= 0.95: 2 kinds, worst b 0.67 (s2); diurnal saturation within 3 days: c 4.7 days (s3)'
    """
    by_target: dict[str, list[dict]] = {}
    for target in missed:
        by_target.setdefault(target["target"], []).append(target)
    clauses = []
    for name, targets in by_target.items():
        # The worst is the one furthest on the wrong side of the limit.
        worst = max(targets, key=lambda t: abs(t["worst"] - t["limit"]))
        what = worst["kind"] if len(targets) == 1 else f"{len(targets)} kinds, worst {worst['kind']}"
        clauses.append(f"{name.partition(' (')[0]}: {what} {_value(worst)} (s{worst['seed']})")
    return "; ".join(clauses)


def evaluation(data: dict, name: str = "evaluation") -> Row:
    summary = data["summary"]
    labelled, benign = summary["labelled_worst"]["all"], summary["benign_only_worst"]["all"]
    seeds = f"{len(data['labelled_seeds'])} labelled + {len(data['benign_only_seeds'])} benign-only seeds"
    cadences = f", cadences {', '.join(data['cadences'])}" if data.get("cadences") else ""
    headline = (f"Worst seed, all kinds ({seeds}{cadences}): F1 grouped {_worst(labelled['f1_grouped'])}, "
                f"recall {_worst(labelled['recall'])}, false alarms per 100 path-days "
                f"{_worst(labelled['false_alarms_per_100_path_days_grouped'])} grouped / "
                f"{_worst(labelled['false_alarms_per_100_path_days_strict'])} strict; benign-only "
                f"{_worst(benign['false_alarms_per_100_path_days_grouped'])} / "
                f"{_worst(benign['false_alarms_per_100_path_days_strict'])}")
    missed = summary["targets_missed"]
    if summary.get("failed_seeds"):
        headline += f"; seeds that failed to run: {', '.join(map(str, summary['failed_seeds']))}"
    if not missed:
        target = f"all {len(summary['targets'])} met"
    else:
        target = f"{len(missed)} of {len(summary['targets'])} missed: {missed_targets(missed)}"
    return Row(name, headline, target, recorded(data))


def real_series(data: dict) -> Row:
    splits = data["splits"]
    first = next(iter(splits["tune"].values()))
    second = next(iter(splits["report"].values()))
    series, days = first["series"] + second["series"], first["series_days"] + second["series_days"]
    figures = "; ".join(f"{method} recall {'—' if worst['recall'] is None else num(worst['recall'], 2)}, "
                        f"{num(worst['unmatched_per_day'], 2)} unmatched/day" for method, worst in data["worst"].items())
    headline = (f"{series} real RTT series ({num(days)} series-days, labelled by hand), worse of tune/report "
                f"half: {figures}")
    return Row("real_series", headline, "—", recorded(data))


def pipeline(data: dict) -> Row:
    paced = field(data, "latency_s_paced")
    headline = (f"{num(data['end_to_end_records_per_s'])} records/s end to end "
                f"({num(data['input']['flood_messages'])} flooded), {data['ratio_to_raw_kafka_consume']} of raw "
                f"Kafka consume, {num(data['cpu_us_per_record_stored']['machine busy (all processes)'])} µs of "
                f"machine CPU a record; paced p50 {paced['p50']} s / p99 {paced['p99']} s")
    targets = data.get("verdict", {}).get("targets", {})
    parts = []
    for key, label in (("records_per_s", "records/s"), ("ratio_to_raw_kafka_consume", "× raw consume")):
        if key in targets:
            t = targets[key]
            parts.append(f"{num(t['target']) if t['target'] >= 1000 else t['target']} {label}: "
                         + ("met" if t["met"] else f"{t['short_by_factor']}× short"))
    return Row("pipeline", headline, "; ".join(parts) or "—")


def floor(data: dict) -> Row:
    cost = data["budget"]["machine_cpu_us_per_message"]
    order = ("sql_copy", "python_copy", "normalise", "detect", "store", "together")
    shapes = ", ".join(f"{shape} {cost[shape]}" for shape in order if shape in cost)
    together = data["shapes"].get("together")
    headline = f"µs of machine CPU a message: {shapes}"
    if together:
        headline += f" ({num(together['messages_per_s'])} messages/s)"
    budget = data["budget"]["machine_cpu_us_per_measurement_at_10k_per_s"]
    whole = cost.get("together")
    target = f"{budget:.0f} µs a message at 10k/s" + ("" if whole is None else f": {met(whole <= budget)}")
    return Row("floor", headline, target)


def live(data: dict) -> Row:
    overall = data["latency_s_publish_to_anomaly"]
    kinds = ", ".join(f"{kind} p50 {figures['p50']} s" for kind, figures in data["latency_s_by_kind"].items())
    headline = (f"{data['live_messages_per_s']} measurements/s for {data['input']['live_minutes']:g} min: "
                f"publish → anomaly p50 {overall['p50']} s, p99 {overall['p99']} s ({kinds})")
    goal = data["target"]
    target = f"p99 < {goal['p99_latency_s']} s at {num(goal['at_measurements_per_s'])}/s: {met(overall['p99'] < goal['p99_latency_s'])}"
    return Row("live", headline, target)


def faults(data: dict) -> Row:
    outcomes = data["faults"]
    reconciled = sum(bool(field(o, "reconciled")) for o in outcomes)
    down = [field(o, "down_s") for o in outcomes]
    caught = [field(o, "caught_up_s") for o in outcomes]
    source = data["input"]
    headline = (f"{len(outcomes)} faults at {num(source['rate_per_s'])} messages/s (kills {field(source, 'kill_down_s'):g} s, "
                f"outages {field(source, 'outage_s'):g} s): {reconciled} reconciled by id, down {min(down):g}–{max(down):g} s, "
                f"caught up {min(caught):g}–{max(caught):g} s after recovery")
    collector = data.get("kill_collector")
    if collector:
        headline += f"; collector kill: {collector['lost']} lost, {collector['duplicated']} doubled"
    ok = reconciled == len(outcomes) and (not collector or collector["lost"] == collector["duplicated"] == 0)
    status = str(data.get("status", ""))
    if status.startswith("partial"):
        target = f"nothing lost or doubled: {met(ok)} for each fault; end checks not run (partial run)"
    else:
        ends = [data.get("records_topic", {}).get("repeated") == 0 and data.get("records_topic", {}).get("missing") == 0,
                data.get("anomalies", {}).get("equal") is True]
        target = f"nothing lost or doubled: {met(ok and all(ends))}"
    return Row("faults", headline, target)


def soak(data: dict) -> Row:
    verdict, source = data["verdict"], data["input"]
    growth = verdict["memory_growth_pct"]
    worst = max(growth, key=growth.get)
    headline = (f"{num(source['rate_per_s'])} messages/s for {source['minutes']:g} min ({source['hosts']} hosts): "
                f"own memory +{growth[worst]} % at most ({worst}), lag peak {num(verdict['lag_max_before_last_fifth'])} "
                f"({num(verdict['lag_max_last_fifth'])} in the last fifth), "
                f"detect checkpoint ≤ {verdict['checkpoint_bytes_max']['detect'] / 1e6:.0f} MB")
    return Row("soak", headline, f"memory < 10 %, lag and checkpoints bounded: {met(data['passed'])}")


def lab(data: dict) -> Row:
    scenarios = data["scenarios"]
    headline = (f"{len(scenarios)} scenarios ({data['version']}, {data['factor']:g}×): {data['detected']} named, "
                f"{data['benign_false_alarms']} false alarms in benign runs, "
                f"{data['other_anomalies_in_fault_runs']} other anomalies in fault runs")
    passed = sum(bool(s.get("passed")) for s in scenarios)
    return Row("lab", headline, f"every scenario passes: {met(passed == len(scenarios))} ({passed} of {len(scenarios)})")


def pg_chunk_memory(data: dict) -> Row:
    headline = (f"a backend's own memory: +{data['kb_per_new_chunk']} kB per new chunk it writes into, "
                f"+{data['kb_over_the_last_three_rounds_into_known_chunks']} kB over three rounds into known chunks")
    return Row("pg_chunk_memory", headline)


SUMMARISERS: dict[str, Callable[[dict], Row]] = {
    "parse": parse, "fuzz": fuzz, "detect": detect, "evaluation": evaluation,
    "evaluation-sparse": lambda data: evaluation(data, "evaluation-sparse"), "real_series": real_series,
    "pipeline": pipeline,
    "floor": floor, "live": live, "faults": faults, "soak": soak, "lab": lab, "pg_chunk_memory": pg_chunk_memory,
}


def summarise(name: str, data: dict) -> Row:
    """The row of results file ``name`` (its stem); unknown or unreadable files say so."""
    if name not in SUMMARISERS:
        return Row(name, "no summary: add one to bench/report.py")
    try:
        return SUMMARISERS[name](data)
    except (KeyError, TypeError, ValueError, IndexError) as error:
        return Row(name, f"unreadable: {type(error).__name__} {error}")


def rows(results: dict[str, dict]) -> list[Row]:
    """One row per results file, in :data:`ORDER`, then any others by name."""
    names = [n for n in ORDER if n in results] + sorted(n for n in results if n not in ORDER)
    return [summarise(name, results[name]) for name in names]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(table: list[Row]) -> str:
    """The Markdown page: what it is, how it is made, the table."""
    lines = [
        "# Benchmark results",
        "",
        f"Generated by `{COMMAND}` from `bench/results/*.json`; do not edit, rerun it after a bench.",
        "What each benchmark measures and how to run it: `bench/README.md`. Each JSON file holds",
        "the full figures; an evaluation row gives each figure's worst seed (`s` + seed).",
        "",
        "| benchmark | headline | target | recorded |",
        "|---|---|---|---|",
    ]
    for row in table:
        lines.append(f"| [`{row.benchmark}`]({row.benchmark}.json) | {_cell(row.headline)} | "
                     f"{_cell(row.target)} | {_cell(row.recorded)} |")
    return "\n".join(lines) + "\n"


def load(folder: Path = RESULTS) -> dict[str, dict]:
    """Every ``*.json`` of ``folder`` by stem."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of the *.json results")
    parser.add_argument("--check", action="store_true", help="only compare with the README; exit 1 if it differs")
    args = parser.parse_args(argv)
    page = render(rows(load(args.results)))
    out = args.results / "README.md"
    if args.check:
        current = out.read_text() if out.exists() else ""
        if current != page:
            print(f"{out} is out of date: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    out.write_text(page)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
