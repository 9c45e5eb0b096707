"""The mesh file, task expansion, scheduling with a fake clock, and the collector loop without tools."""

from __future__ import annotations

import io
import json
import random
import threading
import time
from pathlib import Path

import pytest
import typer
import yaml
from rich.console import Console
from typer.testing import CliRunner

from pathwatch.collector.collect import (TOOLS, Collector, Dispatcher, Due, Log, Schedule, ToolRun, outcome_of,
                                      timeout_of)
from pathwatch.collector.collect_cli import register
from pathwatch.collector.mesh_config import (MeshError, address_is_local, expand, find_local_host, mesh_from_data,
                                             seconds, tasks_for)
from pathwatch.collector.mesh_file import load_mesh
from pathwatch.ingest.parse import parse_value

EXAMPLE = Path(__file__).parent.parent / "collector" / "mesh.example.yaml"


def mesh_data(**changes) -> dict:
    data = {
        "name": "lab",
        "hosts": [{"name": "a", "address": "10.0.0.1", "site": "S1"}, {"name": "b", "address": "10.0.0.2"},
                  {"name": "c", "address": "10.0.0.3"}],
        "groups": {"all": {"type": "mesh", "hosts": ["a", "b", "c"]},
                   "out": {"type": "disjoint", "a": ["a"], "b": ["b", "c"]}},
        "tests": [
            {"name": "bw", "type": "throughput", "tool": "iperf3", "group": "all", "interval": "PT1H",
             "options": {"duration": 5}},
            {"name": "rtt", "type": "latency", "tool": "ping", "group": "all", "interval": 60, "jitter": 10},
            {"name": "path", "type": "trace", "tool": "tracepath", "group": "out", "interval": "PT10M"},
        ],
    }  # fmt: skip
    data.update(changes)
    return data


def write_mesh(tmp_path: Path, data) -> Path:
    path = tmp_path / "mesh.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


# --- loading ---


def test_the_example_mesh_loads_and_expands():
    mesh = load_mesh(EXAMPLE)
    assert mesh.name == "example-mesh"
    tasks = expand(mesh)
    assert len(tasks) == 3 * 6 + 2  # three tests over the 3-host mesh, one over a unidirectional 1→2 group
    mine = tasks_for(mesh, "ps-a.example.edu")
    assert {task.source.name for task in mine} == {"ps-a.example.edu"}
    assert len(mine) == 8


def test_the_name_defaults_to_the_file_stem(tmp_path):
    data = mesh_data()
    del data["name"]
    assert load_mesh(write_mesh(tmp_path, data)).name == "mesh"


def test_durations_are_iso_8601_or_seconds():
    assert seconds("PT4H") == 14400.0 and seconds("P1D") == 86400.0 and seconds(30) == 30.0 and seconds("0.5") == 0.5
    for bad in ("P1M", "soon", True, -5, [1]):
        with pytest.raises(ValueError):
            seconds(bad)


def _broken(data_change) -> dict:
    data = mesh_data()
    data_change(data)
    return data


@pytest.mark.parametrize(
    "change, where, reason",
    [
        (lambda d: d["tests"][2].update(interval="every hour"), "tests[2].interval", "ISO 8601 duration"),
        (lambda d: d["tests"][1].update(interval=0), "tests[1].interval", "greater than 0"),
        (lambda d: d["tests"][0].update(interval="P1M"), "tests[0].interval", "use days"),
        (lambda d: d["tests"][1].update(jitter=60), "tests[1].jitter", "shorter than the interval"),
        (lambda d: d["tests"][0].update(tool="ping"), "tests[0].tool", "a throughput test runs iperf3"),
        (lambda d: d["tests"][0].update(tool="nc"), "tests[0].tool", "Input should be"),
        (lambda d: d["tests"][0].update(group="nope"), "tests[0].group", "unknown group 'nope'"),
        (lambda d: d["tests"][0]["options"].update(durration=5), "tests[0].options.durration", "unknown field"),
        (lambda d: d["tests"][1].update(options={"count": 0}), "tests[1].options.count", "greater than or equal to 1"),
        (lambda d: d["tests"][1].update(options={"timeout": "ten"}), "tests[1].options.timeout", "ISO 8601"),
        (lambda d: d["tests"].append(dict(d["tests"][0])), "tests[3].name", "defined twice"),
        (lambda d: d["tests"][0].pop("type"), "tests[0].type", "missing"),
        (lambda d: d["hosts"][0].update(port=1), "hosts[0].port", "unknown field"),
        (lambda d: d["hosts"][1].update(name="b c"), "hosts[1].name", "pattern"),
        (lambda d: d["hosts"].append({"name": "a", "address": "x"}), "hosts[3].name", "defined twice"),
        (lambda d: d["groups"]["all"]["hosts"].append("zz"), "groups.all.hosts[3]", "unknown host 'zz'"),
        (lambda d: d["groups"]["all"]["hosts"].append("a"), "groups.all.hosts[3]", "listed twice"),
        (lambda d: d["groups"]["all"].update(hosts=["a"]), "groups.all.hosts", "at least 2 hosts"),
        (lambda d: d["groups"]["out"].update(hosts=["a"]), "groups.out.hosts", "'a' and 'b'"),
        (lambda d: d["groups"]["out"].pop("b"), "groups.out.b", "missing"),
        (lambda d: d["groups"]["all"].update(type="star"), "groups.all.type", "Input should be"),
    ],
)
def test_errors_name_the_file_and_the_field(tmp_path, change, where, reason):
    path = write_mesh(tmp_path, _broken(change))
    with pytest.raises(MeshError) as raised:
        load_mesh(path)
    assert raised.value.field == where
    assert reason in raised.value.reason
    assert str(raised.value).startswith(f"{path}: {where}: ")


def test_unreadable_and_malformed_files_are_named(tmp_path):
    with pytest.raises(MeshError, match=r"missing\.yaml: cannot read"):
        load_mesh(tmp_path / "missing.yaml")
    with pytest.raises(MeshError, match=r"mesh\.yaml: line \d+: not YAML"):
        load_mesh(write_mesh(tmp_path, "hosts:\n  - {name: a\n"))
    with pytest.raises(MeshError, match=r"mesh\.yaml: a mesh file is a mapping"):
        load_mesh(write_mesh(tmp_path, "- a\n- b\n"))


# --- expansion ---


def test_a_mesh_group_is_every_ordered_pair_and_disjoint_goes_both_ways():
    mesh = mesh_from_data(mesh_data())
    pairs = {test.name: test.pairs for test in mesh.tests}
    assert pairs["bw"] == (("a", "b"), ("a", "c"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "b"))
    assert pairs["path"] == (("a", "b"), ("a", "c"), ("b", "a"), ("c", "a"))


def test_a_unidirectional_disjoint_group_goes_a_to_b_only_and_never_to_itself():
    data = mesh_data()
    data["groups"]["out"] = {"type": "disjoint", "a": ["a", "b"], "b": ["b", "c"], "unidirectional": True}
    mesh = mesh_from_data(data)
    assert mesh.tests[2].pairs == (("a", "b"), ("a", "c"), ("b", "c"))


def test_a_collector_runs_only_the_tasks_its_host_is_the_source_of():
    mesh = mesh_from_data(mesh_data())
    assert [task.key for task in tasks_for(mesh, "b")] == ["bw:b>a", "bw:b>c", "rtt:b>a", "rtt:b>c", "path:b>a"]
    with pytest.raises(MeshError, match=r"--host: 'z' is not a host of mesh 'lab'"):
        tasks_for(mesh, "z")


def test_the_local_host_is_the_one_whose_address_is_this_machines():
    mesh = mesh_from_data(mesh_data())
    assert find_local_host(mesh, lambda address: address == "10.0.0.3") == "c"
    with pytest.raises(MeshError, match="no host of mesh 'lab'"):
        find_local_host(mesh, lambda address: False)
    with pytest.raises(MeshError, match=r"several hosts .* \(a, b, c\)"):
        find_local_host(mesh, lambda address: True)
    assert address_is_local("127.0.0.1")
    assert not address_is_local("203.0.113.77")
    assert not address_is_local("no-such-host.invalid")


# --- scheduling with a fake clock ---


def _tasks(**changes):
    return expand(mesh_from_data(mesh_data(**changes)))


def test_first_runs_start_within_the_jitter_and_stay_on_the_grid():
    tasks = [task for task in _tasks() if task.test.name == "rtt"]  # interval 60, jitter 10
    schedule = Schedule(tasks, start=1000.0, rng=random.Random(3))
    firsts = {due.task.key: due.at for due in schedule.pop_due(1010.0)}
    assert set(firsts) == {task.key for task in tasks}
    assert all(1000.0 <= at <= 1010.0 for at in firsts.values())
    assert len(set(firsts.values())) > 1  # spread, not all at once
    nexts = [due.at for due in schedule.pop_due(1070.0)]
    assert len(nexts) == len(tasks) and all(1060.0 <= at <= 1070.0 for at in nexts)
    assert 1120.0 <= schedule.next_time() <= 1130.0


def test_the_same_seed_gives_the_same_schedule():
    def times(seed):
        schedule = Schedule(_tasks(), start=0.0, rng=random.Random(seed))
        return [(due.task.key, due.at) for due in schedule.pop_due(100.0)]

    assert times(7) == times(7)


def test_slots_the_collector_fell_behind_on_are_skipped_and_counted():
    (task,) = [task for task in _tasks() if task.key == "bw:a>b"]  # every 3600 s
    schedule = Schedule([task], start=0.0, jitter=False)
    assert [(due.at, due.missed) for due in schedule.pop_due(0.0)] == [(0.0, 0)]
    assert schedule.pop_due(3599.0) == []
    (late,) = schedule.pop_due(3 * 3600.0 + 5)  # slept through slots 2 and 3
    assert (late.at, late.missed) == (3600.0, 2)
    assert schedule.next_time() == 4 * 3600.0


def test_once_runs_each_task_once_and_retries_come_on_top():
    tasks = _tasks()
    schedule = Schedule(tasks, start=50.0, repeat=False, jitter=False)
    assert len(schedule.pop_due(50.0)) == len(tasks) and schedule.pending == 0 and schedule.next_time() is None
    schedule.retry(tasks[0], at=80.0, attempt=1)
    assert schedule.pending == 1 and schedule.pop_due(79.0) == []
    (again,) = schedule.pop_due(80.0)
    assert again.task == tasks[0] and again.attempt == 1


def test_one_throughput_test_at_a_time_and_the_others_are_not_held_up():
    tasks = _tasks()
    throughput = [task for task in tasks if task.throughput]
    others = [task for task in tasks if not task.throughput]
    dispatcher = Dispatcher(workers=2)
    for task in throughput[:3] + others[:3]:
        assert dispatcher.offer(Due(task, 0.0))
    started = dispatcher.take()
    assert [due.task for due in started] == [throughput[0], others[0], others[1]]
    assert dispatcher.take() == []
    dispatcher.done(others[0])
    assert [due.task for due in dispatcher.take()] == [others[2]]
    dispatcher.done(throughput[0])
    assert [due.task for due in dispatcher.take()] == [throughput[1]]
    assert not dispatcher.offer(Due(throughput[1], 1.0))  # already running: not queued twice
    with pytest.raises(ValueError):
        Dispatcher(workers=0)


# --- tools and outcomes (no subprocesses) ---


def _task(key: str):
    return next(task for task in _tasks() if task.key == key)


def test_command_lines_and_default_timeouts():
    task = _task("bw:a>b")
    assert TOOLS["iperf3"].argv(task.test.options, "10.0.0.2") == [
        "-c", "10.0.0.2", "-J", "-t", "5", "--connect-timeout", "5000"]  # fmt: skip
    assert timeout_of(task) == 5 + 0 + 5 + 15
    data = mesh_data()
    data["tests"][0]["options"] = {"duration": 2, "port": 5999, "reverse": True, "streams": 2, "protocol": "udp",
                                   "bandwidth": "50M", "ip_version": 6, "timeout": 9}  # fmt: skip
    (task, *_) = expand(mesh_from_data(data))
    assert TOOLS["iperf3"].argv(task.test.options, "h") == [
        "-6", "-c", "h", "-J", "-t", "2", "-p", "5999", "-u", "-b", "50M", "-P", "2", "-R", "--connect-timeout", "5000"]
    assert timeout_of(task) == 9
    path = _task("path:a>b")
    assert TOOLS["tracepath"].argv(path.test.options, "10.0.0.2") == ["-n", "-m", "30", "10.0.0.2"]


def _run(task, stdout="", **fields) -> ToolRun:
    return ToolRun(("tool",), 1714572000.0, 1714572002.0, timeout_of(task), stdout=stdout, **fields)


def test_a_timeout_without_usable_output_is_a_failed_run_where_the_format_can_say_so():
    task = _task("bw:a>b")
    outcome = outcome_of(task, _run(task, returncode=-9, timed_out=True), "lab")
    (envelope,) = outcome.envelopes
    assert envelope["meta"]["collector_error"] == "timeout" and envelope["meta"]["mesh"] == "lab"
    (record,) = parse_value(envelope)[1]
    assert not record.succeeded and "timed out after 25 s" in record.error
    assert (record.source, record.destination) == ("a", "b")
    assert outcome.failed_run and "timed out after 25 s" in outcome.problem


def test_trace_formats_that_cannot_say_a_run_failed_get_a_log_line_only():
    data = mesh_data()
    data["tests"][2]["tool"] = "traceroute"
    task = expand(mesh_from_data(data))[-1]
    outcome = outcome_of(task, _run(task, timed_out=True), "lab")
    assert outcome.envelopes == [] and "timed out" in outcome.problem and "cannot say a run failed" in outcome.problem


def test_a_missing_tool_is_a_failed_run_record_for_ping():
    task = _task("rtt:a>b")
    outcome = outcome_of(task, _run(task, missing="ping not found on PATH"), "lab")
    (envelope,) = outcome.envelopes
    assert envelope["meta"]["collector_error"] == "tool_missing"
    (record,) = parse_value(envelope)[1]
    assert not record.succeeded and "ping not found" in record.error


def test_output_that_does_not_parse_is_published_and_said():
    task = _task("path:a>b")
    outcome = outcome_of(task, _run(task, stdout="garbage\n", returncode=0), "lab")
    assert len(outcome.envelopes) == 1 and "does not parse as tracepath" in outcome.problem


def test_iperf3s_busy_server_is_noticed():
    task = _task("bw:a>b")
    busy = '{"start": {"connected": []}, "intervals": [], "end": {}, "error": "the server is busy running a test. try again later"}'
    assert outcome_of(task, _run(task, stdout=busy, returncode=1), "lab").busy


# --- the collector loop with a fake tool ---

PING_OK = """PING {ip} ({ip}) 56(84) bytes of data.
64 bytes from {ip}: icmp_seq=1 ttl=64 time=0.040 ms

--- {ip} ping statistics ---
1 packets transmitted, 1 received, 0% packet loss, time 0ms
rtt min/avg/max/mdev = 0.040/0.040/0.040/0.000 ms
"""
IPERF3_BUSY = {"start": {"connected": []}, "intervals": [], "end": {},
               "error": "the server is busy running a test. try again later"}  # fmt: skip


class FakeTools:
    """Stands in for ``collect.execute``: tracks how many runs overlap, answers per tool."""

    def __init__(self, busy_first: int = 0, hold: float = 0.1):
        self.lock = threading.Lock()
        self.active = {"throughput": 0, "other": 0}
        self.peak = {"throughput": 0, "other": 0}
        self.busy_left, self.hold = busy_first, hold
        self.calls: list[str] = []

    def __call__(self, task, runner):
        lane = "throughput" if task.throughput else "other"
        with self.lock:
            self.calls.append(task.key)
            self.active[lane] += 1
            self.peak[lane] = max(self.peak[lane], self.active[lane])
        time.sleep(self.hold)
        with self.lock:
            self.active[lane] -= 1
        now = time.time()
        if task.test.tool == "ping":
            return ToolRun(("ping",), now - 1, now, 20, 0, PING_OK.format(ip=task.destination.address))
        if task.test.tool == "iperf3" and self.busy_left:
            self.busy_left -= 1
            return ToolRun(("iperf3",), now - 1, now, 20, 1, json.dumps(IPERF3_BUSY))
        return ToolRun((task.test.tool,), now, now, 20, missing=f"{task.test.tool} not found on PATH")


def _collector(tasks, fake, **kwargs):
    emitted: list[dict] = []
    stream = io.StringIO()
    collector = Collector("lab", tasks, emitted.append, Log(Console(file=stream, width=300)),
                          execute=fake, busy_delay=(0.0, 0.0), **kwargs)  # fmt: skip
    return collector, emitted, stream


def test_the_collector_runs_throughput_tests_one_at_a_time_and_others_in_a_bounded_pool():
    tasks = _tasks()
    fake = FakeTools()
    collector, emitted, stream = _collector(tasks, fake, workers=2)
    summary = collector.run(once=True)
    assert sorted(fake.calls) == sorted(task.key for task in tasks)
    assert fake.peak["throughput"] == 1 and fake.peak["other"] == 2
    log = stream.getvalue()
    # ping runs give records; iperf3 "missing" gives failed-run records, tracepath's too; said once per tool
    assert log.count("iperf3 not found on PATH: install it") == 1 and log.count("tracepath not found") == 1
    assert summary.runs == len(tasks) and summary.envelopes == len(emitted) == len(tasks)
    for envelope in emitted:
        (record,) = parse_value(envelope)[1]
        assert (record.source, record.destination) == (envelope["source"], envelope["destination"])
        assert record.succeeded == (envelope["format"] == "ping")


def test_a_busy_iperf3_server_is_retried_and_only_the_last_attempt_published():
    data = mesh_data(tests=[mesh_data()["tests"][0]])
    (task,) = expand(mesh_from_data(data))[:1]
    fake = FakeTools(busy_first=1, hold=0.0)
    collector, emitted, stream = _collector([task], fake)
    collector.run(once=True)
    assert fake.calls == [task.key, task.key]
    assert len(emitted) == 1 and "retry 1 of 2" in stream.getvalue()


def test_stop_ends_a_repeating_collector():
    fake = FakeTools(hold=0.0)
    collector, emitted, stream = _collector([_task("path:a>b")], fake)  # no jitter: runs at once
    timer = threading.Timer(0.3, collector.stop)
    timer.start()
    started = time.monotonic()
    summary = collector.run(once=False)
    assert time.monotonic() - started < 3
    assert summary.stopped and summary.runs == 1 and "stopping" in stream.getvalue()


# --- the command without tools ---


def _cli(*args, env=None):
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:  # keep `collect` a sub-command, as in pathwatch's CLI
        pass

    return CliRunner().invoke(app, ["collect", *args], env=env)


def test_the_command_names_the_file_and_field_of_a_bad_mesh(tmp_path):
    path = write_mesh(tmp_path, _broken(lambda d: d["tests"][2].update(interval="x")))
    result = _cli("--mesh", str(path), "--host", "a", "--once", "--out", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 2
    assert f"{path}: tests[2].interval: not a number of seconds" in result.stderr


def test_the_command_refuses_an_unknown_host_and_conflicting_sinks(tmp_path):
    path = write_mesh(tmp_path, mesh_data())
    result = _cli("--mesh", str(path), "--host", "z", "--once", "--out", "-")
    assert result.exit_code == 2 and "'z' is not a host of mesh 'lab'" in result.stderr
    result = _cli("--mesh", str(path), "--host", "a", "--out", "-", "--bootstrap", "k:9092")
    assert result.exit_code == 2 and "exclude each other" in result.stderr


def test_the_command_help_points_at_the_example():
    result = _cli("--help")
    assert result.exit_code == 0 and "mesh.example.yaml" in result.output

