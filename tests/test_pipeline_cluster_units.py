"""The pipeline's cluster plumbing without a cluster: what reaches a command line, where a job
resumes from, and the session cluster's configuration (loopback only, our ports)."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from pathwatch.stack.config import resolve
from pathwatch.stack.flink import cluster_settings
from pathwatch.streaming.flink_env import resume_point
from pathwatch.streaming.pipeline import submit_command
from pathwatch.streaming.settings import PipelineSettings, read_file, write_file

SECRET = "s3cr3t-Pa55"


def _settings(home: Path) -> PipelineSettings:
    return PipelineSettings(home=str(home), bootstrap="127.0.0.1:19092",
                            topics={"raw": "r", "records": "c", "anomalies": "a", "deadletters": "d"},
                            database_url=f"postgresql://pathwatch:{SECRET}@127.0.0.1:15433/pathwatch",
                            ordering_delay_s=900, checkpoint_interval_s=2, parallelism=2,
                            flink_address="127.0.0.1:18081")


def test_the_database_password_is_in_a_private_file_never_on_the_client_command_line(tmp_path):
    settings = _settings(tmp_path)
    path = write_file(settings)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_file(path) == settings
    restore = tmp_path / "flink" / "savepoints" / "detect" / "savepoint-1"
    for job in ("normalise", "detect", "store"):
        command = submit_command(settings, job, path, restore)
        assert not any(SECRET in part for part in command), command
        assert command[command.index("--python") + 1].endswith(f"{job}_job.py")
        assert command[command.index("-m") + 1] == "127.0.0.1:18081"
        assert command[-1] == str(path) and command[command.index("--fromSavepoint") + 1] == str(restore)


def test_only_store_and_detect_may_drop_state_of_an_older_graph_when_they_resume(tmp_path):
    # The store job needs no state (the database deduplicates); the detect job only its older
    # source's offsets (the consumer group has them). The normalise job's exactly-once
    # transactions must never be dropped; detector state keeps its operator id (the rescale test
    # in tests/test_pipeline_integration.py restores it and compares with pathwatch detect).
    settings = _settings(tmp_path)
    path = write_file(settings)
    restore = tmp_path / "savepoint-1"
    dropping = {job for job in ("normalise", "detect", "store")
                if "--allowNonRestoredState" in submit_command(settings, job, path, restore)}
    assert dropping == {"store", "detect"}
    assert "--allowNonRestoredState" not in submit_command(settings, "store", path, None)


def test_the_detect_job_reads_the_path_from_the_kafka_key_with_a_delay_interval_flink_parses(tmp_path):
    from pathwatch.streaming.kafka_tables import keyed_raw_source

    settings = _settings(tmp_path)   # ordering delay 900 s
    ddl = keyed_raw_source("records_in", "records", settings, "pathwatch-detect", settings.ordering_delay_s,
                           "pathwatch-records")
    assert "WATERMARK FOR rt AS rt - INTERVAL '0 00:15:00.000' DAY TO SECOND(3)" in ddl
    assert "'key.fields' = 'k'" in ddl and "'properties.group.id' = 'pathwatch-detect'" in ddl


def _point(folder: Path, age_s: float) -> Path:
    folder.mkdir(parents=True)
    meta = folder / "_metadata"
    meta.write_bytes(b"")
    then = time.time() - age_s
    os.utime(meta, (then, then))
    return folder


def test_a_job_resumes_from_the_newest_of_its_savepoints_and_retained_checkpoints(tmp_path):
    settings = _settings(tmp_path)
    assert resume_point(settings, "detect") is None
    old_savepoint = _point(tmp_path / "flink" / "savepoints" / "detect" / "savepoint-aa-1", 300)
    checkpoint = _point(tmp_path / "flink" / "checkpoints" / "detect" / "job1" / "chk-7", 100)
    (tmp_path / "flink" / "checkpoints" / "detect" / "job1" / "chk-8").mkdir()  # incomplete: no _metadata
    assert resume_point(settings, "detect") == checkpoint  # killed after its savepoint: the checkpoint is newer
    savepoint = _point(tmp_path / "flink" / "savepoints" / "detect" / "savepoint-bb-2", 10)
    assert resume_point(settings, "detect") == savepoint   # stopped since: the savepoint is newer
    assert resume_point(settings, "store") is None          # each job its own
    assert old_savepoint != savepoint


def test_the_session_cluster_binds_loopback_on_the_configured_ports(tmp_path):
    config = resolve(home=tmp_path, environ={"PATHWATCH_FLINK_UI_PORT": "28081", "PATHWATCH_FLINK_RPC_PORT": "26123"},
                     file_values={})
    values = cluster_settings(config, {"env": {"java": {"opts": {"all": "--add-opens=x"}}}})
    assert values["rest.port"] == 28081 and values["jobmanager.rpc.port"] == 26123
    for key in ("rest.address", "rest.bind-address", "jobmanager.rpc.address", "jobmanager.bind-host",
                "taskmanager.bind-host", "taskmanager.host"):
        assert values[key] == "127.0.0.1", key
    assert values["env.java.opts.all"] == "--add-opens=x"   # the distribution's JVM options kept
    assert values["web.submit.enable"] is False              # no jar uploads through the web UI
