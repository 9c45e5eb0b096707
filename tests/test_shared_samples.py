"""Real tool outputs from public repositories, checked value by value against what the parsers make.

The samples the checks need are in the repository, ``tests/fixtures/real_samples/`` (``SOURCES.md``
there says where each came from and under which licence), so a plain clone runs every check.
An outside samples folder adds more: ``$PATHWATCH_SAMPLES``, or ``../shared/samples`` beside the
clone when present (``PATHWATCH_SAMPLES=`` set empty leaves it out). Its files that the repository
lacks go through the same checks; its copies of the repository's files must be identical.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pathwatch.contract.timefmt import from_epoch
from pathwatch.ingest.errors import ParseError

from .conftest import FIXTURES, parse_one
from .test_cli import run

IN_REPO = FIXTURES / "real_samples"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "samples"
IPERF3_IN_REPO = 4  # three TCP and one UDP, iperf 3.1.3 and 3.1.6


def outside_folder(environ=os.environ) -> Path | None:
    """The outside samples folder, if any: $PATHWATCH_SAMPLES (it must exist), else ../shared/samples when present."""
    named = environ.get("PATHWATCH_SAMPLES")
    if named is None:
        return SHARED if SHARED.is_dir() else None
    if not named:
        return None
    if not Path(named).is_dir():
        pytest.fail(f"PATHWATCH_SAMPLES={named} is not a folder "
                    "(unset it, or set it empty, to use the repository's samples only)")
    return Path(named)


def sample_files(folder: Path) -> dict[str, Path]:
    """Sample files under ``folder`` by relative path: JSON and JSON Lines (NAB's labels are not tool output)."""
    return {
        p.relative_to(folder).as_posix(): p
        for p in sorted(folder.rglob("*.json*"))
        if p.is_file() and "nab" not in p.relative_to(folder).parts
    }


def extras(outside: Path | None, folder: str | None = None, suffix: str | None = None) -> list[Path]:
    """The outside folder's sample files that the repository does not hold (optionally one folder's, one suffix)."""
    if outside is None:
        return []
    in_repo = sample_files(IN_REPO)
    return [
        path for name, path in sample_files(outside).items()
        if name not in in_repo
        and (folder is None or name.split("/")[0] == folder)
        and (suffix is None or path.suffix == suffix)
    ]


@pytest.fixture(scope="module")
def outside() -> Path | None:
    return outside_folder()


def test_in_repo_samples_are_complete_and_their_origins_written_down(outside):
    files = sample_files(IN_REPO)
    assert set(files) == {
        "iperf3/pscheduler_parser_fixture_0_TCP.json",
        "iperf3/pscheduler_parser_fixture_1_UDP.json",
        "iperf3/pscheduler_parser_fixture_2_TCP.json",
        "iperf3/pscheduler_parser_fixture_3_TCP.json",
        "pscheduler/archiver-input.json",
        "pscheduler/trace-result.json",
        "pscheduler/trace-task.json",
        "ripe_atlas/sagan_test_traceroutes.jsonl",
        "ripe_atlas/sagan_test_pings.jsonl",
    }
    sources = (IN_REPO / "SOURCES.md").read_text()
    for name in ("trace-result.json", "trace-task.json", "archiver-input.json", "pscheduler_parser_fixture_0_TCP.json",
                 "sagan_test_traceroutes.jsonl", "sagan_test_pings.jsonl", "Apache-2.0", "GPL-3.0"):
        assert name in sources, f"SOURCES.md does not name {name}"
    assert (IN_REPO / "licenses" / "Apache-2.0").read_text().lstrip().startswith("Apache License")
    assert "GNU GENERAL PUBLIC LICENSE" in (IN_REPO / "licenses" / "GPL-3.0").read_text()[:200]
    if outside is not None:
        for name, path in sample_files(outside).items():
            if name in files:
                assert path.read_bytes() == files[name].read_bytes(), f"{name} differs from {outside / name}"


def test_an_outside_folder_adds_its_other_files(tmp_path):
    (tmp_path / "iperf3").mkdir()
    (tmp_path / "iperf3" / "pscheduler_parser_fixture_1_UDP.json").write_text("{}")  # the repository has it
    (tmp_path / "iperf3" / "more.json").write_text("{}")
    (tmp_path / "nab").mkdir()
    (tmp_path / "nab" / "combined_labels.json").write_text("{}")  # not tool output
    assert extras(tmp_path) == extras(tmp_path, "iperf3", ".json") == [tmp_path / "iperf3" / "more.json"]
    assert extras(tmp_path, "ripe_atlas") == extras(None) == []
    assert outside_folder({"PATHWATCH_SAMPLES": str(tmp_path)}) == tmp_path
    assert outside_folder({"PATHWATCH_SAMPLES": ""}) is None
    with pytest.raises(pytest.fail.Exception, match="not a folder"):
        outside_folder({"PATHWATCH_SAMPLES": str(tmp_path / "missing")})


def test_iperf3_samples_values_equal_the_source(outside):
    files = sorted(IN_REPO.glob("iperf3/*.json"))
    assert len(files) == IPERF3_IN_REPO
    for path in files + extras(outside, "iperf3", ".json"):
        raw = json.loads(path.read_text())
        (rec,) = parse_one(raw)
        end = raw["end"]
        assert rec.time == from_epoch(raw["start"]["timestamp"]["timesecs"])
        assert rec.source == raw["start"]["connected"][0]["local_host"]
        assert rec.destination == raw["start"]["connecting_to"]["host"]
        assert rec.protocol == raw["start"]["test_start"]["protocol"].lower()
        assert len(rec.intervals) == len(raw["intervals"])
        assert [i.throughput_bps for i in rec.intervals] == [i["sum"]["bits_per_second"] for i in raw["intervals"]]
        if rec.protocol == "tcp":
            sender = end["streams"][0]["sender"]
            assert rec.throughput_bps == end["sum_sent"]["bits_per_second"]
            assert rec.receiver_throughput_bps == end["sum_received"]["bits_per_second"]
            assert rec.retransmits == end["sum_sent"]["retransmits"]
            assert rec.rtt_ms == pytest.approx(sender["mean_rtt"] / 1000)
            assert rec.rtt_min_ms == pytest.approx(sender["min_rtt"] / 1000)
            assert rec.tcp_window_bytes == sender["max_snd_cwnd"]
            assert rec.mss_bytes == raw["start"]["tcp_mss_default"]
            assert [i.rtt_ms for i in rec.intervals] == pytest.approx(
                [i["streams"][0]["rtt"] / 1000 for i in raw["intervals"]]
            )
        else:
            assert rec.throughput_bps == end["sum"]["bits_per_second"]
            assert rec.jitter_ms == end["sum"]["jitter_ms"]
            assert (rec.lost_packets, rec.sent_packets) == (end["sum"]["lost_packets"], end["sum"]["packets"])


def test_pscheduler_trace_result_hops_equal_the_source():
    raw = json.loads((IN_REPO / "pscheduler" / "trace-result.json").read_text())
    (rec,) = parse_one(raw, collected_at="2024-01-01T00:00:00Z")
    path = raw["paths"][0]
    assert [h.ip for h in rec.hops] == [h.get("ip") for h in path]
    assert [h.hostname for h in rec.hops] == [h.get("hostname") for h in path]
    assert [h.asn for h in rec.hops] == [h.get("as", {}).get("number") for h in path]
    assert rec.hops[1].rtt_ms == pytest.approx(1.5)  # "PT0.0015S"
    assert rec.hop_count == len(path)


def test_archiver_input_simplestream_is_rejected_naming_it():
    raw = json.loads((IN_REPO / "pscheduler" / "archiver-input.json").read_text())
    with pytest.raises(ParseError) as caught:
        parse_one(raw)
    assert "simplestream" in str(caught.value)


def _check_atlas_lines(path: Path) -> dict[int, set[str]]:
    path_ids: dict[int, set[str]] = {}
    for line in path.read_text().splitlines():
        raw = json.loads(line)
        (rec,) = parse_one(raw)
        assert rec.time == from_epoch(raw["timestamp"]) and rec.probe_id == raw["prb_id"]
        assert rec.source == f"atlas-probe-{raw['prb_id']}"  # the probe, whatever address it had that day
        assert [h.ttl for h in rec.hops] == [h["hop"] for h in raw["result"]]
        for hop, source_hop in zip(rec.hops, raw["result"]):
            answered = [r["from"] for r in source_hop.get("result", []) if "from" in r]
            assert hop.ip == (answered[0] if answered else None)
        path_ids.setdefault(rec.probe_id, set()).add(rec.path_id)
    return path_ids


def test_atlas_samples_parse_and_paths_change_over_time(outside):
    path_ids = _check_atlas_lines(IN_REPO / "ripe_atlas" / "sagan_test_traceroutes.jsonl")
    assert sum(map(len, path_ids.values())) > 2 and len(path_ids[426]) > 1 and len(path_ids[319]) > 1
    for path in extras(outside, "ripe_atlas", ".jsonl"):
        _check_atlas_lines(path)


def test_atlas_ping_samples_give_the_probes_own_summary():
    """Each result's packets and delays as Atlas summarised them (min/avg/max over the replies,
    duplicates left out; -1 where nothing came back), from every firmware era the samples span."""
    lines = (IN_REPO / "ripe_atlas" / "sagan_test_pings.jsonl").read_text().splitlines()
    eras = set()
    for line in lines:
        raw = json.loads(line)
        (rec,) = parse_one(raw)
        eras.add("strings" if isinstance(raw["sent"], str) else "summary" if "result" not in raw else "replies")
        assert (rec.kind, rec.one_way, rec.tool) == ("latency", False, "ripe-atlas")
        assert rec.source == f"atlas-probe-{raw['prb_id']}" and rec.time == from_epoch(raw["timestamp"])
        assert (rec.packets_sent, rec.packets_received) == (int(raw["sent"]), int(raw["rcvd"]))
        assert rec.duplicates == int(raw["dup"])
        for ours, theirs in ((rec.delay_min_ms, raw["min"]), (rec.delay_mean_ms, raw["avg"]), (rec.delay_max_ms, raw["max"])):
            theirs = float(theirs)
            assert ours is None if theirs == -1 else ours == pytest.approx(theirs, abs=1e-6)
    assert eras == {"strings", "summary", "replies"} and len(lines) == 15


def test_cli_over_every_sample(outside):
    files = sorted(str(p) for p in sample_files(IN_REPO).values())
    done = run("parse", "--keep-going", *files)
    assert done.returncode == 2
    errors = done.stderr.decode().splitlines()
    assert len(errors) == 2, errors  # the simplestream archiver input and the task without a result
    assert any("archiver-input.json" in e and "simplestream" in e for e in errors)
    assert any("trace-task.json" in e for e in errors)
    assert len(done.stdout.splitlines()) == 4 + 1 + 19 + 15
    for path in extras(outside):  # the outside folder's other files: each is records or errors naming it, never a crash
        done = run("parse", "--keep-going", str(path))
        errors = done.stderr.decode().splitlines()
        assert done.returncode in (0, 2), (path, errors)
        assert all(line.startswith(str(path)) for line in errors), errors
        records = [json.loads(line) for line in done.stdout.splitlines()]
        assert records or errors, path
        assert all(r["schema_version"] == 1 for r in records)
