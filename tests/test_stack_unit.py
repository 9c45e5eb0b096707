"""The stack's pure logic, without services: configuration, pid files and process groups, ports, jobs."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pathwatch.stack import config, jobs, procs
from pathwatch.stack.kafka import new_cluster_id, server_properties, topics


# --- configuration ---------------------------------------------------------------------------
def test_defaults_keep_clear_of_the_usual_ports(tmp_path):
    resolved = config.resolve(home=tmp_path, environ={})
    ports = {resolved.kafka_port, resolved.kafka_controller_port, resolved.postgres_port,
             resolved.superset_port, resolved.flink_ui_port}
    assert ports == {19092, 19093, 15433, 18088, 18081}
    assert resolved.database_url is None and resolved.kafka_bootstrap is None


def test_environment_beats_file_beats_default(tmp_path):
    (tmp_path / "pathwatch.toml").write_text("[kafka]\nport = 29092\ncontroller_port = 29093\n[superset]\nport = 28088\n")
    resolved = config.resolve(home=tmp_path, environ={"PATHWATCH_KAFKA_PORT": "39092"})
    assert (resolved.kafka_port, resolved.kafka_controller_port, resolved.superset_port) == (39092, 29093, 28088)
    assert resolved.postgres_port == 15433


def test_a_flag_of_stack_up_is_remembered_below_the_file_and_the_environment(tmp_path):
    assert config.resolve(home=tmp_path, environ={}).tickets_enabled == 0
    config.remember_flags(tmp_path, tickets_enabled=1)  # what `stack up --with-tickets` does
    assert config.resolve(home=tmp_path, environ={}).tickets_enabled == 1
    assert config.resolve(home=tmp_path, environ={"PATHWATCH_TICKETS_ENABLED": "0"}).tickets_enabled == 0
    (tmp_path / "pathwatch.toml").write_text("[tickets]\nenabled = 0\n")
    assert config.resolve(home=tmp_path, environ={}).tickets_enabled == 0
    (tmp_path / "pathwatch.toml").unlink()
    config.remember_flags(tmp_path, tickets_enabled=0)  # `stack up --without-tickets`
    assert config.resolve(home=tmp_path, environ={}).tickets_enabled == 0


def test_a_broken_flags_file_names_itself(tmp_path):
    (tmp_path / config.FLAGS_FILE).write_text("{not json")
    with pytest.raises(config.ConfigError, match=f"{tmp_path / config.FLAGS_FILE}: not JSON"):
        config.resolve(home=tmp_path, environ={})


def test_yaml_config_file_given_explicitly(tmp_path):
    path = tmp_path / "elsewhere.yaml"
    path.write_text("postgres:\n  port: 25433\ndatabase:\n  url: postgresql://u:p@db:5432/x\n")
    resolved = config.resolve(home=tmp_path, config_file=path, environ={})
    assert resolved.postgres_port == 25433
    assert resolved.database_url == "postgresql://u:p@db:5432/x"


def test_home_from_environment_and_config_file_from_home(tmp_path):
    (tmp_path / "pathwatch.toml").write_text("[flink]\nui_port = 28081\n")
    resolved = config.resolve(environ={"PATHWATCH_HOME": str(tmp_path)})
    assert resolved.home == tmp_path and resolved.flink_ui_port == 28081


def test_unknown_setting_names_the_known_ones(tmp_path):
    (tmp_path / "pathwatch.toml").write_text("[kafka]\nprot = 1\n")
    with pytest.raises(config.ConfigError, match=r"unknown setting 'prot' in \[kafka\].*kafka_port"):
        config.resolve(home=tmp_path, environ={})


def test_bad_port_names_its_origin(tmp_path):
    with pytest.raises(config.ConfigError, match="PATHWATCH_SUPERSET_PORT: superset_port = '99999'"):
        config.resolve(home=tmp_path, environ={"PATHWATCH_SUPERSET_PORT": "99999"})


def test_existing_services_from_environment(tmp_path):
    resolved = config.resolve(home=tmp_path, environ={"PATHWATCH_DATABASE_URL": "postgresql://a@b/c",
                                                      "PATHWATCH_KAFKA_BOOTSTRAP": "k1:9092,k2:9092"})
    assert resolved.database_url == "postgresql://a@b/c" and resolved.kafka_bootstrap == "k1:9092,k2:9092"


def test_server_properties_are_filled_and_bind_loopback(tmp_path):
    text = server_properties(19092, 19093, tmp_path / "data")
    assert "${" not in text
    assert "listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093" in text
    assert f"log.dirs={tmp_path / 'data'}" in text


def test_topics_have_partitions():
    wanted = topics()
    assert "pathwatch.raw" in wanted
    assert all(int(spec["partitions"]) >= 1 for spec in wanted.values())


# --- processes ---------------------------------------------------------------------------------
def _sleeper_with_child(tmp_path: Path) -> procs.ProcessRecord:
    """A service stand-in: a shell that starts a child and ignores nothing."""
    return procs.spawn("sleeper", ["sh", "-c", "sleep 300 & sleep 300; wait"], tmp_path / "run" / "sleeper.pid",
                       tmp_path / "logs" / "sleeper.log")


def test_spawn_records_pid_and_group_and_stop_ends_the_whole_group(tmp_path):
    record = _sleeper_with_child(tmp_path)
    pid_file = tmp_path / "run" / "sleeper.pid"
    assert procs.running(pid_file) == record and record.pgid == record.pid
    deadline = time.monotonic() + 5
    while len(procs.group_members(record.pgid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    members = procs.group_members(record.pgid)
    assert len(members) == 3  # sh and its two sleeps
    assert procs.stop("sleeper", pid_file, timeout=5) == record
    assert procs.group_members(record.pgid) == [] and not pid_file.exists()
    assert not any(Path(f"/proc/{pid}").exists() and procs._stat(pid)["state"] != "Z" for pid in members)


def test_stop_escalates_to_sigkill_when_the_signal_is_ignored(tmp_path):
    pid_file = tmp_path / "stubborn.pid"
    record = procs.spawn("stubborn", ["sh", "-c", "trap '' TERM; sleep 300"], pid_file, tmp_path / "stubborn.log")
    time.sleep(0.2)
    started = time.monotonic()
    procs.stop("stubborn", pid_file, timeout=1)
    assert time.monotonic() - started < 10
    assert not record.alive() and procs.group_members(record.pgid) == []


def test_a_reused_pid_is_not_ours(tmp_path):
    pid_file = tmp_path / "ghost.pid"
    mine = procs.record_of(os.getpid())
    procs.write_record(pid_file, procs.ProcessRecord(mine.pid, mine.pgid, mine.started + 1, ["ghost"]))
    assert procs.running(pid_file) is None and not pid_file.exists()
    assert procs.stop("ghost", pid_file) is None


def test_stop_without_pid_file_does_nothing(tmp_path):
    assert procs.stop("nothing", tmp_path / "none.pid") is None


def test_torn_pid_file_is_ignored(tmp_path):
    (tmp_path / "torn.pid").write_text('{"pid": ')
    assert procs.running(tmp_path / "torn.pid") is None


def test_port_in_use_names_the_owner():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert procs.port_listening(port) and procs.port_owner(port) == os.getpid()
        with pytest.raises(procs.ProcessError, match=rf"kafka: port {port} in use by pid {os.getpid()}"):
            procs.ensure_port_free("kafka", port)
    assert not procs.port_listening(port)
    procs.ensure_port_free("kafka", port)


def test_run_logged_failure_names_component_and_log_and_shows_the_steps_last_lines(tmp_path):
    log = tmp_path / "step.log"
    log.write_text("an earlier step's output\n")
    with pytest.raises(procs.ProcessError, match=rf"timescaledb: debootstrap failed \(exit 3\), see {log}") as failed:
        procs.run_logged("timescaledb", "debootstrap",
                         ["sh", "-c", "for n in $(seq 1 12); do echo line $n; done; echo broken >&2; exit 3"], log)
    shown = str(failed.value).splitlines()[1:]
    assert shown == [f"  | line {n}" for n in range(6, 13)] + ["  | broken"]
    assert "broken" in log.read_text()


def test_kafka_cluster_ids_never_start_with_a_dash_nor_are_reserved():
    draws = iter([b"\xf8" + bytes(15), bytes(16), (1).to_bytes(16, "big"), b"\x7f" * 16])
    assert new_cluster_id(lambda n: next(draws)) == "f39_f39_f39_f39_f39_fw"
    made = {new_cluster_id() for _ in range(2000)}
    assert len(made) == 2000 and not any(cid.startswith("-") for cid in made)
    assert all(len(cid) == 22 for cid in made)


# --- jobs registry ------------------------------------------------------------------------------
def test_jobs_register_list_and_drop_dead_ones(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        jobs.register("detect", pid=child.pid, home=tmp_path, topic="pathwatch.records")
        jobs.register("me", home=tmp_path)
        listed = {job.name: job for job in jobs.running_jobs(tmp_path)}
        assert set(listed) == {"detect", "me"}
        assert listed["detect"].pid == child.pid and listed["detect"].info == {"topic": "pathwatch.records"}
        with pytest.raises(RuntimeError, match=f"already running as pid {child.pid}"):
            jobs.register("detect", home=tmp_path)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert [job.name for job in jobs.running_jobs(tmp_path)] == ["me"]
    assert not (tmp_path / "jobs" / "detect.json").exists()
    jobs.unregister("me", home=tmp_path)
    assert jobs.running_jobs(tmp_path) == []


def test_job_file_is_json_with_the_process_start_time(tmp_path):
    jobs.register("ingest", home=tmp_path)
    data = json.loads((tmp_path / "jobs" / "ingest.json").read_text())
    assert data["pid"] == os.getpid() and data["process"]["started"] == procs.record_of(os.getpid()).started


def test_job_names_are_checked(tmp_path):
    with pytest.raises(ValueError, match="job name"):
        jobs.register("../escape", home=tmp_path)


def test_wipe_removes_ticket_data_even_when_tickets_are_off_now(tmp_path):
    """A stack once started --with-tickets and wiped without it must not keep old RT tickets."""
    from pathwatch.stack import manage
    from pathwatch.stack.alertmanager import Alertmanager
    from pathwatch.stack.rt import RequestTracker

    settings = config.resolve(home=tmp_path, environ={})
    assert not settings.tickets_enabled
    leftovers = [*RequestTracker(settings).data_paths(), *Alertmanager(settings).data_paths()]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("old")
    manage.down(settings, wipe=True)
    assert [path for path in leftovers if path.exists()] == []


def test_wipe_leaves_an_external_rt_alone(tmp_path):
    from pathwatch.stack.rt import RequestTracker

    settings = config.resolve(home=tmp_path, environ={"PATHWATCH_RT_URL": "http://rt.example:8080"})
    assert RequestTracker(settings).data_paths() == []


def test_flink_down_stops_taskmanagers_of_an_earlier_larger_setting(tmp_path):
    """Lowering flink.taskmanagers must not orphan the TaskManagers started under the old value."""
    from pathwatch.stack import procs
    from pathwatch.stack.config import resolve
    from pathwatch.stack.flink import Flink
    from pathwatch.stack.paths import Paths

    paths = Paths(tmp_path)
    paths.run.mkdir(parents=True, exist_ok=True)
    started = [procs.spawn(f"flink-{role}", ["sleep", "300"], paths.pid_file(f"flink-{role}"), tmp_path / f"{role}.log")
               for role in ("taskmanager", "taskmanager-2", "taskmanager-3")]
    flink = Flink(resolve(home=tmp_path, environ={}, file_values={"flink_taskmanagers": 1}))
    assert flink.roles == ("jobmanager", "taskmanager")
    flink.stop()
    time.sleep(0.2)
    assert [record.alive() for record in started] == [False, False, False]
    assert not list(paths.run.glob("flink-taskmanager*.pid"))
