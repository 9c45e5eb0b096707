"""The supervisor that starts the Flink TaskManager again after it stopped itself on a failure."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

SUPERVISE = [sys.executable, "-m", "pathwatch.stack.supervise"]


def test_a_failed_service_is_started_again_and_the_restart_counted(tmp_path):
    marker, restarts = tmp_path / "ran-once", tmp_path / "restarts.json"
    # Fails on its first run, succeeds on the second: the supervisor then exits with its status.
    script = f"if [ -e {marker} ]; then exit 0; fi; touch {marker}; exit 3"
    result = subprocess.run([*SUPERVISE, "--name", "svc", "--restarts", str(restarts), "--", "sh", "-c", script],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(restarts.read_text())["restarts"] == 1
    assert json.loads(restarts.read_text())["last_exit_code"] == 3
    assert "svc exited with status 3" in result.stdout


def test_sigterm_stops_the_service_and_is_not_followed_by_a_restart(tmp_path):
    restarts = tmp_path / "restarts.json"
    started = tmp_path / "started"
    supervisor = subprocess.Popen([*SUPERVISE, "--name", "svc", "--restarts", str(restarts), "--",
                                   "sh", "-c", f"echo x >> {started}; exec sleep 60"], start_new_session=True)
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    supervisor.send_signal(signal.SIGTERM)
    assert supervisor.wait(30) == 128 + signal.SIGTERM  # the service's own end: terminated
    assert started.read_text().count("x") == 1 and not restarts.exists()
