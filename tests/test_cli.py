"""The pathwatch command line, run as a user runs it (a subprocess of the installed script)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES

PATHWATCH = str(Path(sys.executable).with_name("pathwatch"))
IPERF3 = FIXTURES / "iperf3" / "iperf3.12_tcp_single_loopback.json"


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run([PATHWATCH, *args], input=stdin, capture_output=True, env=env, timeout=60)


def test_parse_prints_json_lines_and_exits_0():
    done = run("parse", str(IPERF3))
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(records) == 1 and records[0]["kind"] == "throughput" and done.stderr == b""


def test_stdin_with_forced_format_and_defaults():
    envelope_free = IPERF3.read_bytes()
    done = run("parse", "--format", "iperf3", "--source", "a.example", "--destination", "b.example", "-", stdin=envelope_free)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["source"], record["destination"]) == ("a.example", "b.example")


def test_garbage_gives_exit_2_and_one_clear_line(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x00\xffnot a measurement\x13\n")
    done = run("parse", str(garbage))
    assert done.returncode == 2 and done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and str(garbage) in lines[0] and "Traceback" not in done.stderr.decode()


def test_rejections_name_file_line_and_field_and_keep_going_parses_the_rest(tmp_path):
    bad = tmp_path / "mixed.jsonl"
    good_line = json.dumps({"format": "iperf3", "source": "a", "destination": "b", "payload": json.loads(IPERF3.read_text())})
    broken = json.loads(IPERF3.read_text())
    broken["end"]["sum_sent"]["bits_per_second"] = "lots"
    bad_line = json.dumps({"format": "iperf3", "source": "a", "destination": "b", "payload": broken})
    bad.write_text("\n".join([bad_line, "{not json", good_line]) + "\n")

    stop_first = run("parse", str(bad))
    assert stop_first.returncode == 2 and stop_first.stdout == b""
    assert stop_first.stderr.decode().splitlines() == [
        f"{bad}, line 1, field end.sum_sent.bits_per_second: expected a number, got str"
    ]

    everything = run("parse", "--keep-going", str(bad))
    assert everything.returncode == 2
    errors = everything.stderr.decode().splitlines()
    assert len(errors) == 2 and errors[1].startswith(f"{bad}, line 2: invalid JSON")
    assert len(everything.stdout.splitlines()) == 1


def test_missing_file_is_rejected_not_a_traceback(tmp_path):
    done = run("parse", str(tmp_path / "nope.json"))
    assert done.returncode == 2 and b"cannot read" in done.stderr and b"Traceback" not in done.stderr


def test_unknown_format_option_is_refused():
    done = run("parse", "--format", "netflow", str(IPERF3))
    assert done.returncode == 2 and b"unknown format 'netflow'" in done.stderr


@pytest.mark.parametrize("command", [["--help"], ["parse", "--help"], ["formats"], ["schema"], ["version"]])
def test_informational_commands_succeed(command):
    done = run(*command)
    assert done.returncode == 0, done.stderr


def test_formats_lists_every_format_and_each_example_parses():
    listing = run("formats").stdout.decode()
    from pathwatch.ingest import registry

    for name in registry.formats():
        assert name in listing
        example = run("formats", "--example", name)
        assert example.returncode == 0 and example.stdout.strip()
        parsed = run("parse", "-", stdin=example.stdout)
        assert parsed.returncode == 0, (name, parsed.stderr)
        kinds = {json.loads(line)["format"] for line in parsed.stdout.splitlines()}
        assert kinds == {name}


def test_examples_shows_a_table_of_every_format():
    done = run("examples")
    assert done.returncode == 0, done.stderr
    from pathwatch.ingest import registry

    for name in registry.formats():
        assert name in done.stdout.decode()
