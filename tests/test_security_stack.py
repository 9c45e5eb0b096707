"""SECURITY.md's defaults on the running test stack: loopback listeners, no secret in a command line or a log.

Uses the session's stream (tests/stack/streamed.py): the stack up with the pipeline's jobs
running in its Flink cluster. The processes checked are those of the pid files under the
home's ``run/`` and ``jobs/`` folders, the services' process groups and all descendants (PostgreSQL's
backends, gunicorn's workers, the JVMs under Flink's scripts); each listening TCP socket they
hold must be bound to 127.0.0.1 or ::1 (Flink's JVMs listen on IPv4-mapped ::ffff:127.0.0.1).
The secrets are the files of the home's ``secrets/`` folder.
"""

from __future__ import annotations

import pytest

from tests.stack import exposure

pytestmark = pytest.mark.stack


def test_every_listener_of_the_stack_and_pipeline_is_on_loopback(stream):
    home = stream["home"]
    roots = exposure.recorded_pids(home)
    assert len(roots) >= 5, f"expected kafka, timescaledb, superset and Flink's two processes in {home}/run"
    found = exposure.listeners(exposure.family(roots, exposure.recorded_groups(home)))
    ports = {listener.port for listener in found}
    settings = stream["settings"]
    assert int(settings.bootstrap.rsplit(":", 1)[1]) in ports, "the Kafka broker's socket was not found"
    assert int(settings.flink_address.rsplit(":", 1)[1]) in ports, "Flink's REST socket was not found"
    exposed = [listener for listener in found if not listener.loopback]
    assert not exposed, "listening beyond loopback:\n" + "\n".join(
        f"  {item.address}:{item.port} pid {item.pid} {item.command}" for item in exposed)


def test_no_process_has_a_secret_of_the_stack_on_its_command_line(stream):
    secrets = exposure.read_secrets(stream["home"])
    assert {"postgres-owner", "superset-admin"} <= set(secrets)
    found = exposure.command_lines_with(secrets)
    assert not found, "secrets on command lines (pid, secret, program): " + repr(found)


def test_no_log_of_the_stack_holds_a_secret(stream):
    """Logs persist across runs: a hit in a log written before the fix (the Superset admin's
    password on `superset fab create-admin --password`, pipeline settings on a job's command
    line) remains until that log is removed (rm -r HOME/logs, with the stack down)."""
    home = stream["home"]
    secrets = exposure.read_secrets(home)
    found = exposure.files_with(home / "logs", secrets)
    assert not found, "secrets in log files (file, secret): " + repr(found)
