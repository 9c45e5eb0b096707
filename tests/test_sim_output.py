"""The simulator's files: every line parses, runs are byte-identical, options are checked."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from rich.console import Console

from pathwatch.ingest.files import parse_paths
from pathwatch.sim.command import run_simulate
from pathwatch.sim.config import SimConfig
from pathwatch.sim.generate import path_lines, plan
from pathwatch.sim.pathologies import KINDS


def _simulate(out, **options) -> tuple[int, str]:
    console = Console(record=True, width=120)
    settings = {"seed": 7, "hosts": 4, "days": 5, "start": None} | options
    code = run_simulate(out, console=console, **settings)
    return code, console.export_text()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim")
    code, text = _simulate(out)
    assert code == 0, text
    return out


def test_every_line_parses_without_rejects(small):
    records, rejects, formats = 0, [], Counter()
    for located in parse_paths([str(small / "raw.jsonl")]):
        outcome = located.outcome
        if outcome.error is not None:
            rejects.append((outcome.item.location, outcome.error.field, outcome.error.reason))
            continue
        formats[outcome.format] += 1
        records += len(outcome.records)
    assert rejects == []
    assert set(formats) == {"pscheduler", "tracepath", "iperf3"}
    assert records > 10_000


def test_lines_are_in_collection_order_and_labels_are_well_formed(small):
    times = [orjson.loads(line)["collected_at"] for line in (small / "raw.jsonl").read_bytes().splitlines()]
    assert times == sorted(times)
    labels = [orjson.loads(line) for line in (small / "labels.jsonl").read_bytes().splitlines()]
    assert labels and all(label["kind"] in KINDS for label in labels)
    for label in labels:
        assert label["start"].endswith("Z") and (label["end"] is None or label["end"] > label["start"])
    mesh = orjson.loads((small / "mesh.json").read_bytes())
    assert len(mesh["hosts"]) == 4 and len(mesh["paths"]) == 12 and mesh["seed"] == 7


def test_same_seed_same_bytes(small, tmp_path):
    code, _ = _simulate(tmp_path)
    assert code == 0
    for name in ("raw.jsonl", "labels.jsonl", "mesh.json"):
        assert (tmp_path / name).read_bytes() == (small / name).read_bytes(), name


def test_one_paths_lines_are_its_share_of_the_file(small):
    sim = plan(SimConfig(seed=7, hosts=4, days=5))
    path = sim.mesh.paths[5]
    mine = [line.data for line in path_lines(sim, *path.key)]
    wanted = [line for line in (small / "raw.jsonl").read_bytes().splitlines()
              if orjson.loads(line)["source"] == path.src.name and orjson.loads(line)["destination"] == path.dst.name]
    assert mine == wanted


def test_another_seed_other_bytes(small, tmp_path):
    assert _simulate(tmp_path, seed=8, days=1)[0] == 0
    assert (tmp_path / "labels.jsonl").read_bytes() != (small / "labels.jsonl").read_bytes()


@pytest.mark.parametrize("options, message", [
    ({"hosts": 2}, "--hosts"),
    ({"days": 0}, "--days"),
    ({"seed": -1}, "--seed"),
    ({"start": "yesterday"}, "--start"),
    ({"start": "2026-01-05T00:00:00"}, "--start"),
])
def test_bad_options_name_the_option(tmp_path, options, message):
    code, text = _simulate(tmp_path / "out", **options)
    assert code == 2 and message in text
    assert not (tmp_path / "out").exists()


def test_out_must_be_a_directory(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    code, text = _simulate(target, days=1)
    assert code == 2 and "--out" in text


def test_a_cadence_option_sets_how_often_a_test_runs(tmp_path):
    code, text = _simulate(tmp_path, days=4, cadences=["throughput_s=21600"])
    assert code == 0, text
    assert orjson.loads((tmp_path / "mesh.json").read_bytes())["cadences_s"]["throughput_s"] == 21600
    runs = Counter()
    for located in parse_paths([str(tmp_path / "raw.jsonl")]):
        for record in located.outcome.records:
            if record.kind == "throughput" and not record.reverse:
                runs[(record.source, record.destination)] += 1
    assert runs and max(runs.values()) <= 4 * 4 + 1       # 4 a day for 4 days, not 12 a day


@pytest.mark.parametrize("setting, message", [("throughput_s", "expected NAME=SECONDS"),
                                              ("ping_s=5", "no cadence ping_s"),
                                              ("trace_s=often", "expected a whole number of seconds"),
                                              ("trace_s=0", "cadence trace_s: expected a positive whole number")])
def test_a_bad_cadence_is_refused_naming_it(tmp_path, setting, message):
    code, text = _simulate(tmp_path, cadences=[setting])
    assert code == 2 and message in text and "--cadence" in text
