"""pSConfig templates (collector/psconfig.py) read as meshes by `pathwatch collect --mesh` and `pathwatch db hosts`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pathwatch.db.hosts import read_hosts
from pathwatch.collector.collect_cli import register
from pathwatch.collector.mesh_config import MeshError, tasks_for
from pathwatch.collector.mesh_file import load_mesh

FIXTURE = Path(__file__).parent / "fixtures" / "psconfig" / "two-sites.json"
A, B, C = "ps-a.site-a.example.net", "ps-b.site-b.example.net", "ps-c.site-b.example.net"


def _template() -> dict:
    return json.loads(FIXTURE.read_text())


def _write(tmp_path: Path, template: dict) -> Path:
    path = tmp_path / "psconfig.json"
    path.write_text(json.dumps(template))
    return path


def test_addresses_groups_tasks_and_schedules_become_the_mesh():
    mesh = load_mesh(FIXTURE)
    assert mesh.name == "two-sites"
    assert {name: (h.address, h.site) for name, h in mesh.hosts.items()} == {
        A: ("127.0.0.1", "SITE-A"), B: ("127.0.0.2", "Site B University"), C: ("127.0.0.3", None)}  # disabled one left out
    tests = {t.name: t for t in mesh.tests}
    assert set(tests) == {"Throughput_A_to_B", "latency", "rtt", "paths"}  # the disabled task left out
    throughput = tests["Throughput_A_to_B"]
    assert (throughput.tool, throughput.interval, throughput.jitter) == ("iperf3", 4 * 3600, 2 * 3600)
    assert (throughput.options.duration, throughput.options.omit, throughput.options.streams,
            throughput.options.ip_version) == (20, 5, 2, 4)
    assert throughput.pairs == ((A, B), (A, C))  # disjoint, unidirectional
    latencybg = tests["latency"]
    assert (latencybg.tool, latencybg.options.count, latencybg.options.interval, latencybg.interval) == ("ping", 600, 0.1, 65)
    assert (tests["rtt"].options.count, tests["rtt"].options.interval, tests["rtt"].options.deadline) == (2, 0.2, 5)
    assert (tests["paths"].tool, tests["paths"].options.max_hops) == ("tracepath", 8)  # the first tool pathwatch runs
    assert sorted(t.key for t in tasks_for(mesh, B) if t.test.name == "rtt") == [f"rtt:{B}>{A}", f"rtt:{B}>{C}"]


@pytest.mark.parametrize("change, field, reason", [
    (lambda t: t["tasks"]["rtt"].update(group="nope"), "tasks.rtt.group", "unknown group 'nope'"),
    (lambda t: t["groups"]["all-latency"].update(type="list"), "groups.all-latency.type", "pairs"),
    (lambda t: t["groups"]["a-to-b"].update(excludes=[{"local-address": {"name": A}}]), "groups.a-to-b.excludes",
     "not supported"),
    (lambda t: t["tests"]["rtt"].update(type="dns"), "tests.rtt.type", "'dns'"),
    (lambda t: t["tasks"]["rtt"].pop("schedule"), "tasks.rtt.schedule", "needs a schedule"),
    (lambda t: t["tests"]["rtt"]["spec"].update(count=0), "tasks.rtt.options.count", "greater than or equal to 1"),
    (lambda t: t["tasks"]["paths"].update(tools=["paris-traceroute"]), "tasks.paths.tools", "trace tool"),
    (lambda t: t["schedules"]["every-10m"].update(repeat="soon"), "schedules.every-10m.repeat", "ISO 8601"),
    (lambda t: t["groups"]["a-to-b"]["b-addresses"].append({"name": "ghost"}), "groups.a-to-b.b-addresses[2].name",
     "unknown address 'ghost'"),
])
def test_what_cannot_be_used_is_refused_naming_the_psconfig_field(tmp_path, change, field, reason):
    template = copy.deepcopy(_template())
    change(template)
    path = _write(tmp_path, template)
    with pytest.raises(MeshError) as caught:
        load_mesh(path)
    assert caught.value.field == field and reason in caught.value.reason and str(path) in str(caught.value)


def test_db_hosts_reads_the_template_hosts_with_their_sites():
    rows = {row.name: (row.site, row.address) for row in read_hosts(FIXTURE)}
    assert rows == {A: ("SITE-A", "127.0.0.1"), B: ("Site B University", "127.0.0.2"), C: (C, "127.0.0.3")}


@pytest.mark.tools   # the real ping, on loopback
def test_collect_runs_a_template_task_with_the_real_tool(tmp_path):
    template = _template()
    template["tasks"] = {"rtt": template["tasks"]["rtt"]}
    path, out = _write(tmp_path, template), tmp_path / "out.jsonl"
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:
        pass

    result = CliRunner().invoke(app, ["collect", "--mesh", str(path), "--host", A, "--once", "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    envelopes = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((e["format"], e["destination"], e["meta"]["mesh"], e["meta"]["test"]) for e in envelopes) == [
        ("ping", B, "two-sites", "rtt"), ("ping", C, "two-sites", "rtt")]
    assert all("2 packets transmitted" in e["payload"] for e in envelopes)
